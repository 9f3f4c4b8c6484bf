"""The `remember` and `forget` tools, and what one turn does with memories.

The bot's registry holds them unbound (`UNBOUND`), beside the other built-in tools, so
`TOMORI_TOOLS` and `/tomori tools` choose them as any. `TurnMemories` is one turn's: its
speakers' tools are bound to their `Place` (the server, the
channel, the member answered, the persona speaking), so a call reads and writes only where
the store's queries let that place (`tomori.memory.store`), whatever the model asks. What it
saved and forgot is kept for the turn to show (every save is visible: `saved`; and every
forget, `forgotten`: a model a planted message steered to erase a server's memory does not do
it unseen). A refused call (a bound,
a member or server that said no) fails for the model with the store's reason, and so does a
call whose arguments are not what the tool takes (`_about`, `_text`, `_memory_id`): an `about`
outside member, server and self, a text that is not a string, an id that is not a whole
number (true, 1.5), each with what it may be.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tomori.config.settings import FORGET_NAME, REMEMBER_NAME, Settings
from tomori.memory.note import memory_note
from tomori.memory.scopes import ABOUT, Place
from tomori.memory.store import Memory, MemoryRefused, MemoryStore
from tomori.providers.base import ContextItem, JsonObject, ToolSpec
from tomori.tools.registry import Tool, ToolContext, ToolFailure

REMEMBER_PARAMETERS: JsonObject = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "the fact, short and self-contained"},
        "about": {
            "type": "string",
            "enum": list(ABOUT),
            "description": "member: the person you are answering (the default); server: this"
            " server; self: you. In a direct message it is that conversation's alone.",
        },
    },
    "required": ["text"],
}
FORGET_PARAMETERS: JsonObject = {
    "type": "object",
    "properties": {"id": {"type": "integer", "description": "the memory's number, as shown"}},
    "required": ["id"],
}
REMEMBER = ToolSpec(
    REMEMBER_NAME,
    "Remember a fact for later conversations (people see what you save, and can erase it)."
    " Save only what someone would want remembered.",
    REMEMBER_PARAMETERS,
)
FORGET = ToolSpec(FORGET_NAME, "Forget one of the memories you were shown.", FORGET_PARAMETERS)
"""What the model is offered (`--check` offers them too, with no turn to bind them to)."""


ID_BOUND = 2**63
"""Past any memory's number (a PostgreSQL bigint): a larger one names none, and is not asked."""
DIGITS = re.compile(r"[0-9]+")
"""A memory's number written as a string: ASCII digits alone."""


class TurnMemories:
    """One turn's memories: the note each speaker is shown, its tools, what they saved."""

    def __init__(self, store: MemoryStore, place: Place, shown: int) -> None:
        """`shown`: memories in a note at most."""
        self._store = store
        self._place = place
        self._shown = shown
        self.saved: list[Memory] = []
        self.forgotten: list[int] = []
        """The numbers of the memories from before this turn that it forgot."""

    def place(self, persona: str | None) -> Place:
        return replace(self._place, persona=persona)

    async def note(self, persona: str | None, text: str) -> tuple[ContextItem, ...]:
        """What the speaker `persona` (None: the bot) is shown of its memories, found by
        `text` (the trigger's words) and the newest."""
        place = self.place(persona)
        return memory_note(await self._store.recall(place, text, self._shown))

    def tools(self, persona: str | None) -> tuple[Tool, ...]:
        place = self.place(persona)

        async def remember(context: ToolContext, arguments: Mapping[str, Any]) -> JsonObject:
            scope = place.scope_for(_about(arguments.get("about")))
            try:
                memory = await self._store.save(place, scope, _text(arguments.get("text")))
            except MemoryRefused as refused:
                raise ToolFailure(str(refused)) from None
            self.saved.append(memory)
            return {"remembered": memory.memory_id, "scope": scope.value}

        async def forget(context: ToolContext, arguments: Mapping[str, Any]) -> JsonObject:
            memory_id = _memory_id(arguments.get("id"))
            if not 0 < memory_id < ID_BOUND or not await self._store.forget_here(place, memory_id):
                raise ToolFailure(f"there is no memory #{memory_id} you may forget here")
            kept = [m for m in self.saved if m.memory_id != memory_id]
            if len(kept) == len(self.saved):  # saved and forgotten in one turn: nothing to tell
                self.forgotten.append(memory_id)
            self.saved = kept
            return {"forgotten": memory_id}

        return (
            Tool(REMEMBER.name, REMEMBER.description, REMEMBER.parameters, remember),
            Tool(FORGET.name, FORGET.description, FORGET.parameters, forget),
        )


def _about(given: object) -> str:
    """What a save is `about`: one of `ABOUT`, the person answered when left out; anything else
    fails for the model saying what it may be (it was saved about the member, unasked)."""
    if given is None or given == "":
        return "member"
    if isinstance(given, str) and given in ABOUT:
        return given
    raise ToolFailure(
        f"about is one of {', '.join(ABOUT)} (member: the person you are answering; server:"
        f" this server; self: you), not {json.dumps(given)}: nothing was remembered"
    )


def _text(given: object) -> str:
    """The fact to remember: a string. A number or anything else fails for the model, which
    then says the fact in words; the store refuses an empty one."""
    if given is None:
        return ""
    if not isinstance(given, str):
        raise ToolFailure(f"text is the fact as a string of words, not {json.dumps(given)}")
    return given


def _memory_id(given: object) -> int:
    """A memory's number as the model wrote it: a JSON integer (1.0 too), or a string of
    digits (models often quote numbers); never true or false, nor a number with a fraction,
    which once erased the memory its whole part named."""
    if isinstance(given, bool):
        raise ToolFailure(f"id is a memory's number, such as 12, not {json.dumps(given)}")
    if isinstance(given, int):
        return given
    if isinstance(given, float) and given.is_integer():
        return int(given)
    if isinstance(given, str) and DIGITS.fullmatch(given.strip()):
        return int(given.strip())
    if isinstance(given, float):
        raise ToolFailure(f"id is a memory's whole number, such as 12: {given} names none")
    raise ToolFailure("give the memory's number as the note shows it, such as 12")


async def _unbound(context: ToolContext, arguments: Mapping[str, Any]) -> JsonObject:
    raise ToolFailure("nothing is remembered here")


UNBOUND = (
    Tool(REMEMBER.name, REMEMBER.description, REMEMBER.parameters, _unbound),
    Tool(FORGET.name, FORGET.description, FORGET.parameters, _unbound),
)
"""The memory tools as the bot's registry holds them, beside the other built-in ones: listed
by `/tomori tools`, switched off there like any, and bound to each speaker's place by its turn
(`ToolRegistry.with_bound`); a turn with no place for them (no member asked) is offered none."""
NAMES = frozenset({REMEMBER.name, FORGET.name})


def memory_tools(settings: Settings) -> tuple[Tool, ...]:
    """The memory tools a bot's registry holds: none with `TOMORI_MEMORIES=0`."""
    return UNBOUND if settings.memories else ()
