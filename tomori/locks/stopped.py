"""What stops left unanswered in each channel, for the next turn's model to be told.

A stopped question stays in the channel's history. The model, shown it next to the next
message, would take it up again (a model re-ran a 30-second tool call its user had just
stopped), so each stop is remembered by the message whose answer it stopped or cleared: how
(`Stop`), whether some of the answer was shown, and the tool call it cut short. A channel's
stops are told to every turn there until an answer is shown that no stop cut (it was given
them), then forgotten.

This process's alone, as `tomori.policy.interruptions.Stops` is: a stop heard by another
process is not told here. Bounded: the newest `PER_CHANNEL` stops of the newest `CHANNELS`
channels.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from enum import StrEnum

PER_CHANNEL = 10
CHANNELS = 1_024


class Stop(StrEnum):
    """What became of a message's answer."""

    STOPPED = "stopped"
    """/kill (anyone's) or its asker's stop word stopped it."""
    FOLLOWED_UP = "followed up"
    """Its asker wrote again before it was finished: the next answer covers both."""
    CLEARED = "cleared"
    """/kill, or its asker's stop, took it off the queue before its answer began."""


@dataclass(frozen=True, slots=True)
class StoppedAnswer:
    """One message whose answer a stop ended or never let begin."""

    message_id: str
    stop: Stop
    shown: bool = False
    """Some of the answer was in the channel before the stop."""
    tool: str | None = None
    """The tool call the stop cut short (the model's own name for it), if any."""


class StoppedAnswers:
    """The stops of each channel since an answer was last shown there (see the module)."""

    def __init__(self, per_channel: int = PER_CHANNEL, channels: int = CHANNELS) -> None:
        self._per_channel = per_channel
        self._channels = channels
        self._stopped: OrderedDict[str, OrderedDict[str, StoppedAnswer]] = OrderedDict()

    def stopped(self, channel_id: str, answer: StoppedAnswer) -> None:
        kept = self._stopped.pop(channel_id, OrderedDict())
        kept.pop(answer.message_id, None)
        kept[answer.message_id] = answer
        while len(kept) > self._per_channel:
            kept.popitem(last=False)
        self._stopped[channel_id] = kept
        while len(self._stopped) > self._channels:
            self._stopped.popitem(last=False)

    def answered(self, channel_id: str) -> None:
        """An answer no stop cut was shown in the channel: its model was told what came
        before it, and the answer now stands after those questions."""
        self._stopped.pop(channel_id, None)

    def of(self, channel_id: str) -> tuple[StoppedAnswer, ...]:
        """The channel's stops still to tell, oldest first."""
        return tuple(self._stopped.get(channel_id, {}).values())
