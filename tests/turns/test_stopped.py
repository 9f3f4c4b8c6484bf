"""The note a turn's model is given on the answers stops ended before it (`tomori.turns.stopped`)
and the memory it is read from (`tomori.locks.stopped`); the cog's and the console's requests
are tests/cog/test_stopped_answers.py's and tests/console/test_console_interruptions.py's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tomori.locks.stopped import Stop, StoppedAnswer, StoppedAnswers
from tomori.providers.base import ContextItem
from tomori.turns.stopped import HEADER, QUOTED_CHARS, quote, stopped_notices
from tomori.turns.surface import BOT_VOICE, Voice


@dataclass
class Shown:
    """A reading that shows these messages, by ID, as the model reads them."""

    messages: Mapping[str, str]

    @property
    def notices(self) -> tuple[ContextItem, ...]:
        return ()

    def posted_by_us(self) -> Sequence[str]:
        return ()

    def context(self, system_prompt: str, voice: Voice = BOT_VOICE) -> tuple[ContextItem, ...]:
        return ()

    def quoted(self, message_id: str) -> str | None:
        return self.messages.get(message_id)

    def fallen_out(self) -> None:
        return None


def test_a_stop_whose_message_the_turn_does_not_show_is_left_out() -> None:
    reading = Shown({"1": "alice: first", "3": "alice: third"})
    stopped = [
        StoppedAnswer("1", Stop.STOPPED),
        StoppedAnswer("2", Stop.CLEARED),  # deleted since, or out of the history window
        StoppedAnswer("3", Stop.CLEARED),  # the turn's own message: it is answered now
    ]
    (note,) = stopped_notices(stopped, reading, trigger_id="3")
    assert note.text.splitlines() == [
        HEADER,
        '- Your answer to "alice: first" was stopped before it showed anything. Do not answer'
        " it unless someone asks again.",
    ]
    assert stopped_notices(stopped[1:], reading, trigger_id="3") == ()


def test_a_message_is_quoted_on_one_line_and_its_start_only() -> None:
    assert quote("alice: two\n  lines") == '"alice: two lines"'
    long = quote("alice: " + "word " * 50)
    assert len(long) == QUOTED_CHARS + 2
    assert long.endswith('…"')


def test_a_channel_keeps_its_latest_stops_until_an_answer_is_shown_there() -> None:
    memory = StoppedAnswers(per_channel=2, channels=2)
    for message in ("1", "2", "3"):
        memory.stopped("a", StoppedAnswer(message, Stop.CLEARED))
    assert [answer.message_id for answer in memory.of("a")] == ["2", "3"]
    memory.stopped("a", StoppedAnswer("2", Stop.STOPPED))  # the newest word on it stands
    assert memory.of("a")[-1] == StoppedAnswer("2", Stop.STOPPED)
    memory.stopped("b", StoppedAnswer("9", Stop.STOPPED))
    memory.stopped("c", StoppedAnswer("9", Stop.STOPPED))
    assert memory.of("a") == ()  # the channel stopped in longest ago is forgotten
    memory.answered("b")
    assert memory.of("b") == ()
    assert memory.of("c") != ()
