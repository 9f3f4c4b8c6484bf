"""What a queued turn asks for, and the one codec for it.

A turn waits in the lock store (`Trigger.payload`, JSON) and may run after a restart or in
another process, so everything it needs beyond its message rides along: how it was addressed
(which decides whether its asker hears of failures), the personas that answer it, a scene,
a `/respond`'s own parts, and a new take's answer (`takes.TakeAsk`). `TurnRequest.encode`
writes that JSON and `TurnRequest.decode` reads it back; nothing else touches a payload's keys.
Rows written by earlier versions stay readable: a payload without `addressed` carries the
older `surface_errors` flag.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tomori.cast.personas import Persona
from tomori.cast.scenes import Scene
from tomori.locks import Trigger
from tomori.prompt.conversation import spoken
from tomori.prompt.prefill import Prefill
from tomori.providers.base import ContextItem, Role
from tomori.turns.takes import TakeAsk


class Addressed(StrEnum):
    """How a message asked for its reply, which decides whether the asker is told of failures."""

    DIRECTLY = "direct"
    """A mention, a reply to the bot, a direct message, a command: errors are told."""
    PASSIVELY = "passive"
    """A message in a channel that answers every message: a failure stays silent."""

    @property
    def surfaces_errors(self) -> bool:
        return self is Addressed.DIRECTLY


@dataclass(frozen=True, slots=True)
class Respond:
    """A `/respond` turn's own parts: it has no message, so what its asker said rides along."""

    asker: str
    """The asker's name as the channel shows it, which their prompt is said under."""
    prompt: str | None = None
    prefill: str | None = None
    """Checked (`check_prefill`) before it is queued."""

    def brief(self, channel: Prefill | None) -> AnswerBrief:
        """What its answers are asked: what the asker said, and its own prefill, which
        replaces the channel's (or server's) and the persona's for the answer it was given
        for (never joined to them)."""
        said = (
            (ContextItem(Role.USER, spoken(self.asker, self.prompt), pinned=True),)
            if self.prompt
            else ()
        )
        given = Prefill(self.prefill, manual=True) if self.prefill else None
        return AnswerBrief(said, channel, given)


@dataclass(frozen=True, slots=True)
class AnswerBrief:
    """What a turn's answers are asked beyond the channel's messages: what a `/respond` asker
    said, and the prefills they may begin with (`prefill_for` picks one per answer)."""

    said: tuple[ContextItem, ...] = ()
    channel: Prefill | None = None
    """The channel's (or its server's) prefill, `/tomori prefill`."""
    given: Prefill | None = None
    """A `/respond` prefill: the first answer's alone, the persona asked for."""

    def prefill_for(self, persona: Persona | None, *, first: bool) -> Prefill | None:
        """The one prefill an answer begins with: a `/respond` one for the answer it was
        given for, else the persona's own (written for it alone), else the channel's."""
        if first and self.given is not None:
            return self.given
        if persona is not None and persona.prefill:
            return Prefill(persona.prefill)
        return self.channel


SCENE_LINE = AnswerBrief()
"""A scene's line: the persona's own prefill, never the channel's. The channel's is written for
the bot's voice (`Tomori: *yawns*`) and would put it in every speaker's mouth, which is why
TomoriBot skips it for scene turns; a persona's was written for that persona's answers, and a
line is one of them."""


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What one turn asks for: who answers it, and how (see the module docstring)."""

    addressed: Addressed = Addressed.DIRECTLY
    personas: tuple[str, ...] = ()
    """The name keys of the personas that answer, in order (none: the bot)."""
    scene: Scene | None = None
    respond: Respond | None = None
    take: TakeAsk | None = None
    """A new take of an answer (`tomori.turns.takes`): its context ends at the answer's message,
    and it is written into the answer's messages."""

    @property
    def surfaces_errors(self) -> bool:
        return self.addressed.surfaces_errors

    def trigger(
        self,
        channel_id: str,
        message_id: str | None,
        requester_id: str,
        *,
        received_at: float | None = None,
        follow_up_key: str | None = None,
    ) -> Trigger:
        """The lock store's trigger that queues this request."""
        return Trigger(
            channel_id,
            message_id,
            requester_id,
            self.encode(),
            received_at=time.time() if received_at is None else received_at,
            follow_up_key=follow_up_key,
        )

    def encode(self) -> dict[str, Any]:
        """The request as the lock store keeps it (JSON)."""
        payload: dict[str, Any] = {"addressed": self.addressed.value}
        if self.personas:
            payload["personas"] = list(self.personas)
        if self.scene is not None:
            scene = self.scene
            payload["scene"] = {
                "cast": list(scene.cast),
                "cycles": scene.cycles,
                "instructions": scene.instructions,
            }
        if self.respond is not None:
            respond = self.respond
            payload["manual"] = {
                "asker": respond.asker,
                "prompt": respond.prompt,
                "prefill": respond.prefill,
            }
        if self.take is not None:
            payload["take"] = self.take.encode()
        return payload

    @classmethod
    def decode(cls, payload: Mapping[str, Any]) -> TurnRequest:
        """Read back what `encode` wrote, or an earlier version of the cog did."""
        if "addressed" in payload:
            addressed = Addressed(payload["addressed"])
        else:
            addressed = Addressed.DIRECTLY if payload.get("surface_errors") else Addressed.PASSIVELY
        personas = tuple(str(key) for key in payload.get("personas") or ())
        scene = None
        found = payload.get("scene")
        if isinstance(found, Mapping):
            scene = Scene(
                tuple(str(key) for key in found.get("cast") or ()),
                int(found.get("cycles") or 0),
                str(found.get("instructions") or ""),
            )
        respond = None
        parts = payload.get("manual")
        if isinstance(parts, Mapping):
            respond = Respond(
                str(parts.get("asker") or ""), parts.get("prompt"), parts.get("prefill")
            )
        found_take = payload.get("take")
        take = TakeAsk.decode(found_take) if isinstance(found_take, Mapping) else None
        return cls(addressed, personas, scene, respond, take)

    @classmethod
    def of(cls, trigger: Trigger) -> TurnRequest:
        return cls.decode(trigger.payload)


DIRECTLY = TurnRequest(Addressed.DIRECTLY)
PASSIVELY = TurnRequest(Addressed.PASSIVELY)
