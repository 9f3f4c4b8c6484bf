"""A new take's turn, in the channel as the answer's own turn saw it (`tomori.turns.takes`).

`Retaking` wraps the channel's surface for that turn: its trigger is the message the answer
answers, read with the history before it and the answers since it that the first take was shown
(never the answer itself nor what came after it: the model is shown what it was shown then),
and the bot's and personas' ports write into the answer's messages (`TakePort`). Everything
else is the channel's own.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

from tomori.cast.personas import Persona
from tomori.delivery.notices import NoticeSink
from tomori.delivery.port import ChannelPort, Urgency
from tomori.delivery.progress import ProgressHook, Stage
from tomori.generation.state import TurnState
from tomori.locks import Turn, TurnGuard
from tomori.tools.confirmation import ToolAsk, Verdict
from tomori.turns.surface import Reading, Speaker, Surface
from tomori.turns.takes import TakeAsk


class TakePort:
    """A `ChannelPort` whose sends replace the answer's messages in order: the first send
    edits its first message, the next its second, and so on; a send past them posts a new
    message after them. Edits are the inner port's."""

    def __init__(self, inner: ChannelPort, messages: tuple[str, ...]) -> None:
        self._inner = inner
        self._reused = list(messages)

    async def writable(self, urgency: Urgency) -> None:
        await self._inner.writable(urgency)

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        if self._reused:
            message_id = self._reused.pop(0)
            await self._inner.edit(message_id, content, urgency=urgency)
            return message_id
        return await self._inner.send(content, reply_to=None, urgency=urgency)

    async def edit(self, message_id: str, content: str, *, urgency: Urgency) -> None:
        await self._inner.edit(message_id, content, urgency=urgency)


class Retaking:
    """The channel's `Surface` for a new take of an answer (see the module docstring)."""

    def __init__(self, inner: Surface, take: TakeAsk) -> None:
        self._inner = inner
        self._take = take

    @property
    def channel_id(self) -> str:
        return self._inner.channel_id

    @property
    def guild_id(self) -> str | None:
        return self._inner.guild_id

    @property
    def limit_scope(self) -> str:
        return self._inner.limit_scope

    @property
    def shared(self) -> bool:
        return self._inner.shared

    @property
    def notices(self) -> NoticeSink:
        return self._inner.notices

    async def trigger(self, turn: Turn) -> Any | None:
        """The message the answer answers."""
        answered = replace(turn, trigger=replace(turn.trigger, message_id=self._take.trigger_id))
        return await self._inner.trigger(answered)

    async def latest(self) -> Any | None:
        return await self._inner.latest()

    async def may_start(
        self, turn: Turn, message: Any, guard: TurnGuard, *, surface_errors: bool
    ) -> bool:
        return await self._inner.may_start(turn, message, guard, surface_errors=surface_errors)

    def deliverable(self) -> bool:
        return self._inner.deliverable()

    def refused(self) -> None:
        self._inner.refused()

    def typing(self, state: TurnState) -> AbstractAsyncContextManager[None]:
        return self._inner.typing(state)

    async def read(
        self,
        message: Any | None,
        waiting: Collection[str],
        *,
        queued: bool,
        images: bool,
        before: str | None = None,
    ) -> Reading:
        """Up to the answered message, and the answers since it posted before this answer's
        first message: what its first take was shown (the answers to messages it waited
        behind, if it did), never the answer itself nor anything after it."""
        first = self._take.messages[0]
        return await self._inner.read(message, waiting, queued=True, images=images, before=first)

    async def confirm(self, ask: ToolAsk) -> Verdict:
        return await self._inner.confirm(ask)

    def progress(
        self, message_id: str, visible: frozenset[Stage], *, from_queue: bool
    ) -> ProgressHook:
        return self._inner.progress(message_id, visible, from_queue=from_queue)

    def bot_port(self) -> ChannelPort:
        return TakePort(self._inner.bot_port(), self._take.messages)

    def speaker(self, persona: Persona) -> Speaker:
        speaker = self._inner.speaker(persona)
        return replace(speaker, port=TakePort(speaker.port, self._take.messages))
