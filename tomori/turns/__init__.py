"""The turn: what a channel's lock runs, written once for the cog and the console alike.

- `request.py`  what a queued turn asks for (`TurnRequest`: how it was addressed, its
                personas, a scene, a `/respond`'s parts) and the one codec the lock store's
                JSON is read and written through; which prefill each answer begins with
                (`AnswerBrief.prefill_for`)
- `config.py`   what a channel's turn runs with: its model chain and their providers, its
                system prompt and prefill, as the environment and its admins set them
- `surface.py`  the channel as a turn sees it (`Surface`: its history read once, the ports
                the bot and each persona post through, typing, notices); the cog and the
                console each implement it
- `stage.py`    what every turn of a runtime runs with: the locks, stores, tools, health
- `turn.py`     `play`: the turn's preparation (errors before any model among it), then the
                bot's answer, the personas', or a scene's lines
- `ensemble.py` personas answering in turn, drawing each other in, and a scene's lines
- `commanded.py` a `/scene` or `/respond` asked for, checked before it is queued (the cog's
                and the console's)
- `cleared.py`  who hears that another's /kill cleared what they had waiting, and how
- `stopped.py`  the note a turn's model is given on the answers stops ended before it
- `takes.py`    regenerate and swipe as rules: the buttons' custom ids, who may press, which
                take a swipe shows, how an answer's messages come to show a take
- `take_store.py` each answer's takes in the database (migration 0020), frozen as the
                channel goes on
- `summaries.py` `Summaries`: the background folds of what fell out of a channel's window (one
                per channel at a time, each with its owner) and the note a turn is shown
- `retake.py`   a new take's turn: its context ends at the answered message, and it is written
                into the answer's own messages (`TakePort`)
"""

from tomori.turns.config import ChannelConfig, TurnConfig
from tomori.turns.request import DIRECTLY, PASSIVELY, Addressed, AnswerBrief, Respond, TurnRequest
from tomori.turns.stage import Stage
from tomori.turns.surface import BOT_VOICE, NOTHING_READ, Reading, Speaker, Surface, Voice
from tomori.turns.turn import play

__all__ = [
    "BOT_VOICE",
    "DIRECTLY",
    "NOTHING_READ",
    "PASSIVELY",
    "Addressed",
    "AnswerBrief",
    "ChannelConfig",
    "Reading",
    "Respond",
    "Speaker",
    "Stage",
    "Surface",
    "TurnConfig",
    "TurnRequest",
    "Voice",
    "play",
]
