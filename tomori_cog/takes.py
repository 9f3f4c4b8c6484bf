"""Regenerate and swipe on Discord (`tomori.turns.takes` holds the rules).

Once the bot's (or a persona's) answer to a message ends, and nothing newer came in its
channel, its last message gets a row of buttons: ◀, the take shown ("1/1", disabled), ▶ and
Regenerate. The cog's `on_interaction` hands every press of them here (`pressed`), from any
process and after a restart (the answer's takes are in the database). A press of Regenerate
takes the buttons off (the press's own reply, within Discord's 3 s) and queues the new take as
a turn under the channel's lock (`TakeAsk` in its `TurnRequest`); the turn writes it into the
answer's messages (`tomori.turns.retake`), and `after_turn` keeps it and puts the buttons back,
showing it. A press of ◀ or ▶ writes the stored take into the messages the same way (more
messages posted after them, or the unused deleted) and moves the counter; if Discord lost one
of its writes, the take shown before is written back, the counter stays, and the presser is
told. Anyone but the asker or a moderator is told no, ephemerally, in their language
(`of_interaction`); the buttons are labelled in the server's (`of_channel`). A new message in
the channel (`heard`), or another turn there (`before_turn`), freezes the takes as shown and
takes the buttons away.

Putting buttons on or taking them off is a component tidy-up, as taking an ended answer's Stop
button away is (`DiscordPacing.tidy`): behind every other request of the bot, and only when
the channel's bucket has room to spare, so it never delays an answer's text. Where the buttons
go on the message that shows the answer's Stop button, their edit takes that away too
(`after_turn` names it: `tomori_cog.stop_buttons` makes no edit of its own there). The take's
own text goes as a turn's would, and a swipe's as what its presser waits on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from tomori.cast.personas import Persona, named
from tomori.config.settings import KillPolicy
from tomori.delivery.port import ChannelPort, DeliveryError, Urgency, as_shown
from tomori.locks import Admission, ChannelLocks, Turn
from tomori.locks.settling import settle
from tomori.policy.limits import Refusal
from tomori.store import Database
from tomori.turns import Addressed, ChannelConfig, TurnRequest
from tomori.turns.retake import TakePort
from tomori.turns.take_store import TakeStore
from tomori.turns.takes import (
    LABELS,
    Answered,
    Press,
    PressRefusal,
    TakeAsk,
    Takes,
    TakeState,
    custom_id,
    held,
    layout,
    may_press,
    not_begun,
    pressed,
    refusal,
    regenerable,
    swiped,
)
from tomori.words import Text, said, say
from tomori_cog.discord_io import (
    LibraryPort,
    asked_once_more,
    call_failures,
    find_channel,
    pings_for,
)
from tomori_cog.library import Library
from tomori_cog.locales import of_channel, of_interaction
from tomori_cog.pacing import TIDY_WITHIN_S, DiscordPacing
from tomori_cog.persona_port import PersonaPort
from tomori_cog.reading.memory import RecentMessages
from tomori_cog.webhooks import Webhooks, home_of

log = logging.getLogger(__name__)

Held = Callable[[int, int, int], Awaitable[Refusal | None]]
"""Why the asker may not start a turn now (their cooldown, their day's tokens), keyed by the
press: `TomoriChat.command_refusal`."""
PersonaOf = Callable[[str, str], Awaitable[Persona | None]]
"""A server's persona by its name key (None: removed since)."""
PersonaPosted = Callable[[str, str, Persona, Sequence[str]], Awaitable[None]]
"""Keep that a persona posted these messages in a server's channel (the history then shows
them as its own: `PersonaStore.posted`)."""


class AnswerTakes:
    """The takes of the answers in this bot's channels (see the module docstring)."""

    def __init__(
        self,
        bot: Any,
        library: Library,
        pacing: DiscordPacing,
        memory: RecentMessages,
        webhooks: Webhooks,
        config: ChannelConfig,
        kill_policy: KillPolicy,
        most_takes: int,
        *,
        locks: Callable[[], Awaitable[ChannelLocks]],
        held: Held,
        persona_of: PersonaOf,
        persona_posted: PersonaPosted,
    ) -> None:
        """`most_takes` is how many takes an answer keeps (`TOMORI_MAX_TAKES`); `locks`
        starts the cog if it is not yet, and gives its channel locks."""
        self._bot = bot
        self._library = library
        self._pacing = pacing
        self._memory = memory
        self._webhooks = webhooks
        self._config = config
        self._kill_policy = kill_policy
        self._most_takes = most_takes
        self._locks = locks
        self._held = held
        self._persona_of = persona_of
        self._persona_posted = persona_posted
        self._store: TakeStore | None = None
        self._open: set[str] | None = None
        """The channels with takes not frozen (read once from the store, then kept)."""
        self._heard: dict[str, int] = {}
        """By channel, the newest message heard there that the cog did not post."""
        self._tasks: set[asyncio.Task[None]] = set()
        """The freezes (`heard`) and button edits (`_later`) under way."""

    def open(self, database: Database) -> None:
        self._store = TakeStore(database)
        self._open = None

    async def settled(self) -> None:
        """Wait until the freezes and button edits under way are done: for tests, which
        `TomoriChat.wait_idle` does not hold up for a tidy-up."""
        await settle(lambda: self._tasks)

    async def close(self) -> None:
        """Drop the button edits still waiting (before the database and the session close)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._store = None

    # -- the answer's turn ----------------------------------------------------------------------

    async def before_turn(self, turn: Turn, channel: Any) -> bool:
        """Another turn in the channel freezes its takes (a new take's turn, all but its own).
        False: the turn is a new take of an answer whose takes froze after its press (a new
        message, or another turn, came first), and it gives up: it writes nothing over an
        answer the channel has gone on from, and asks no model."""
        take = TurnRequest.of(turn.trigger).take
        await self._freeze(channel, keep=None if take is None else take.answer_id)
        return take is None or await self._still_making(channel, take)

    async def _still_making(self, channel: Any, take: TakeAsk) -> bool:
        """Whether the answer's new take is still asked for: its takes are being made, and no
        message the cog did not post came after the answer (its freeze may be under way)."""
        store = self._store
        if store is None:
            return True
        if take.messages and self._heard.get(str(channel.id), 0) > int(take.messages[-1]):
            await self._freeze(channel)
        try:
            found = await store.of(take.answer_id)
        except Exception as error:
            if not store.is_database_error(error):
                raise
            log.warning("channel %s: the answer's takes could not be read: %r", channel.id, error)
            return True
        return found is not None and found.state is TakeState.MAKING

    async def after_turn(self, turn: Turn, channel: Any, answered: Answered | None) -> str | None:
        """The answer a turn ended with gets its buttons, or a new take is kept and shown. The
        message the buttons go on, if any: their edit takes its Stop button off too."""
        if self._store is None:
            return None
        try:
            take = TurnRequest.of(turn.trigger).take
            if take is not None:
                return await self._made(self._store, channel, take, answered)
            if answered is not None:
                return await self._first(self._store, turn, channel, answered)
        except Exception as error:
            if not self._store.is_database_error(error):
                raise
            log.warning("channel %s: the answer's takes could not be kept: %r", channel.id, error)
        return None

    async def _first(
        self, store: TakeStore, turn: Turn, channel: Any, answered: Answered
    ) -> str | None:
        trigger, asker = turn.trigger.message_id, turn.trigger.requester_id
        if not answered.messages or trigger is None or asker is None:
            return None
        if self._heard.get(str(channel.id), 0) > int(trigger):
            return None  # the channel went on while it answered
        guild = getattr(channel, "guild", None)
        guild_id = None if guild is None else str(guild.id)
        if not await self._config.swipes(guild_id):
            return None
        messages = tuple(m.message_id for m in answered.messages)
        takes = Takes(
            messages[0],
            str(channel.id),
            guild_id,
            trigger,
            asker,
            answered.persona,
            messages,
            0,
            1,
            TakeState.OPEN,
        )
        await store.first(takes, [m.text for m in answered.messages], answered.usage)
        await self._opened(str(channel.id))
        return self._shown_later(store, channel, takes)

    async def _made(
        self, store: TakeStore, channel: Any, take: TakeAsk, answered: Answered | None
    ) -> str | None:
        """A new take's turn ended: kept and shown if it ended complete (the answer's messages
        it did not need deleted), else the answer is as it was, its buttons back: what a
        stalled, stopped or cut take wrote is replaced by the take shown before (`_undone`),
        and the edit that puts the buttons back carries its last message's text too, so the
        counter never shows over a text that is not the take it counts (the text's own edit
        failed, or a cut edit landed unanswered)."""
        if answered is None or not answered.messages or not answered.complete:
            if await store.not_made(take.answer_id):
                found = await store.of(take.answer_id)
                if found is not None:
                    parts = await store.parts(found.answer_id, found.shown)
                    if answered is not None and answered.messages:
                        await self._undone(channel, found, answered, parts)
                    last = parts[-1] if len(parts) == len(found.messages) else None
                    return self._shown_later(store, channel, found, last)
            return None
        messages = [m.message_id for m in answered.messages]
        unused = [m for m in take.messages if m not in messages]
        await self._delete(channel, take.persona, unused)
        takes = await store.made(
            take.answer_id, messages, [m.text for m in answered.messages], answered.usage
        )
        return None if takes is None else self._shown_later(store, channel, takes)

    async def _undone(
        self, channel: Any, takes: Takes, answered: Answered, parts: Sequence[str]
    ) -> None:
        """The answer's messages show the take shown before (`parts`) a new take that did not
        end complete: those it edited written back, those it posted after them deleted."""
        posted = [m.message_id for m in answered.messages if m.message_id not in takes.messages]
        await self._delete(channel, takes.persona, posted)
        if parts:
            await self._write(channel, takes, parts)

    def _shown_later(
        self, store: TakeStore, channel: Any, takes: Takes, text: str | None = None
    ) -> str | None:
        """Show the takes' buttons (`_show`) without holding the turn; the message they go on,
        None if they do not (the takes are not open)."""
        if takes.state is not TakeState.OPEN:
            return None
        self._later(channel, self._show(store, channel, takes, text))
        return takes.messages[-1]

    def _later(self, channel: Any, edit: Coroutine[Any, Any, None]) -> None:
        """Put buttons on or take them off in a task of its own: the turn or the message that
        asked never waits for a tidy-up."""

        async def run() -> None:
            try:
                await edit
            except Exception as error:  # the store gone meanwhile: the next press says so
                log.warning("channel %s: the buttons could not change: %r", channel.id, error)

        task = asyncio.create_task(run(), name="tomori-takes-buttons")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the channel going on -------------------------------------------------------------------

    def heard(self, message: Any) -> None:
        """A message in a channel: one the cog did not post freezes the channel's takes. The
        listener does not wait for it (a channel's messages stay in their order there)."""
        me = self._bot.user
        if me is not None and message.author.id == me.id:
            return
        if not getattr(message, "webhook_id", None):
            self._went_on(message)
        task = asyncio.create_task(self._heard_from(message), name="tomori-takes-freeze")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _went_on_before(self, takes: Takes, press_id: int) -> bool:
        """Whether this process heard a message the cog did not post after the answer and
        before the press (by Discord's ids: their time), whose freeze may still be under way.
        A press that came first goes on: its turn gives up at its start (`_still_making`)."""
        return int(takes.messages[-1]) < self._heard.get(takes.channel_id, 0) < press_id

    def _went_on(self, message: Any) -> None:
        channel_id = str(message.channel.id)
        self._heard[channel_id] = max(self._heard.get(channel_id, 0), int(message.id))

    async def _heard_from(self, message: Any) -> None:
        webhook_id = getattr(message, "webhook_id", None)
        if webhook_id:
            if await self._webhooks.is_ours(webhook_id):
                return  # a persona's answer
            self._went_on(message)
        await self._freeze(message.channel)

    async def _freeze(self, channel: Any, keep: str | None = None) -> None:
        store = self._store
        channel_id = str(channel.id)
        if store is None or channel_id not in await self._open_channels(store):
            return
        try:
            frozen = await store.freeze(channel_id, keep)
        except Exception as error:
            if not store.is_database_error(error):
                raise
            log.warning("channel %s: takes could not be frozen: %r", channel_id, error)
            return
        if keep is None:
            assert self._open is not None
            self._open.discard(channel_id)
        for takes in frozen:
            self._later(channel, self._components(channel, takes, takes.messages[-1], None))

    async def _open_channels(self, store: TakeStore) -> set[str]:
        if self._open is None:
            try:
                self._open = await store.open_channels()
            except Exception as error:
                if not store.is_database_error(error):
                    raise
                log.warning("the channels with takes could not be read: %r", error)
                return set()
        return self._open

    async def _opened(self, channel_id: str) -> None:
        assert self._store is not None
        (await self._open_channels(self._store)).add(channel_id)

    # -- presses --------------------------------------------------------------------------------

    async def pressed(self, interaction: Any) -> bool:
        """Answer a press of a take button; False: the interaction is not one."""
        data = getattr(interaction, "data", None) or {}
        found = pressed(str(data.get("custom_id") or ""))
        if found is None:
            return False
        answer_id, press = found
        await self._locks()  # the cog started: its store open
        store = self._store
        assert store is not None
        takes = await store.of(answer_id)
        swipes_on = takes is None or await self._config.swipes(takes.guild_id)
        went_on = takes is not None and self._went_on_before(takes, int(interaction.id))
        refused = refusal(takes, swipes_on, went_on)
        why: Text | None = None if refused is None else refused.words
        if takes is not None and refused is not PressRefusal.GONE:
            manages = bool(getattr(interaction.permissions, "manage_messages", False))
            if not may_press(takes, str(interaction.user.id), manages, self._kill_policy):
                why = PressRefusal.NOT_YOURS.words
        if why is None and takes is not None:
            if press is Press.REGENERATE:
                why = await self._regenerate(store, interaction, takes)
            else:
                why = await self._swipe(store, interaction, takes, press)
        if why is not None:
            await self._tell(interaction, why)
        return True

    async def _regenerate(self, store: TakeStore, interaction: Any, takes: Takes) -> Text | None:
        if not regenerable(takes, self._most_takes):
            return PressRefusal.ENOUGH.words
        if takes.guild_id is not None:
            refused = await self._held(int(takes.guild_id), int(takes.asker_id), interaction.id)
            if refused is not None:
                return held(refused, takes, str(interaction.user.id))
        if not await store.begin_making(takes.answer_id, below=self._most_takes):
            now = await store.of(takes.answer_id)  # a take made, or a freeze, since it was read
            return not_begun(now, self._most_takes).words
        try:  # the buttons go while the take is made
            await interaction.response.edit_message(view=None)
        except call_failures(self._library) as error:
            log.warning("a press of Regenerate could not be answered: %s", error)
        personas = () if takes.persona is None else (takes.persona,)
        request = TurnRequest(Addressed.DIRECTLY, personas, take=takes.ask())
        locks = await self._locks()
        admission = await locks.submit(request.trigger(takes.channel_id, None, takes.asker_id))
        log.info("regenerate in channel %s: %s", takes.channel_id, admission)
        if admission not in (Admission.STARTED, Admission.QUEUED):
            await store.not_made(takes.answer_id)
            await self._follow_up(interaction, PressRefusal.NOT_QUEUED.words)
            channel = await find_channel(self._bot, self._library, int(takes.channel_id))
            if channel is not None:
                await self._show(store, channel, takes)
        return None

    async def _swipe(
        self, store: TakeStore, interaction: Any, takes: Takes, press: Press
    ) -> Text | None:
        index = swiped(takes, press)
        if index is None:
            return PressRefusal.NO_MORE.words
        parts = await store.parts(takes.answer_id, index)
        was = await store.parts(takes.answer_id, takes.shown)
        if not parts or not await store.begin_making(takes.answer_id):
            return not_begun(await store.of(takes.answer_id)).words  # frozen since it was read?
        try:
            await interaction.response.defer()
        except call_failures(self._library) as error:
            log.warning("a swipe could not be answered: %s", error)
        number, messages, last = index, list(takes.messages), None
        channel = await find_channel(self._bot, self._library, int(takes.channel_id))
        try:
            written = None if channel is None else await self._write(channel, takes, parts)
            if written is not None:
                messages = written
            elif channel is not None:  # Discord lost a write: the take shown before goes back
                number = takes.shown
                messages = (await self._write(channel, takes, was) if was else None) or messages
                last = was[-1] if len(was) == len(messages) else None
        finally:
            shown = await store.swiped(takes.answer_id, number, messages)
        if channel is not None and shown is not None:
            was_last = takes.messages[-1]
            if was_last in shown.messages[:-1]:  # more messages now: its buttons move on
                await self._components(channel, takes, was_last, None)
            await self._show(store, channel, shown, last)
        if number != index:
            await self._follow_up(interaction, PressRefusal.NOT_SHOWN.words)
        return None

    async def _tell(self, interaction: Any, why: Text) -> None:
        """Why the press did nothing, only to the presser, in their language."""
        try:
            told = say(why, of_interaction(interaction))
            await interaction.response.send_message(told, ephemeral=True)
        except call_failures(self._library) as error:
            log.warning("a press of a take button could not be answered: %s", error)

    async def _follow_up(self, interaction: Any, why: Text) -> None:
        """`_tell`, once the press was answered already (its buttons taken off, or deferred)."""
        try:
            told = say(why, of_interaction(interaction))
            await interaction.followup.send(told, ephemeral=True)
        except call_failures(self._library) as error:
            log.warning("a press of a take button could not be told why: %s", error)

    # -- the answer's messages ------------------------------------------------------------------

    async def _write(self, channel: Any, takes: Takes, parts: Sequence[str]) -> list[str] | None:
        """The answer's messages show `parts`: those it has edited in order, more posted
        after them, the rest deleted (`layout`); the messages that show it now. None: Discord
        lost one of its writes (after the one asking again), and the answer's messages show
        only some of `parts` (those it posted past them deleted again)."""
        planned = layout(takes.messages, parts)
        port = TakePort(await self._port(channel, takes), takes.messages)
        shown: list[str] = []
        try:
            for part in parts:
                shown.append(await port.send(part, reply_to=None, urgency=Urgency.FIRST))
        except DeliveryError as error:
            log.warning("channel %s: a take could not be shown whole: %s", channel.id, error)
            await self._delete(channel, takes.persona, shown[len(takes.messages) :])
            return None
        await self._delete(channel, takes.persona, planned.deleted)
        await self._posted(channel, takes, [m for m in shown if m not in takes.messages])
        return shown

    async def _posted(self, channel: Any, takes: Takes, message_ids: Sequence[str]) -> None:
        """A persona's take posted past the answer's messages: those are its own too, or the
        next turns would show them as an unknown webhook's. A database that fails is logged:
        the take is shown all the same."""
        if not message_ids or takes.persona is None or takes.guild_id is None:
            return
        try:
            persona = await self._persona_of(takes.guild_id, takes.persona)
            if persona is not None:
                await self._persona_posted(takes.guild_id, str(channel.id), persona, message_ids)
        except Exception:
            log.exception("channel %s: could not record the messages of a take", channel.id)

    async def _port(self, channel: Any, takes: Takes) -> ChannelPort:
        """The port the answer's messages are written through: the bot's, or its persona's
        (pinging nobody: a take shown again is no new mention)."""
        bot_port = LibraryPort(self._library, channel, self._pacing, self._memory)
        if takes.persona is None or takes.guild_id is None:
            return bot_port
        persona = await self._persona_of(takes.guild_id, takes.persona)
        if persona is None:
            return bot_port
        return PersonaPort(
            self._library,
            channel,
            self._pacing,
            self._webhooks,
            persona,
            bot_port,
            self._memory,
        )

    async def _show(
        self, store: TakeStore, channel: Any, takes: Takes, text: str | None = None
    ) -> None:
        """The buttons on the answer's last message, showing which take it is (with `text`,
        its text, if given); taken off again if the channel went on meanwhile (the freeze's
        edit may have landed first)."""
        if takes.state is not TakeState.OPEN:
            return
        last = takes.messages[-1]
        view = self._buttons(takes, of_channel(channel))
        await self._components(channel, takes, last, view, text)
        now = await store.of(takes.answer_id)
        if now is None or now.state is TakeState.FROZEN:
            await self._components(channel, takes, last, None)

    def _buttons(self, takes: Takes, locale: str) -> Any:
        """◀, the counter, ▶ and Regenerate, labelled in `locale` (the server's)."""
        answer = takes.answer_id

        def label(press: Press) -> str:
            return say(takes.counter if press is Press.COUNT else said(LABELS[press]), locale)

        view = self._library.buttons(
            (label(Press.PREVIOUS), custom_id(answer, Press.PREVIOUS), "secondary"),
            (label(Press.COUNT), custom_id(answer, Press.COUNT), "secondary"),
            (label(Press.NEXT), custom_id(answer, Press.NEXT), "secondary"),
            (label(Press.REGENERATE), custom_id(answer, Press.REGENERATE), "primary"),
        )
        disabled = {custom_id(answer, Press.COUNT)}
        if takes.shown == 0:
            disabled.add(custom_id(answer, Press.PREVIOUS))
        if takes.shown == takes.count - 1:
            disabled.add(custom_id(answer, Press.NEXT))
        for item in view.children:
            item.disabled = item.custom_id in disabled
        return view

    async def _components(
        self, channel: Any, takes: Takes, message_id: str, view: Any, text: str | None = None
    ) -> None:
        """Put `view` on one of the answer's messages (None: take its buttons off), and `text`
        with them if given (the take they count, put back: `_made`), as a tidy-up
        (`DiscordPacing.tidy`), asked once more if it may not have landed, as every write is.
        Buttons are never worth a turn: whatever this edit meets (a wait past `TIDY_WITHIN_S`
        too) is logged, and the turn goes on."""
        try:
            async with asyncio.timeout(TIDY_WITHIN_S):
                webhook = None
                if takes.persona is not None:
                    webhook = await self._webhooks.of(channel)
                shown = {} if text is None else await self._text(takes, webhook, text)

                async def edit() -> None:
                    await self._pacing.tidy(channel.id, None if webhook is None else webhook.id)
                    if webhook is not None:
                        await self._stateful(webhook).edit_message(
                            int(message_id), view=view, **shown, **self._thread(channel)
                        )
                    else:
                        await channel.get_partial_message(int(message_id)).edit(view=view, **shown)

                await asked_once_more(self._library, edit)
        except Exception as error:
            if text is not None:
                self._memory.forget(channel.id)  # it may show either text
            log.warning("channel %s: the takes' buttons could not change: %r", channel.id, error)
            return
        if text is not None:
            self._memory.wrote(channel.id, int(message_id), text, new=False)

    async def _text(self, takes: Takes, webhook: Any, text: str) -> dict[str, Any]:
        """What an edit putting `text` back on one of the answer's messages carries: the text
        as the answer's port wrote it (a persona without its webhook named before it), which
        pings no one (a take shown again is no new mention)."""
        if takes.persona is not None and webhook is None and takes.guild_id is not None:
            persona = await self._persona_of(takes.guild_id, takes.persona)
            if persona is not None:
                text = named(persona.name, text)
        return {"content": as_shown(text), "allowed_mentions": pings_for(self._library, ())}

    def _thread(self, channel: Any) -> dict[str, Any]:
        """What a webhook's request names when its message is in a thread (its parent owns
        the webhook)."""
        return {"thread": channel} if home_of(self._library, channel) is not channel else {}

    def _stateful(self, webhook: Any) -> Any:
        """The webhook with the bot's state, which nextcord wants before it edits components
        (its partial webhooks have none; discord.py's carry the client's)."""
        if not self._library.is_nextcord:
            return webhook
        data = {"id": webhook.id, "type": 1, "token": webhook.token}
        module = self._library.module
        return module.Webhook(data, session=webhook.session, state=self._bot._connection)

    async def _delete(self, channel: Any, persona: str | None, message_ids: Sequence[str]) -> None:
        """Delete the answer's messages a take did not need."""
        if not message_ids:
            return
        webhook = await self._webhooks.of(channel) if persona is not None else None
        for message_id in message_ids:
            try:
                await self._pacing.write(channel.id, Urgency.LAST)
                if webhook is not None:
                    await webhook.delete_message(int(message_id))
                else:
                    await channel.get_partial_message(int(message_id)).delete()
            except call_failures(self._library) as error:
                log.warning("channel %s: message %s stays: %s", channel.id, message_id, error)
        self._memory.deleted(channel.id, [int(m) for m in message_ids])
