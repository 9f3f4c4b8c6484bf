"""Answering a turn: the model chain, the tool loop, and one provider pass under its timeout.

From the top down, each calling the next:
- `answering.py`   `answer_turn`: a turn's context answered into one channel (cog and console)
- `chain.py`       `run_chain`: the models tried in order, errors held back while one is pending
- `attempt.py`     one model's attempt, and the second try a failure may earn (images, 429,
                   a context overflow)
- `tool_loop.py`   `run_tool_loop`: stream, run the tools the model asks for, stream again
- `stream_once.py` `stream_once`: one provider pass under the rolling timeout, killable at once
- `provider_stream.py` the pass's generation task: the stream read, text to the writer
- `pass_timing.py` the pass's kill switch, rolling timer and delivery bound
And what they share:
- `state.py`       `TurnState`: the turn's mutable state (notices, delivered messages, hooks)
- `results.py`     how a pass ended (`StreamResult`), and what a turn reports (usage, outcome)
- `stoppable.py`   `until_stopped`: work of a turn that /kill stops at once
- `health.py`      which models are worth asking: a model that stalled is skipped (the rule)
- `contexts.py`    `ContextBook`: each model's context budget, and what its server taught it
"""

from tomori.generation.answering import answer_turn
from tomori.generation.chain import ChainResult, run_chain
from tomori.generation.results import StreamResult, StreamStatus, TimeoutPhase
from tomori.generation.state import TurnState
from tomori.generation.stoppable import Stopped, until_stopped
from tomori.generation.stream_once import stream_once
from tomori.generation.tool_loop import LoopResult, TurnEnvironment, run_tool_loop

__all__ = [
    "ChainResult",
    "LoopResult",
    "Stopped",
    "StreamResult",
    "StreamStatus",
    "TimeoutPhase",
    "TurnEnvironment",
    "TurnState",
    "answer_turn",
    "run_chain",
    "run_tool_loop",
    "stream_once",
    "until_stopped",
]
