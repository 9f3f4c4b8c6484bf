"""A turn's progress, shown on the message that asked for it: every rule of what shows when.

Theory of operation. A direct trigger goes through passing stages: QUEUED (it waits behind
another turn), WORKING (the turn has begun; a model is asked), TOOL (a tool runs); then it
ends DONE, FAILED or STOPPED. Each stage has one mark (`MARKS`), shown as the bot's reaction on
the trigger, one at a time. A mark is a request to Discord in a bucket it keeps tight (one
reaction a quarter second per channel), so:

- a passing stage shows only once it has lasted `SHOW_AFTER_S`: a turn answered within a
  second shows its answer and nothing else (no ⏳ or 💭 that vanishes as it lands, which reads
  as a flicker and costs two requests), and a 300 ms tool call never shows 🔧 over 💭;
- an ending shows at once and is final. DONE removes the mark: the answer itself says the
  message was answered, and a ✅ under every message would be noise in a busy channel (and a
  request per turn). FAILED and STOPPED leave theirs: the channel shows nothing else of them
  when the server's errors setting is `react`, and a stopped answer looks like a cut one. A
  turn replaced by a follow-up ends DONE: the next answer covers its question;
- which stages show at all is the server's two settings (`Visibility`): progress `off` shows
  none but, with errors `react`, the failed mark; errors `silent` never shows the failed one.

This module does no I/O and knows no Discord: `Progress` tells a `MarkPort` the one mark the
message should show now, and the port catches up in its own time, sending only what still
differs when its request may leave (a mark that waited for the budget while the turn moved on
is never sent). It does not know which process shows what: a turn begun from the queue in
another process than the one that queued it may find the queued mark on its message, which
its port is then told it may show (and removes). A failure the server keeps out of the channel
goes to the log alone (`LoggedNotices`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from tomori.config.settings import ShowErrors, ShowProgress
from tomori.delivery.notices import Notice

log = logging.getLogger(__name__)

SHOW_AFTER_S = 1.0
"""How long a passing stage must last before its mark shows."""


class Stage(StrEnum):
    QUEUED = "queued"
    WORKING = "working"
    TOOL = "tool"
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"

    @property
    def final(self) -> bool:
        return self in (Stage.DONE, Stage.FAILED, Stage.STOPPED)


QUEUED_MARK = "\u23f3"  # hourglass with flowing sand
MARKS: dict[Stage, str | None] = {
    Stage.QUEUED: QUEUED_MARK,
    Stage.WORKING: "\U0001f4ad",  # thought balloon
    Stage.TOOL: "\U0001f527",  # wrench
    Stage.DONE: None,
    Stage.FAILED: "\u26a0\ufe0f",  # warning sign
    Stage.STOPPED: "\u23f9\ufe0f",  # stop button
}
"""Each stage's mark, a standard emoji any client shows; None: no mark."""


@dataclass(frozen=True, slots=True)
class Visibility:
    """What a server shows of its direct triggers' turns: progress marks, and how a failure
    is told."""

    progress: ShowProgress = ShowProgress.REACTIONS
    errors: ShowErrors = ShowErrors.REPLY

    @property
    def stages(self) -> frozenset[Stage]:
        """The stages whose marks show (DONE has none)."""
        shown: set[Stage] = set()
        if self.progress is ShowProgress.REACTIONS:
            shown |= {Stage.QUEUED, Stage.WORKING, Stage.TOOL, Stage.STOPPED}
        if self.errors is ShowErrors.REACT or (
            self.progress is ShowProgress.REACTIONS and self.errors is ShowErrors.REPLY
        ):
            shown.add(Stage.FAILED)
        return frozenset(shown)

    @property
    def replies(self) -> bool:
        """Whether a failure is told in an embed (else it is only logged)."""
        return self.errors is ShowErrors.REPLY


def ending(*, stopped: bool, failed: bool, replaced: bool = False) -> Stage:
    """How a turn ended, as its trigger shows it: a stop wins over a failure it caused. One
    `replaced` by a follow-up ends as answered (no mark): the next answer, a reply to the
    follow-up, covers its question, and the follow-up's own marks say how that went."""
    if replaced:
        return Stage.DONE
    if stopped:
        return Stage.STOPPED
    return Stage.FAILED if failed else Stage.DONE


class MarkPort(Protocol):
    """The message's marks, as the place shows them."""

    def show(self, mark: str | None) -> None:
        """The one mark the message should show now (None: none). Returns at once: the port
        catches up in its own time, at the lowest priority of the bot's requests."""
        ...


class ProgressHook(Protocol):
    """What a turn and its passes report their stage to."""

    def report(self, stage: Stage) -> None: ...


class _NoProgress:
    def report(self, stage: Stage) -> None:
        return None


NO_PROGRESS: ProgressHook = _NoProgress()
"""For a turn whose trigger shows nothing: an ambient one, a scene, a /respond, the console."""


class Progress:
    """One trigger's stages into marks, under the rules of the module (it owns one timer)."""

    __slots__ = ("_port", "_show_after_s", "_stage", "_timer", "_visible")

    def __init__(
        self, port: MarkPort, visible: frozenset[Stage], *, show_after_s: float = SHOW_AFTER_S
    ) -> None:
        self._port = port
        self._visible = visible
        self._show_after_s = show_after_s
        self._stage: Stage | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def stage(self) -> Stage | None:
        """The stage last reported (None: none yet)."""
        return self._stage

    @property
    def ended(self) -> bool:
        return self._stage is not None and self._stage.final

    def report(self, stage: Stage) -> None:
        """The turn is at `stage` now; after an ending, nothing changes."""
        if self.ended or stage is self._stage:
            return
        self._stage = stage
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if stage.final:
            self._show(stage)
        else:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self._show_after_s, self._lasted, stage)

    def _lasted(self, stage: Stage) -> None:
        self._timer = None
        if stage is self._stage:
            self._show(stage)

    def _show(self, stage: Stage) -> None:
        self._port.show(MARKS[stage] if stage in self._visible else None)


class LoggedNotices:
    """A `NoticeSink` for a turn whose server keeps failures out of the channel (errors
    `react` or `silent`): each notice is logged, nothing is posted."""

    def __init__(self, channel_id: str) -> None:
        self._channel_id = channel_id

    async def post_notice(self, notice: Notice) -> None:
        log.info(
            "channel %s: %r not posted (the server's errors setting)",
            self._channel_id,
            notice.title,
        )
