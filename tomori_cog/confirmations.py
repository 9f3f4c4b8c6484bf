"""Tool calls waiting for their asker's press, on Discord (`tomori.tools.confirmation`).

The prompt is a message in the turn's channel: it pings the asker alone, shows the tool and
its whole arguments in an embed (where nothing pings), and carries two buttons whose custom id
names the waiting call. The cog's `on_interaction` hands every press of them here: the asker's
answers the call (the press's reply edits the prompt and takes its buttons away, within
Discord's 3 s), anyone else is told why not, ephemerally. No answer in time, or the turn's
/kill, ends the prompt the same way and refuses the call.

Calls wait in this process's memory: a turn and its channel's messages live in one process,
and a press on a prompt whose process is gone (a restart) is told the call no longer waits.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from tomori.delivery.port import Urgency
from tomori.tools.confirmation import (
    CUSTOM_ID_PREFIX,
    PressRefusal,
    ToolAsk,
    Verdict,
    before_asking,
    press_refusal,
)
from tomori.words import Text, said, say
from tomori_cog.discord_io import call_failures, pings_for
from tomori_cog.library import Library
from tomori_cog.locales import of_channel, of_interaction
from tomori_cog.pacing import DiscordPacing

log = logging.getLogger(__name__)

ALLOW, REFUSE = "allow", "refuse"
PROMPT_COLOUR = 0x5865F2
SETTLED_COLOUR = 0x99AAB5
SETTLE_WITHIN_S = 5.0
"""How long ending an unanswered prompt may hold the turn that ends (a /kill waits on it)."""


@dataclass(eq=False)
class _Waiting:
    ask: ToolAsk
    guild_id: str | None
    locale: str
    """The language of the prompt: its server's (`tomori_cog.locales.of_channel`)."""
    answer: asyncio.Future[Verdict] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


async def _sent(posting: asyncio.Task[Any | None]) -> Any | None:
    """The prompt a send under way posts, if it ends within `SETTLE_WITHIN_S`."""
    try:
        async with asyncio.timeout(SETTLE_WITHIN_S):
            return await posting
    except TimeoutError:
        posting.cancel()
        await asyncio.gather(posting, return_exceptions=True)
        return None


class Confirmations:
    """The calls of this process that wait for a press, by the id their buttons carry."""

    def __init__(self, library: Library, pacing: DiscordPacing) -> None:
        self._library = library
        self._pacing = pacing
        self._waiting: dict[str, _Waiting] = {}

    async def ask(self, channel: Any, ask: ToolAsk) -> Verdict:
        """Ask the turn's asker in `channel`, and wait (see the module docstring)."""
        guild = getattr(channel, "guild", None)
        guild_id = None if guild is None else str(guild.id)
        roles: Collection[str] = ()
        if ask.rule.role_in(guild_id) is not None:
            roles = await self._roles_of(guild, ask.requester_id)
        verdict = before_asking(ask, guild_id, roles)
        if verdict is not Verdict.ALLOWED:
            return verdict
        ask_id = secrets.token_hex(8)
        waiting = self._waiting[ask_id] = _Waiting(ask, guild_id, of_channel(channel))
        posting = asyncio.create_task(self._post_prompt(channel, ask_id, waiting))
        prompt = None
        try:
            prompt = await asyncio.shield(posting)  # a kill mid-send still ends what it sent
            if prompt is None:
                return Verdict.NOBODY_TO_ASK
            async with asyncio.timeout(ask.timeout_s):
                return await asyncio.shield(waiting.answer)
        except TimeoutError:
            await self._settle(prompt, waiting, Verdict.TIMED_OUT)
            return Verdict.TIMED_OUT
        except asyncio.CancelledError:  # the turn's /kill
            if prompt is None:
                prompt = await _sent(posting)
            if prompt is not None:
                await self._settle(prompt, waiting, Verdict.STOPPED)
            raise
        finally:
            del self._waiting[ask_id]

    async def pressed(self, interaction: Any) -> bool:
        """Answer a press of a confirmation's button; False: the interaction is not one."""
        data = getattr(interaction, "data", None) or {}
        custom_id = str(data.get("custom_id") or "")
        if not custom_id.startswith(CUSTOM_ID_PREFIX):
            return False
        ask_id, _, choice = custom_id.removeprefix(CUSTOM_ID_PREFIX).partition(":")
        waiting = self._waiting.get(ask_id)
        if waiting is None or waiting.answer.done():
            await self._tell(interaction, PressRefusal.NOT_WAITING)
            return True
        user = interaction.user
        allowing = choice == ALLOW
        roles: Collection[str] = ()
        needs_role = waiting.ask.rule.role_in(waiting.guild_id) is not None
        if allowing and needs_role and str(user.id) == waiting.ask.requester_id:
            roles = await self._library.presser_roles(interaction, self._pacing.read)
        refusal = press_refusal(
            waiting.ask, waiting.guild_id, str(user.id), roles, allowing=allowing
        )
        if refusal is not None:
            await self._tell(interaction, refusal)
            return True
        verdict = Verdict.ALLOWED if allowing else Verdict.REFUSED
        waiting.answer.set_result(verdict)
        try:
            await interaction.response.edit_message(embed=self._embed(waiting, verdict), view=None)
        except call_failures(self._library) as error:
            log.warning("a confirmation's prompt could not be updated: %s", error)
        return True

    async def _roles_of(self, guild: Any, user_id: str | None) -> Collection[str]:
        """The roles the asker holds in `guild` (none in a direct message, or if unknown)."""
        if guild is None or user_id is None:
            return ()
        member = guild.get_member(int(user_id))
        if member is None:
            try:
                await self._pacing.read()
                member = await guild.fetch_member(int(user_id))
            except call_failures(self._library) as error:
                log.info("member %s of server %s cannot be read: %s", user_id, guild.id, error)
                return ()
        return {str(role.id) for role in member.roles}

    async def _post_prompt(self, channel: Any, ask_id: str, waiting: _Waiting) -> Any | None:
        """The prompt, posted; None if the channel would not take it."""
        ask = waiting.ask
        allow, refuse = (say(said(f"button.{key}"), waiting.locale) for key in (ALLOW, REFUSE))
        buttons = self._library.buttons(
            (allow, f"{CUSTOM_ID_PREFIX}{ask_id}:{ALLOW}", "success"),
            (refuse, f"{CUSTOM_ID_PREFIX}{ask_id}:{REFUSE}", "danger"),
        )
        try:
            await self._pacing.write(channel.id, Urgency.FIRST)
            return await channel.send(
                content=f"<@{ask.requester_id}>",
                embed=self._embed(waiting, None),
                view=buttons,
                allowed_mentions=pings_for(self._library, {int(str(ask.requester_id))}),
            )
        except call_failures(self._library) as error:
            log.warning("channel %s: a confirmation could not be posted: %s", channel.id, error)
            return None

    def _embed(self, waiting: _Waiting, verdict: Verdict | None) -> Any:
        ask = waiting.ask
        mention = f"<@{ask.requester_id}>"
        title: Text
        if verdict is None:
            role = ask.rule.role_in(waiting.guild_id)
            description = ask.prompt(mention, None if role is None else f"<@&{role}>")
            colour, title = PROMPT_COLOUR, said("title.allow_tool", tool=ask.tool)
        else:
            description, colour, title = ask.settled(verdict, mention), SETTLED_COLOUR, ask.tool
        shown = {
            "title": say(title, waiting.locale),
            "description": say(description, waiting.locale),
        }
        return self._library.module.Embed(colour=colour, **shown)

    async def _settle(self, prompt: Any, waiting: _Waiting, verdict: Verdict) -> None:
        """End the prompt unanswered: its buttons go, and it says why the call did not run."""
        failures: tuple[type[BaseException], ...] = (TimeoutError, *call_failures(self._library))
        try:
            async with asyncio.timeout(SETTLE_WITHIN_S):
                await self._pacing.write(prompt.channel.id, Urgency.LAST)
                await prompt.edit(embed=self._embed(waiting, verdict), view=None)
        except failures as error:
            log.warning("a confirmation's prompt could not be ended: %s", error)

    async def _tell(self, interaction: Any, refusal: PressRefusal) -> None:
        try:
            told = say(refusal.words, of_interaction(interaction))
            await interaction.response.send_message(told, ephemeral=True)
        except call_failures(self._library) as error:
            log.warning("a press of a confirmation could not be answered: %s", error)
