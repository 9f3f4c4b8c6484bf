"""The core's delivery protocols implemented over a real library channel.

Every send allows user mentions only: never @everyone, @here or roles, whatever the model
wrote, and a reply does not ping the person replied to. Library exceptions become the core's
delivery outcomes: a 403 or a missing channel ends the turn as unreachable, a 429 that got
through the library's own retries is waited out, a 5xx or no answer at all (a dropped
connection, a reset, a timeout) is `MaybeDelivered`, and any other status loses that one
message. A persona's webhook adds its own case: a 404 of an unknown webhook and a 403 are its
own failures (the bot's identity speaks instead), not the channel's. `delivery_errors` is that
one translation, for the bot's messages, its notices and the webhooks' alike.

A write that may have been delivered is asked once more (`PacedPort`; an edit of a message's
buttons alone, `asked_once_more`), never twice over: an edit says the whole text (or the
whole of its buttons), so asking again changes nothing if the first landed; a create by the
bot carries a nonce Discord enforces (`Library.send`), so asked again it returns the message
the first made, if it made one; Execute Webhook takes no nonce, so a persona's create is first
looked for in the channel (`WebhookPort`).

Every message the bot or a persona writes leaves through one `PacedPort` (`LibraryPort`, or
`tomori_cog.webhooks.WebhookPort`): the request budget, the translation and the channel's
memory, in that order, written once. Every other call into the library (a history read,
typing, a webhook's creation, a message lookup) catches `call_failures`, declared here.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import aiohttp

from tomori.delivery.notices import Notice, NoticeColour
from tomori.delivery.port import (
    DeliveryFailed,
    DeliveryRateLimited,
    DestinationUnreachable,
    Urgency,
    as_shown,
)
from tomori.words import ENGLISH
from tomori_cog.library import Library
from tomori_cog.locales import of_channel
from tomori_cog.pacing import DiscordPacing

if TYPE_CHECKING:
    from tomori_cog.stop_buttons import AnswerButton

log = logging.getLogger(__name__)

COLOURS = {
    NoticeColour.WARNING: 0xF1C40F,
    NoticeColour.ERROR: 0xE74C3C,
    NoticeColour.SUCCESS: 0x2ECC71,
}


CONNECTION_ERRORS: tuple[type[BaseException], ...] = (aiohttp.ClientError, OSError)
"""What a request that got no HTTP answer raises (`TimeoutError` is an `OSError`)."""


def call_failures(library: Library) -> tuple[type[BaseException], ...]:
    """What a Discord call raises when it failed: an error status, or no answer at all.

    Every call the cog makes outside delivery catches exactly this: a dropped connection is
    as ordinary as a 500, and letting it escape would end the turn with nothing said.
    """
    return (library.module.HTTPException, *CONNECTION_ERRORS)


def may_have_landed(library: Library, error: BaseException) -> bool:
    """Whether a write that raised `error` may have been done anyway: Discord failed (a 5xx
    past the library's own retries) or never answered (the connection dropped, reset or
    timed out)."""
    if isinstance(error, CONNECTION_ERRORS):
        return True
    status = getattr(error, "status", None)
    http_error = isinstance(error, library.module.HTTPException)
    return http_error and isinstance(status, int) and status >= 500


async def asked_once_more(library: Library, edit: Callable[[], Awaitable[None]]) -> None:
    """Make `edit`, one of a message's components (the buttons an answer shows), asked once
    more if it may not have landed, as every write is (`PacedPort`): it says the components
    whole, so asked again it changes nothing if the first landed. What the second asking
    meets, or any other failure, is raised."""
    try:
        await edit()
    except call_failures(library) as error:
        if not may_have_landed(library, error):
            raise
        log.info("an edit of a message's buttons may not have landed (%r): asked again", error)
        await edit()


MAX_PINGED = 100
"""Discord takes at most 100 users in an allowed-mentions list."""


def pings_for(library: Library, involved: Collection[int]) -> Any:
    """What a message the bot writes may ping: only the users `involved` in the conversation
    (never @everyone, @here or a role, nor anyone else a model names), and not the author of
    the message it replies to."""
    users = [library.module.Object(id=user) for user in sorted(involved)[:MAX_PINGED]]
    return library.module.AllowedMentions(
        everyone=False, roles=False, users=users or False, replied_user=False
    )


def embed_for(library: Library, notice: Notice, locale: str = ENGLISH) -> Any:
    """`notice` as an embed, in `locale`'s words (`tomori_cog.locales`)."""
    notice = notice.in_locale(locale)
    return library.module.Embed(
        title=notice.title, description=notice.description, colour=COLOURS[notice.colour]
    )


def reply_reference(library: Library, channel: Any, message_id: str | int | None) -> Any:
    """What makes a send reply to `message_id` in `channel` (None: no reply); a reply to a
    message deleted meanwhile is sent as a plain message rather than refused."""
    if message_id is None:
        return None
    return library.module.MessageReference(
        message_id=int(message_id), channel_id=channel.id, fail_if_not_exists=False
    )


class WriteMemory(Protocol):
    """What the cog remembers of a channel, told of each write the bot made there."""

    def wrote(self, channel_id: int, message_id: int, content: str, *, new: bool) -> None: ...

    def forget(self, channel_id: int) -> None: ...


class PacedPort:
    """A `ChannelPort`'s one way to Discord: every send and edit waits for its place in the
    request budget (`writable`), is made under the one error translation (`delivery_errors`),
    is asked once more if it may not have landed (see the module), and is told to the channel's
    memory, which forgets the channel when a write failed (it may have reached Discord anyway).
    Subclasses say only how the request is made.

    A writer that awaits `writable` first composes its text once the request may leave (so
    text that arrived meanwhile goes with it); a send or edit without it waits here.
    """

    through_webhook = False
    """Whether a 404 of an unknown webhook and a 403 are the port's own (see the module)."""

    def __init__(
        self,
        library: Library,
        channel: Any,
        pacing: DiscordPacing,
        memory: WriteMemory,
        involved: Collection[int] = (),
        button: AnswerButton | None = None,
    ) -> None:
        """`involved`: the users its messages may ping (see `pings_for`); `button`: the Stop
        button of the answer it posts, which its first message carries."""
        self._library = library
        self._channel = channel
        self._pacing = pacing
        self._memory = memory
        self._pings = pings_for(library, involved)
        self._reserved = False
        self._button = button

    async def writable(self, urgency: Urgency) -> None:
        if not self._reserved:
            await self._reserve(urgency)
            self._reserved = True

    async def send(self, content: str, *, reply_to: str | None, urgency: Urgency) -> str:
        shown, nonce, asked_at = as_shown(content), new_nonce(), time.time()
        view = None if self._button is None else self._button.wanted()
        try:
            message_id = await self._create(shown, reply_to, nonce, urgency, view)
        except MaybeDelivered as failed:
            log.info("channel %s: a message may not have landed: %s", self._channel.id, failed)
            found = await self._landed(shown, asked_at, failed)
            message_id = found or await self._create(shown, reply_to, nonce, urgency, view)
        self._memory.wrote(self._channel.id, int(message_id), content, new=True)
        if view is not None and self._button is not None:
            self._button.posted(self, message_id)
        return message_id

    async def edit(self, message_id: str, content: str, *, urgency: Urgency) -> None:
        """Change a message's text; the first write of an answer that posts none of its own (a
        new take, written into the answer's messages) carries its Stop button too."""
        shown = as_shown(content)
        view = None if self._button is None else self._button.wanted()
        try:
            await self._change(message_id, shown, urgency, view)
        except MaybeDelivered as failed:
            log.info("channel %s: an edit may not have landed: %s", self._channel.id, failed)
            await self._change(message_id, shown, urgency, view)  # the whole: landed, the same
        self._memory.wrote(self._channel.id, int(message_id), content, new=False)
        if view is not None and self._button is not None:
            self._button.posted(self, message_id)

    async def _create(
        self, shown: str, reply_to: str | None, nonce: str, urgency: Urgency, view: Any
    ) -> str:
        await self.writable(urgency)
        self._reserved = False
        with self._remembered():
            return await self._post(shown, reply_to, nonce, view)

    async def _change(self, message_id: str, shown: str, urgency: Urgency, view: Any) -> None:
        await self.writable(urgency)
        self._reserved = False
        with self._remembered():
            await self._revise(message_id, shown, view)

    async def _landed(self, shown: str, asked_at: float, failed: MaybeDelivered) -> str | None:
        """After a create that may have landed: its message's ID if it is known to be in the
        channel; None to ask again (safe: see the module); raises `failed` if neither can be
        told."""
        return None  # the bot's creates carry their nonce: asked again, the first is returned

    @contextmanager
    def _remembered(self) -> Iterator[None]:
        try:
            with delivery_errors(self._library, self._refused, webhook=self.through_webhook):
                yield
        except BaseException:
            self._memory.forget(self._channel.id)
            raise

    async def _reserve(self, urgency: Urgency) -> None:
        await self._pacing.write(self._channel.id, urgency)

    def _refused(self, wait: float) -> None:
        """Discord answered 429 past the library's retries: the bucket waits `wait`."""
        self._pacing.refused(self._channel.id, wait)

    async def unbutton(self, message_id: str) -> None:
        """Take the buttons of `message_id` (which this port posted) away, once a tidy-up may
        leave (`DiscordPacing.tidy`), asked once more if it may not have landed."""
        await asked_once_more(self._library, lambda: self._unbutton(message_id))

    async def _unbutton(self, message_id: str) -> None:
        """Wait for room for a tidy-up, then edit the message's buttons away."""
        raise NotImplementedError

    async def _post(self, content: str, reply_to: str | None, nonce: str, view: Any) -> str:
        """Create the message (carrying `view`'s buttons, unless None)."""
        raise NotImplementedError

    async def _revise(self, message_id: str, content: str, view: Any) -> None:
        """Edit the message's text (and put `view`'s buttons on it, unless None: its buttons
        stay as they are)."""
        raise NotImplementedError


def new_nonce() -> str:
    """A create's nonce: random, so no two of the bot's messages share one, and within the 25
    characters Discord takes."""
    return str(secrets.randbits(64))


class LibraryPort(PacedPort):
    """`ChannelPort` over a nextcord or discord.py channel, as the bot."""

    def __init__(
        self,
        library: Library,
        channel: Any,
        pacing: DiscordPacing,
        memory: WriteMemory,
        involved: Collection[int] = (),
        button: AnswerButton | None = None,
    ) -> None:
        super().__init__(library, channel, pacing, memory, involved, button)
        self._sent: dict[str, Any] = {}

    async def _post(self, content: str, reply_to: str | None, nonce: str, view: Any) -> str:
        message = await self._library.send(
            self._channel,
            content,
            reference=reply_reference(self._library, self._channel, reply_to),
            allowed_mentions=self._pings,
            nonce=nonce,
            view=view,
        )
        self._sent[str(message.id)] = message
        return str(message.id)

    async def _unbutton(self, message_id: str) -> None:
        await self._pacing.tidy(self._channel.id)
        await self._message(message_id).edit(view=None)

    async def _revise(self, message_id: str, content: str, view: Any) -> None:
        buttons = {} if view is None else {"view": view}
        await self._message(message_id).edit(
            content=content, allowed_mentions=self._pings, **buttons
        )

    def _message(self, message_id: str) -> Any:
        """The message to edit: one it sent, or one it did not (a new take written into an
        answer's messages) by its ID."""
        return self._sent.get(message_id) or self._channel.get_partial_message(int(message_id))


UNKNOWN_WEBHOOK = 10015
"""Discord's error code for a webhook that no longer exists (deleted, or its channel gone)."""


class MaybeDelivered(DeliveryFailed):
    """Discord failed (a 5xx past the library's own retries) or never answered (the connection
    dropped, reset or timed out): what was asked may have been done, or not."""


class WebhookGone(DeliveryFailed):
    """Discord says the channel's webhook no longer exists."""


class WebhookRefused(DeliveryFailed):
    """Discord refused the webhook's request (403): the bot's identity posts instead."""


@contextmanager
def delivery_errors(
    library: Library, rate_limited: Callable[[float], None], *, webhook: bool = False
) -> Iterator[None]:
    """The one translation of the library's errors for a send or an edit into the core's
    delivery outcomes (see the module docstring); `rate_limited` is told a 429's wait. For a
    `webhook`'s request, a 404 of an unknown webhook is `WebhookGone` and a 403 is
    `WebhookRefused` (the bot's identity speaks instead), not the channel unreachable."""
    lib = library.module
    try:
        yield
    except CONNECTION_ERRORS as error:
        raise MaybeDelivered(f"connection error: {type(error).__name__}") from error
    except lib.HTTPException as error:
        status, code = getattr(error, "status", None), getattr(error, "code", None)
        said = f"{status} {getattr(error, 'text', '')}".strip()
        if webhook and isinstance(error, lib.NotFound) and code == UNKNOWN_WEBHOOK:
            raise WebhookGone(said) from error
        if webhook and isinstance(error, lib.Forbidden):
            raise WebhookRefused(said) from error
        if not webhook and isinstance(error, lib.Forbidden | lib.NotFound):
            forbidden = isinstance(error, lib.Forbidden)
            raise DestinationUnreachable(said, forbidden=forbidden) from error
        if status == 429:
            retry_after = float(getattr(error, "retry_after", None) or 1.0)
            rate_limited(retry_after)
            raise DeliveryRateLimited(retry_after) from error
        if may_have_landed(library, error):
            raise MaybeDelivered(f"HTTP {status}") from error
        raise DeliveryFailed(f"HTTP {status}") from error


class EmbedNotices:
    """`NoticeSink` posting notices as embeds in the turn's channel.

    With `reply_to`, each notice replies to that message (without pinging its author), so a
    notice meant for one person says whom it is for in a busy channel.
    """

    def __init__(
        self,
        library: Library,
        channel: Any,
        pacing: DiscordPacing,
        reply_to: int | None = None,
    ) -> None:
        self._library = library
        self._channel = channel
        self._pacing = pacing
        self._reply_to = reply_to

    async def post_notice(self, notice: Notice) -> None:
        await self._pacing.write(self._channel.id, Urgency.FIRST)
        channel_id = self._channel.id
        with delivery_errors(self._library, lambda wait: self._pacing.refused(channel_id, wait)):
            await self._channel.send(
                embed=embed_for(self._library, notice, of_channel(self._channel)),
                reference=reply_reference(self._library, self._channel, self._reply_to),
                allowed_mentions=self._library.module.AllowedMentions.none(),
            )


TYPING_RETRY_S = 1.0
"""How soon a typing indicator the budget had no room for is tried again."""


async def keep_typing(
    library: Library,
    channel: Any,
    interval_s: float,
    pacing: DiscordPacing,
    shown: Callable[[], bool],
) -> None:
    """Show "typing" in the channel while the turn has shown nothing yet (`shown` says when it
    has), until cancelled, or until Discord refuses it (logged).

    Discord shows one for about ten seconds, so it is refreshed every `interval_s` while the
    channel waits on the model, the files or a tool, and never once the answer's text flows:
    the text itself shows the bot at work, and each refresh would spend a request of the
    channel's rate-limit bucket that the answer needs. It goes only when none of the bot's
    requests waits for the budget (`DiscordPacing.may_type`); else it is tried again shortly.
    """
    try:
        while not shown():
            typed = pacing.may_type()
            if typed:
                await library.trigger_typing(channel)
            await asyncio.sleep(interval_s if typed else TYPING_RETRY_S)
    except call_failures(library) as error:
        log.info("typing indicator stopped in channel %s: %r", channel.id, error)


async def find_channel(bot: Any, library: Library, channel_id: int) -> Any:
    """The channel from the library's cache, else from Discord; None if Discord refuses it."""
    channel = bot.get_channel(channel_id)
    if channel is not None:
        return channel
    try:
        return await bot.fetch_channel(channel_id)
    except call_failures(library) as error:
        log.info("could not fetch channel %s: %r", channel_id, error)
        return None
