"""Where a memory belongs, and where a turn is: the one description of the four scopes.

- `member`: about a member, in one server (`owner_id` the member);
- `server`: about one server (`owner_id` empty);
- `persona`: a persona's own, in one server (`owner_id` its name key; empty for the bot);
- `dm`: one direct message conversation's (`owner_id` its channel), never shown elsewhere.

A memory's scope is chosen where it is saved and never changes; which memories a turn may see
is the store's query for its `Place` (`tomori.memory.store`), never what the prompt says.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

DM_GUILD = ""
"""The `guild_id` of a direct message's memories."""


class Scope(StrEnum):
    MEMBER = "member"
    SERVER = "server"
    PERSONA = "persona"
    DM = "dm"


ABOUT = {"member": Scope.MEMBER, "server": Scope.SERVER, "self": Scope.PERSONA}
"""What the `remember` tool's `about` names, in a server (a direct message has one scope)."""


@dataclass(frozen=True, slots=True)
class Place:
    """Where one speaker of one turn is: the server (None: a direct message), the channel, the
    member the turn answers, the persona speaking (None: the bot), and whether everyone in the
    server may read the channel (a staff channel, a private thread: no; nothing is saved from
    one, since every scope of a server is shown in its other channels)."""

    guild_id: str | None
    channel_id: str
    member_id: str
    persona: str | None = None
    shared: bool = True

    @property
    def in_dm(self) -> bool:
        return self.guild_id is None

    def owner(self, scope: Scope) -> tuple[str, str]:
        """(guild_id, owner_id) of a memory of `scope` saved here."""
        if self.guild_id is None:
            return DM_GUILD, self.channel_id
        owners = {
            Scope.MEMBER: self.member_id,
            Scope.SERVER: "",
            Scope.PERSONA: self.persona or "",
        }
        return self.guild_id, owners[scope]

    def scope_for(self, about: str) -> Scope:
        """The scope a save `about` something makes here: in a direct message, always its own."""
        if self.guild_id is None:
            return Scope.DM
        return ABOUT.get(about, Scope.MEMBER)
