"""Discord's REST API as a bot sees it, rate limits included, on a real local socket.

`DiscordRestServer` is an aiohttp server on 127.0.0.1 (a free port) that answers the
endpoints tomori-cog and the two Discord libraries use, and enforces Discord's documented
limits the way Discord does, so that a test or a benchmark sees what a bot would meet in
production and not what an unlimited fake lets through:

- a global limit per bot token (50 requests per second, counted in fixed windows, each
  opened by the first request after the last one closed), from which interaction callbacks
  and webhooks, authorized by their own tokens, are exempt; a 429 for it carries
  `X-RateLimit-Global: true`, `X-RateLimit-Scope: global` and
  `{"global": true, "retry_after": s}`;
- channel webhooks as Discord keeps them: created by the bot (`POST /channels/{id}/webhooks`,
  403 without the permission: `refuse_webhooks`), executed by their token (`?wait=true`
  answers the message, posted in the channel under the name and avatar asked), their messages
  edited and deleted, and 404 10015 (Unknown Webhook) once deleted (`delete_webhook`); the
  bot's own (the application's) send buttons, a webhook a member made does not
  (`webhook_components`, `add_user_webhook`);
- per-route buckets, keyed by the route's bucket hash AND its major parameter (the channel,
  the guild, or the webhook id and token). `X-RateLimit-Bucket` names the hash alone, the
  same for every channel, as Discord's does: a client has to add the major parameter itself;
- the headers Discord sends (`X-RateLimit-Limit`, `-Remaining`, `-Reset`, `-Reset-After`,
  `-Bucket`, and `X-RateLimit-Scope` with `Retry-After` on a 429), and `Via: 1.1 google` on
  every answer of the API: both libraries read a 429 without `Via` as a Cloudflare ban;
- invalid requests (401, 403, and 429 except scope `shared`) counted over a sliding window
  (10 minutes); past the threshold (10,000) the IP is banned for a while (an hour), and every
  request then gets Cloudflare's 429: no `Via`, a text body;
- a message create's `nonce` as Discord documents it: at most 25 characters (else 400 50035),
  echoed in the message, and with `enforce_nonce` checked for uniqueness over the last few
  minutes (`NONCE_WINDOW_S`): a create with the nonce of a message the same author created
  then gets that message back, and nothing new is created;
- the bot's own reactions (Create Reaction, Delete Own Reaction: one bucket per channel, one
  request per 0.25 s), logged in order so a test asserts what a message showed over time
  (`marks_of`, `reactions_on`);
- Discord's own failures, on demand (`fail_next`): a route's next requests answered with a 5xx,
  or their connection dropped unanswered, with what they asked done or not (`landed`), which
  neither says.

Both real HTTP clients reach it by setting their `Route.BASE` to `server.api_base`
(`nextcord.http.Route.BASE`, `discord.http.Route.BASE`; their webhook and interaction
adapters build URLs from the same constant): `pointed_at(server.api_base)` does it for the
duration of a `with` block. Per channel the server keeps the messages as a channel shows them
(content, embeds, the text of each edit, the reply reference, the allowed mentions asked for),
and it counts what a test or bench reads: requests in total and per second, 429s by scope and by
route, invalid requests in the window, and whether the IP is banned.

The default figures are Discord's where it documents them (the global limit, the invalid
request threshold and ban); per-route figures Discord only announces in headers, so the
defaults are the values its headers show for the routes that matter here (5 per 5 s per
channel for message creates, edits and typing; 5 per 2 s per webhook), and 5 per second for
the others (reads, command sync, login), which no figure measured here depends on. Every one
is a constructor parameter (`route_limits`), and `server.route_limits` may be changed before a
route's first request.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import os
import re
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from aiohttp import web

API_PREFIX = "/api/v10"
CONTROL_MESSAGES = "/_control/messages"
"""Not Discord's: a bot in another process posts here what a user said (the message object),
as `add_message` does in this one; nothing counts it."""
_TOKENLESS = frozenset({"webhook", "interaction_callback"})
VIA = "1.1 google"
RATE_LIMITED = "You are being rate limited."
NONCE_WINDOW_S = 300.0
"""How long a create's nonce is checked for uniqueness: Discord says "the past few minutes"."""
MAX_NONCE_CHARS = 25


@dataclass(frozen=True)
class RouteLimit:
    """A bucket's size: `limit` requests per `window` seconds, per major parameter."""

    limit: int
    window: float


DEFAULT_ROUTE_LIMITS: Mapping[str, RouteLimit] = {
    "message_create": RouteLimit(5, 5.0),
    "message_edit": RouteLimit(5, 5.0),
    "typing": RouteLimit(5, 5.0),
    "history": RouteLimit(5, 1.0),
    "message_get": RouteLimit(5, 1.0),
    "channel_get": RouteLimit(5, 1.0),
    "webhook": RouteLimit(5, 2.0),
    "webhook_create": RouteLimit(5, 1.0),
    "webhooks_get": RouteLimit(5, 1.0),
    "interaction_callback": RouteLimit(5, 1.0),
    "member_get": RouteLimit(5, 1.0),
    "commands": RouteLimit(5, 1.0),
    "users_me": RouteLimit(5, 1.0),
    "gateway": RouteLimit(5, 1.0),
    # -- takes (issue 36): a message's delete, 204 (docs: Channel, Delete Message) ----------
    "message_delete": RouteLimit(5, 1.0),
    "reaction": RouteLimit(1, 0.25),
}
"""The routes the server answers, by name, with their default bucket sizes."""

DISCORD_EPOCH_MS = 1_420_070_400_000


class Snowflakes:
    """Discord IDs as Discord makes them: milliseconds since its epoch, then ten bits naming
    the process that made the ID, then a 12-bit count within the millisecond. Two processes
    (the bench's bots on one token and one database) never make the same ID, even in the same
    millisecond; one process's IDs only grow."""

    def __init__(self, process: int) -> None:
        self.process = process & 0x3FF
        self._last_ms = 0
        self._count = 0

    def next(self, now_ms: int | None = None) -> int:
        ms = max(self._last_ms, now_ms if now_ms is not None else int(time.time() * 1000))
        if ms == self._last_ms:
            self._count += 1
            if self._count > 0xFFF:
                ms, self._count = ms + 1, 0
        else:
            self._count = 0
        self._last_ms = ms
        return ((ms - DISCORD_EPOCH_MS) << 22) | (self.process << 12) | self._count


_snowflakes = Snowflakes(os.getpid())


def new_snowflake() -> int:
    """A fresh Discord ID, later than every one made before in this process and unlike any
    another process makes."""
    return _snowflakes.next()


def _now_iso() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class ChannelMessage:
    """One message as a channel shows it, with what the bot asked for when it sent it.

    `payload` is the message object as Discord returns it, kept as JSON text (a client mutates
    what it is given, and a server's store is not the bot's garbage to collect);
    `versions` holds the content after the create and after each edit, oldest first."""

    payload_json: str
    allowed_mentions: dict[str, Any] | None = None
    versions: list[str] = field(default_factory=list)
    created_at: float = field(default_factory=time.monotonic)
    """When the server stored it (`time.monotonic()` of the server's process)."""
    changed_at: float = field(default_factory=time.monotonic)
    """When it was created or last edited."""
    text_at: float = field(default_factory=time.monotonic)
    """When it was created or its text (content, embeds) last edited: an edit of its
    components alone (an answer's buttons) leaves it."""
    avatar_url: str | None = None
    """The avatar a webhook's execute asked for (Discord shows it as the author's)."""

    @property
    def payload(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.payload_json)
        return loaded

    @property
    def pinged(self) -> set[int]:
        """The users Discord notified of this message, as its content and allowed mentions
        decide (`pinged_users`); an edit notifies no one new, so the first version counts."""
        return pinged_users(self.versions[0] if self.versions else "", self.allowed_mentions)

    @property
    def pings_everyone(self) -> bool:
        first = self.versions[0] if self.versions else ""
        parse = (self.allowed_mentions or {"parse": ["everyone"]}).get("parse") or []
        return ("@everyone" in first or "@here" in first) and "everyone" in parse

    @property
    def id(self) -> int:
        return int(self.payload["id"])

    @property
    def author_id(self) -> int:
        return int(self.payload["author"]["id"])

    @property
    def content(self) -> str:
        content: str = self.payload["content"]
        return content

    @property
    def embeds(self) -> list[dict[str, Any]]:
        embeds: list[dict[str, Any]] = self.payload["embeds"]
        return embeds

    @property
    def webhook_id(self) -> int | None:
        """The webhook that posted it, if one did."""
        webhook = self.payload.get("webhook_id")
        return int(webhook) if webhook else None

    @property
    def username(self) -> str:
        """The author's name as the channel shows it (a webhook message's: the one it asked)."""
        name: str = self.payload["author"]["username"]
        return name

    @property
    def reply_to(self) -> int | None:
        """The message it replies to, if it is a reply."""
        reference = self.payload.get("message_reference")
        return int(reference["message_id"]) if reference else None


@dataclass(frozen=True)
class ReactionChange:
    """One reaction request of the bot that Discord took (issue 36, progress)."""

    at: float
    """`time.monotonic()` of the server's process."""
    channel_id: int
    message_id: int
    emoji: str
    added: bool
    changed: bool
    """Whether it changed what the message shows (adding one it had changes nothing)."""


@dataclass
class _Bucket:
    """A fixed window: `used` requests since `started` (monotonic seconds)."""

    limit: RouteLimit
    started: float = 0.0
    used: int = 0

    def roll(self, now: float) -> None:
        if now >= self.started + self.limit.window:
            self.started = now
            self.used = 0

    def reset_after(self, now: float) -> float:
        return max(0.0, self.started + self.limit.window - now)


@dataclass(frozen=True)
class _Matched:
    name: str
    major: str
    params: dict[str, str]


USER_MENTION = re.compile(r"<@!?(\d+)>")


def pinged_users(content: str, allowed: Mapping[str, Any] | None) -> set[int]:
    """Who a message notifies, as Discord decides: every user it names as `<@id>` when no
    allowed mentions are sent or they parse users; else those of the names it lists."""
    named = {int(found) for found in USER_MENTION.findall(content)}
    if allowed is None or "users" in (allowed.get("parse") or []):
        return named
    return named & {int(user) for user in allowed.get("users") or []}


def check_allowed_mentions(allowed: Mapping[str, Any] | None) -> None:
    """Discord refuses a body that both parses a kind of mention and lists it, or lists more
    than 100 (400, Invalid Form Body)."""
    if not allowed:
        return
    parse = allowed.get("parse") or []
    for kind in ("users", "roles"):
        listed = allowed.get(kind) or []
        if (kind in parse and listed) or len(listed) > 100:
            raise _Answer(400, 50035, "Invalid Form Body")


BUTTON_STYLES_WITH_ID = frozenset({1, 2, 3, 4})
"""Primary, secondary, success, danger: the button styles that carry a custom id (a link's
style 5 carries a url, a premium button's 6 a SKU)."""


def checked_components(components: object) -> list[dict[str, Any]]:
    """A message's components as Discord keeps them; 400 Invalid Form Body for what it
    refuses: at most 5 action rows (type 1) of at most 5 buttons (type 2), each button's
    label at most 80 characters, its custom id 1 to 100 and unique in the message."""
    if components is None:
        return []
    if not isinstance(components, list) or len(components) > 5:
        raise _Answer(400, 50035, "Invalid Form Body")
    seen: set[str] = set()
    for row in components:
        children = row.get("components") if isinstance(row, dict) else None
        if row.get("type") != 1 or not isinstance(children, list) or not 1 <= len(children) <= 5:
            raise _Answer(400, 50035, "Invalid Form Body")
        for button in children:
            custom_id = button.get("custom_id")
            if (
                button.get("type") != 2
                or button.get("style") not in BUTTON_STYLES_WITH_ID
                or not isinstance(custom_id, str)
                or not 1 <= len(custom_id) <= 100
                or custom_id in seen
                or len(str(button.get("label") or "")) > 80
            ):
                raise _Answer(400, 50035, "Invalid Form Body")
            seen.add(custom_id)
    return [dict(row) for row in components]


def webhook_components(
    webhook: Mapping[str, Any], body: Mapping[str, Any], query: Mapping[str, str]
) -> Mapping[str, Any]:
    """An execute's or an edit's body as Discord takes it from `webhook`: an application-owned
    webhook (one a bot created) can always send components; any other has its `components`
    ignored unless the request sets `with_components`, and even then may send no interactive
    one (a button with a custom id: 400 Invalid Form Body)."""
    if "components" not in body or webhook.get("application_id"):
        return body
    if query.get("with_components", "").lower() not in ("true", "1"):
        return {key: value for key, value in body.items() if key != "components"}
    for row in body.get("components") or []:
        for component in row.get("components") or []:
            if component.get("type") != 2 or component.get("style") in BUTTON_STYLES_WITH_ID:
                raise _Answer(400, 50035, "Invalid Form Body")
    return body


@dataclass
class _Failure:
    """Requests of a route that fail (see `DiscordRestServer.fail_next`)."""

    status: int | None
    """None: the connection is dropped without an answer."""
    landed: bool
    after: int
    times: int


class _Answer(Exception):
    """An HTTP error answer raised from deep in a handler, as Discord would send it."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"message": message, "code": code}


class DiscordRestServer:
    """Discord's REST API for one bot token, with its limits (see the module's docstring).

    Start it with `async with DiscordRestServer() as server:` (or `start()` and `close()`);
    `server.api_base` is what a client's `Route.BASE` must be. Channels are declared with
    `add_channel`; messages a user posted with `add_message` (the bot's own arrive over HTTP).
    """

    def __init__(
        self,
        *,
        token: str = "test-token",
        bot_user: Mapping[str, Any] | None = None,
        application_id: int | None = None,
        global_limit: int = 50,
        global_window: float = 1.0,
        route_limits: Mapping[str, RouteLimit] | None = None,
        invalid_threshold: int = 10_000,
        invalid_window: float = 600.0,
        ban_seconds: float = 3_600.0,
        latency: float = 0.0,
    ) -> None:
        """`route_limits` overrides some of `DEFAULT_ROUTE_LIMITS` by route name; `latency`
        is how long every answer is held back, in seconds, as a network and Discord would."""
        self.token = token
        self.bot_user: dict[str, Any] = dict(
            bot_user
            or {
                "id": str(new_snowflake()),
                "username": "bot",
                "discriminator": "0",
                "avatar": None,
                "global_name": None,
                "bot": True,
            }
        )
        self.application_id = application_id or int(self.bot_user["id"])
        self.global_limit = global_limit
        self.route_limits: dict[str, RouteLimit] = {**DEFAULT_ROUTE_LIMITS, **(route_limits or {})}
        self.invalid_threshold = invalid_threshold
        self.invalid_window = invalid_window
        self.ban_seconds = ban_seconds
        self.latency = latency

        self._channels: dict[int, dict[str, Any]] = {}
        self._messages: dict[int, list[ChannelMessage]] = {}
        self._refused: dict[int, tuple[int, int, str]] = {}
        self._commands: dict[int | None, list[dict[str, Any]]] = {}
        self.members: dict[tuple[int, int], dict[str, Any]] = {}
        """Each guild member as `GET /guilds/{guild}/members/{user}` answers it, by (guild,
        user): what Discord knows of their roles now, whatever a bot has cached."""
        self.interaction_callbacks: list[dict[str, Any]] = []
        self._answered_interactions: set[int] = set()
        self._pressed: dict[int, tuple[int, int]] = {}
        """The message each component interaction's press came from (`press_of`)."""
        """Each interaction callback's body (`type`, `data`), in order."""
        self.webhook_messages: dict[str, list[ChannelMessage]] = {}
        """Messages sent through a webhook (an interaction's followups included), by token."""
        self.channel_webhooks: dict[int, dict[str, Any]] = {}
        """The channels' webhooks by ID (the webhook objects Discord keeps), created with
        `POST /channels/{id}/webhooks`; `delete_webhook` removes one as a user would."""
        self._gone_webhooks: set[int] = set()
        self._webhooks_refused: set[int] = set()
        self._nonces: OrderedDict[tuple[str, str], tuple[float, ChannelMessage]] = OrderedDict()
        """The message each (author, nonce) created with `enforce_nonce`, and when, oldest
        first."""
        self._failing: dict[str, _Failure] = {}
        """By route name: its requests to fail (`fail_next`)."""
        self.failed: Counter[str] = Counter()
        """The requests answered with a failure (`fail_next`), by route name."""
        self.typed_in: list[int] = []
        """The channel of each typing request answered, in order."""
        self.reaction_log: list[ReactionChange] = []
        """Every reaction the bot added or removed, in order (`marks_of`, `reactions_on`)."""
        self._reactions_refused: set[int] = set()

        self._global = _Bucket(RouteLimit(global_limit, global_window))
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._invalid: deque[float] = deque()
        self._banned_until = 0.0
        self._started_at = time.monotonic()
        self.requests = 0
        """Requests of the bot token that reached the API (banned ones too); webhooks and
        interaction callbacks, authorized by their own tokens, are counted by route only."""
        self.requests_by_second: Counter[int] = Counter()
        """Requests of the bot token per whole second since the server started."""
        self._last_second: deque[float] = deque()
        """When each request of the token in the last second came (for `busiest_second`)."""
        self._busiest_span = 0
        self.requests_by_route: Counter[str] = Counter()
        self.component_edits = 0
        """Edits of a message's components alone (its text left as it is): buttons put on or
        taken off."""
        self.rate_limited: Counter[str] = Counter({"global": 0, "user": 0, "shared": 0})
        """429s answered, by `X-RateLimit-Scope` (bans are counted in `banned_requests`).
        Discord answers `shared` for resources other bots share (emoji, for one) that the cog
        does not use: this server never does, and the count stays 0."""
        self.rate_limited_by_route: Counter[str] = Counter()
        self.banned_requests = 0
        self.invalid_total = 0
        """Invalid requests (401, 403, 429 except `shared`) since the server started."""

        self._runner: web.AppRunner | None = None
        self.port = 0
        self.gateway_url = "wss://gateway.invalid"
        """Where `GET /gateway` sends a bot to connect (tests/support/gateway.py, if one runs)."""

    # -- life ---------------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert isinstance(server, asyncio.Server)
        self.port = server.sockets[0].getsockname()[1]
        self._started_at = time.monotonic()

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> DiscordRestServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def api_base(self) -> str:
        """What a client's `Route.BASE` is set to."""
        return f"http://127.0.0.1:{self.port}{API_PREFIX}"

    # -- the world ----------------------------------------------------------------------------

    def add_channel(
        self, channel_id: int, *, guild_id: int | None = None, name: str | None = None
    ) -> None:
        """A text channel the bot can see (a guild's, unless `guild_id` is None)."""
        payload: dict[str, Any] = {
            "id": str(channel_id),
            "type": 0,
            "name": name or f"channel-{len(self._channels)}",
            "position": len(self._channels),
            "permission_overwrites": [],
            "nsfw": False,
            "parent_id": None,
            "last_message_id": None,
        }
        if guild_id is not None:
            payload["guild_id"] = str(guild_id)
        self._channels[channel_id] = payload
        self._messages.setdefault(channel_id, [])

    def has_channel(self, channel_id: int) -> bool:
        return channel_id in self._channels

    def add_message(self, payload: Mapping[str, Any]) -> None:
        """A message someone posted: kept in its channel's history (declared first). A bot in
        another process posts it to `CONTROL_MESSAGES` instead."""
        channel_id = int(payload["channel_id"])
        self._require_channel(channel_id)
        content = str(payload.get("content") or "")
        self._messages[channel_id].append(ChannelMessage(json.dumps(payload), None, [content]))

    def remove_message(self, channel_id: int, message_id: int) -> None:
        """Someone deleted the message: gone from its channel's history."""
        self._messages[channel_id].remove(self._find(channel_id, message_id))

    def refuse_sends(
        self,
        channel_id: int,
        status: int = 403,
        code: int = 50013,
        text: str = "Missing Permissions",
    ) -> None:
        """Discord refuses every message create in the channel (until `allow_sends`)."""
        self._refused[channel_id] = (status, code, text)

    def allow_sends(self, channel_id: int) -> None:
        self._refused.pop(channel_id, None)

    def fail_next(
        self,
        route: str,
        *,
        status: int | None = 503,
        landed: bool = False,
        after: int = 0,
        times: int = 1,
    ) -> None:
        """The requests of `route` (a name of `DEFAULT_ROUTE_LIMITS`) fail as they do when
        Discord's own servers fail: after `after` more answered as usual, the next `times` get
        `status` with Discord's JSON error (None: their connection is dropped unanswered). With
        `landed`, each was carried out first (a create's message is in the channel): the
        failure is the same either way, so a client cannot tell whether what it asked was
        done."""
        self._failing[route] = _Failure(status, landed, after, times)

    def refuse_webhooks(self, channel_id: int) -> None:
        """Creating a webhook in the channel is refused with 403 50013 (Missing Permissions),
        as Discord does for a bot without Manage Webhooks there."""
        self._webhooks_refused.add(channel_id)

    def delete_webhook(self, webhook_id: int) -> None:
        """Someone deleted the webhook: its requests get 404 10015 (Unknown Webhook)."""
        self.channel_webhooks.pop(webhook_id, None)
        self._gone_webhooks.add(webhook_id)

    # -- webhooks a member made (no application owns them) -----------------------------------

    def add_user_webhook(self, channel_id: int) -> dict[str, Any]:
        """A webhook someone made in the channel's settings: no application owns it, so its
        messages cannot carry interactive components (`webhook_components`)."""
        webhook = self._create_webhook(channel_id, {"name": "a member's webhook"})
        webhook["application_id"] = None
        return webhook

    def webhooks_of(self, channel_id: int) -> list[dict[str, Any]]:
        return [w for w in self.channel_webhooks.values() if w["channel_id"] == str(channel_id)]

    # -- what the channel shows and what was counted -------------------------------------------

    def messages(self, channel_id: int) -> list[ChannelMessage]:
        """The channel's messages, oldest first."""
        return list(self._messages.get(channel_id, []))

    def messages_by(self, author_id: int, channel_id: int) -> list[ChannelMessage]:
        return [m for m in self._messages.get(channel_id, []) if m.author_id == author_id]

    def invalid_requests(self) -> int:
        """Invalid requests in the last `invalid_window` seconds (Cloudflare's count)."""
        self._forget_invalid(time.monotonic())
        return len(self._invalid)

    @property
    def banned(self) -> bool:
        return time.monotonic() < self._banned_until

    def busiest_second(self) -> int:
        """The most requests of the token in any one-second span (sliding, not aligned to
        the server's clock: a client pacing to 50 per second of its own can still put close
        to 100 into one span that straddles two of its windows)."""
        return self._busiest_span

    def requests_per_second(self) -> float:
        """The average over the seconds that saw a request, first to last."""
        if not self.requests_by_second:
            return 0.0
        seconds = max(self.requests_by_second) - min(self.requests_by_second) + 1
        return self.requests / seconds

    def bucket_hash(self, route: str) -> str:
        """The `X-RateLimit-Bucket` of a route: the same for every channel, as Discord's."""
        return hashlib.sha1(route.encode()).hexdigest()[:16]

    # -- the HTTP side ------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        now = time.monotonic()
        if now < self._banned_until:
            self._count_request(now, "banned")
            self.banned_requests += 1
            return web.Response(status=429, text="error code: 1015", content_type="text/plain")
        if request.path == CONTROL_MESSAGES and request.method == "POST":
            self.add_message(await request.json())
            return web.Response(status=204)
        path = request.path.removeprefix(API_PREFIX)
        matched = _match(request.method, path)
        if matched is None:
            return self._json(404, {"message": "404: Not Found", "code": 0})
        # A webhook's and an interaction's token authorize their requests: they are not the
        # bot token's, and Discord's global limit does not count them.
        of_the_token = matched.name not in _TOKENLESS
        if of_the_token and request.headers.get("Authorization") != f"Bot {self.token}":
            self._invalid_request(now)
            return self._json(401, {"message": "401: Unauthorized", "code": 0})
        self._count_request(now, matched.name, of_the_token=of_the_token)

        if of_the_token:
            self._global.roll(now)
            if self._global.used >= self._global.limit.limit:
                return self._global_429(now, matched)
            self._global.used += 1

        bucket = self._bucket(matched, now)
        if bucket.used >= bucket.limit.limit:
            return self._route_429(now, matched, bucket)
        bucket.used += 1
        headers = self._bucket_headers(matched, bucket, now)

        if self.latency:
            await asyncio.sleep(self.latency)
        failure = self._failure_due(matched.name)
        if failure is not None and not failure.landed:
            return self._failed(request, matched, failure, headers)
        try:
            status, body = await self._answer(request, matched)
        except _Answer as answer:
            if answer.status in (401, 403):
                self._invalid_request(time.monotonic())
            return self._json(answer.status, answer.body, headers)
        if failure is not None:
            return self._failed(request, matched, failure, headers)
        if status == 204:
            return web.Response(status=204, headers={**headers, "Via": VIA})
        return self._json(status, body, headers)

    def _failure_due(self, route: str) -> _Failure | None:
        """The failure this request of `route` meets, if one is due (`fail_next`)."""
        failure = self._failing.get(route)
        if failure is None:
            return None
        if failure.after > 0:
            failure.after -= 1
            return None
        failure.times -= 1
        if failure.times <= 0:
            del self._failing[route]
        return failure

    def _failed(
        self,
        request: web.Request,
        matched: _Matched,
        failure: _Failure,
        headers: Mapping[str, str],
    ) -> web.Response:
        self.failed[matched.name] += 1
        if failure.status is None:
            assert request.transport is not None
            request.transport.abort()  # the client reads no answer at all
            return web.Response(status=204)
        phrase = HTTPStatus(failure.status).phrase
        body = {"message": f"{failure.status}: {phrase}", "code": 0}
        return self._json(failure.status, body, headers)

    def _json(
        self, status: int, body: Any, headers: Mapping[str, str] | None = None
    ) -> web.Response:
        # Exactly `application/json`, as Discord sends it: nextcord's webhook adapter
        # compares the header whole before it parses a body.
        return web.Response(
            status=status,
            body=json.dumps(body).encode(),
            headers={**(headers or {}), "Content-Type": "application/json", "Via": VIA},
        )

    def _count_request(self, now: float, route: str, *, of_the_token: bool = True) -> None:
        self.requests_by_route[route] += 1
        if of_the_token:
            self.requests += 1
            self.requests_by_second[int(now - self._started_at)] += 1
            self._last_second.append(now)
            while self._last_second[0] <= now - 1.0:
                self._last_second.popleft()
            self._busiest_span = max(self._busiest_span, len(self._last_second))

    def _invalid_request(self, now: float) -> None:
        self.invalid_total += 1
        self._invalid.append(now)
        self._forget_invalid(now)
        if len(self._invalid) >= self.invalid_threshold:
            self._banned_until = now + self.ban_seconds

    def _forget_invalid(self, now: float) -> None:
        while self._invalid and self._invalid[0] <= now - self.invalid_window:
            self._invalid.popleft()

    def _bucket(self, matched: _Matched, now: float) -> _Bucket:
        key = (matched.name, matched.major)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(self.route_limits[matched.name], started=now)
        bucket.roll(now)
        return bucket

    def _bucket_headers(self, matched: _Matched, bucket: _Bucket, now: float) -> dict[str, str]:
        reset_after = bucket.reset_after(now)
        return {
            "X-RateLimit-Limit": str(bucket.limit.limit),
            "X-RateLimit-Remaining": str(max(0, bucket.limit.limit - bucket.used)),
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": self.bucket_hash(matched.name),
        }

    def _global_429(self, now: float, matched: _Matched) -> web.Response:
        retry_after = self._global.reset_after(now)
        self.rate_limited["global"] += 1
        self.rate_limited_by_route[matched.name] += 1
        self._invalid_request(now)
        body = {"message": RATE_LIMITED, "retry_after": round(retry_after, 3), "global": True}
        headers = {
            "X-RateLimit-Global": "true",
            "X-RateLimit-Scope": "global",
            "Retry-After": str(max(1, math.ceil(retry_after))),
        }
        return self._json(429, body, headers)

    def _route_429(self, now: float, matched: _Matched, bucket: _Bucket) -> web.Response:
        retry_after = bucket.reset_after(now)
        self.rate_limited["user"] += 1
        self.rate_limited_by_route[matched.name] += 1
        self._invalid_request(now)
        body = {"message": RATE_LIMITED, "retry_after": round(retry_after, 3), "global": False}
        headers = {
            **self._bucket_headers(matched, bucket, now),
            "X-RateLimit-Scope": "user",
            "Retry-After": str(max(1, math.ceil(retry_after))),
        }
        return self._json(429, body, headers)

    # -- the endpoints ------------------------------------------------------------------------

    async def _answer(self, request: web.Request, matched: _Matched) -> tuple[int, Any]:
        body = await _json_body(request) if request.can_read_body else {}
        p = matched.params
        name = matched.name
        if name == "member_get":
            member = self.members.get((int(p["guild_id"]), int(p["user_id"])))
            if member is None:
                raise _Answer(404, 10007, "Unknown Member")
            return 200, member
        if name == "users_me":
            return 200, self.bot_user
        if name == "gateway":
            return 200, {
                "url": self.gateway_url,
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 1000,
                    "reset_after": 0,
                    "max_concurrency": 1,
                },
            }
        if name == "commands":
            return self._commands_answer(request.method, p, body)
        if name == "interaction_callback":
            return self._interaction_callback(p, body)
        if name == "webhook":
            webhook_id = int(p["webhook_id"])
            if webhook_id in self.channel_webhooks or webhook_id in self._gone_webhooks:
                return self._channel_webhook(request, p, body)
            return self._webhook(request, p, body)
        channel_id = int(p["channel_id"])
        self._require_channel(channel_id)
        if name == "webhook_create":
            return 200, self._create_webhook(channel_id, body)
        if name == "webhooks_get":
            return 200, self.webhooks_of(channel_id)
        if name == "channel_get":
            return 200, self._channels[channel_id]
        if name == "typing":
            self.typed_in.append(channel_id)
            return 204, None
        if name == "message_create":
            refused = self._refused.get(channel_id)
            if refused is not None:
                raise _Answer(*refused)
            return 200, self._created(channel_id, body).payload
        if name == "history":
            return 200, self._history(channel_id, request.query)
        if name == "reaction":
            return self._reaction(request.method, channel_id, p)
        message = self._find(channel_id, int(p["message_id"]))
        if name == "message_edit":
            self._edit(message, body)
        if name == "message_delete":  # takes (issue 36): the bot deletes its own
            if message.author_id != int(self.bot_user["id"]):
                raise _Answer(403, 50013, "Missing Permissions")
            self.remove_message(channel_id, message.id)
            return 204, None
        return 200, message.payload

    # -- reactions (issue 36, progress) ----------------------------------------------------------
    # Create Reaction (PUT .../reactions/{emoji}/@me) and Delete Own Reaction (DELETE, the same
    # path) answer 204, and each is idempotent: adding a reaction the bot already has, or
    # removing one it has not, changes nothing and still answers 204. 404 10008 for an unknown
    # message; 403 50013 where the bot may not react (`refuse_reactions`). A message object
    # carries its reactions as Discord's does (`emoji`, `count`, `me`).

    def refuse_reactions(self, channel_id: int) -> None:
        """The bot loses Add Reactions in `channel_id`: its reactions there get 403 50013."""
        self._reactions_refused.add(channel_id)

    def reactions_on(self, message_id: int) -> list[str]:
        """The bot's reactions on `message_id` now, in the order they were added."""
        shown: list[str] = []
        for change in self.reaction_log:
            if change.message_id != message_id:
                continue
            if change.added and change.emoji not in shown:
                shown.append(change.emoji)
            elif not change.added and change.emoji in shown:
                shown.remove(change.emoji)
        return shown

    def marks_of(self, message_id: int) -> list[str]:
        """What the bot did to `message_id`'s reactions, in order: "+emoji" added, "-emoji"
        removed (requests that changed nothing left out)."""
        return [
            f"{'+' if c.added else '-'}{c.emoji}"
            for c in self.reaction_log
            if c.message_id == message_id and c.changed
        ]

    def _reaction(self, method: str, channel_id: int, p: Mapping[str, str]) -> tuple[int, Any]:
        if channel_id in self._reactions_refused:
            raise _Answer(403, 50013, "Missing Permissions")
        message = self._find(channel_id, int(p["message_id"]))
        emoji = p["emoji"]
        if not emoji or emoji.startswith(":"):
            raise _Answer(400, 10014, "Unknown Emoji")
        added = method == "PUT"
        had = emoji in self.reactions_on(message.id)
        self.reaction_log.append(
            ReactionChange(time.monotonic(), channel_id, message.id, emoji, added, added != had)
        )
        payload = message.payload
        payload["reactions"] = [
            {"emoji": {"id": None, "name": name}, "count": 1, "me": True}
            for name in self.reactions_on(message.id)
        ]
        message.payload_json = json.dumps(payload)
        return 204, None

    def _require_channel(self, channel_id: int) -> None:
        if channel_id not in self._channels:
            raise _Answer(404, 10003, "Unknown Channel")

    def _create(
        self, channel_id: int, body: Mapping[str, Any], author: Mapping[str, Any]
    ) -> ChannelMessage:
        check_allowed_mentions(body.get("allowed_mentions"))
        content = str(body.get("content") or "")
        payload: dict[str, Any] = {
            "id": str(new_snowflake()),
            "channel_id": str(channel_id),
            "author": dict(author),
            "content": content,
            "timestamp": _now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": list(body.get("embeds") or []),
            "pinned": False,
            "type": 0,
            "flags": int(body.get("flags") or 0),
            "components": checked_components(body.get("components")),
        }
        guild_id = self._channels.get(channel_id, {}).get("guild_id")
        if guild_id is not None:
            payload["guild_id"] = guild_id
        if body.get("nonce") is not None:
            payload["nonce"] = body["nonce"]
        reference = body.get("message_reference")
        if reference:
            payload["type"] = 19
            payload["message_reference"] = {
                "message_id": str(reference["message_id"]),
                "channel_id": str(reference.get("channel_id") or channel_id),
            }
            referenced = self._lookup(channel_id, int(reference["message_id"]))
            payload["referenced_message"] = None if referenced is None else referenced.payload
        message = ChannelMessage(json.dumps(payload), body.get("allowed_mentions"), [content])
        self._messages.setdefault(channel_id, []).append(message)
        return message

    def _created(self, channel_id: int, body: Mapping[str, Any]) -> ChannelMessage:
        """The bot's message create, its nonce read as Discord documents it (see the module):
        with `enforce_nonce`, the message the bot created with that nonce lately, if any."""
        nonce = body.get("nonce")
        if nonce is None:
            return self._create(channel_id, body, self.bot_user)
        if len(str(nonce)) > MAX_NONCE_CHARS:
            raise _Answer(400, 50035, "Invalid Form Body")
        if not body.get("enforce_nonce"):
            return self._create(channel_id, body, self.bot_user)
        now = time.monotonic()
        while self._nonces and next(iter(self._nonces.values()))[0] < now - NONCE_WINDOW_S:
            self._nonces.popitem(last=False)
        key = (str(self.bot_user["id"]), str(nonce))
        known = self._nonces.get(key)
        if known is not None:
            return known[1]
        message = self._create(channel_id, body, self.bot_user)
        self._nonces[key] = (now, message)
        return message

    def _create_webhook(self, channel_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        if channel_id in self._webhooks_refused:
            raise _Answer(403, 50013, "Missing Permissions")
        if len(self.webhooks_of(channel_id)) >= 15:
            raise _Answer(400, 30007, "Maximum number of webhooks reached (15)")
        webhook_id = new_snowflake()
        webhook = {
            "id": str(webhook_id),
            "type": 1,
            "guild_id": self._channels[channel_id].get("guild_id"),
            "channel_id": str(channel_id),
            "user": dict(self.bot_user),
            "name": str(body.get("name") or "webhook"),
            "avatar": None,
            "token": f"webhook-token-{new_snowflake()}",
            "application_id": str(self.application_id),
        }
        self.channel_webhooks[webhook_id] = webhook
        return webhook

    def _channel_webhook(
        self, request: web.Request, p: Mapping[str, str], body: Any
    ) -> tuple[int, Any]:
        """A channel webhook's execute (`?wait=true` answers the message), its message's
        get, edit and delete; 404 10015 once it is deleted, 401 50027 for a wrong token."""
        if isinstance(body, dict) and "payload_json" in body:
            body = json.loads(body["payload_json"])
        webhook = self.channel_webhooks.get(int(p["webhook_id"]))
        if webhook is None:
            raise _Answer(404, 10015, "Unknown Webhook")
        if webhook["token"] != p["webhook_token"]:
            raise _Answer(401, 50027, "Invalid Webhook Token")
        channel_id = int(webhook["channel_id"])
        message_id = p.get("message_id")
        if request.method in ("POST", "PATCH"):
            body = webhook_components(webhook, body or {}, request.query)
        if message_id is None:
            if request.method != "POST":
                return 200, {k: v for k, v in webhook.items() if k != "user"}
            message = self._webhook_post(webhook, body or {})
            wait = request.query.get("wait", "").lower() in ("true", "1")  # as Discord reads it
            return (200, message.payload) if wait else (204, None)
        message = self._find(channel_id, int(message_id))
        if message.webhook_id != int(webhook["id"]):
            raise _Answer(404, 10008, "Unknown Message")
        if request.method == "PATCH":
            self._edit(message, body or {})
        elif request.method == "DELETE":
            self._messages[channel_id].remove(message)
            return 204, None
        return 200, message.payload

    def _webhook_post(self, webhook: Mapping[str, Any], body: Mapping[str, Any]) -> ChannelMessage:
        channel_id = int(webhook["channel_id"])
        author = {
            "id": webhook["id"],
            "username": str(body.get("username") or webhook["name"]),
            "discriminator": "0000",
            "avatar": None,
            "bot": True,
        }
        message = self._create(channel_id, {**body, "message_reference": None}, author)
        payload = message.payload
        payload["webhook_id"] = webhook["id"]
        payload["application_id"] = webhook["application_id"]
        message.payload_json = json.dumps(payload)
        message.avatar_url = body.get("avatar_url")
        return message

    def _lookup(self, channel_id: int, message_id: int) -> ChannelMessage | None:
        for message in self._messages.get(channel_id, []):
            if message.id == message_id:
                return message
        return None

    def _find(self, channel_id: int, message_id: int) -> ChannelMessage:
        message = self._lookup(channel_id, message_id)
        if message is None:
            raise _Answer(404, 10008, "Unknown Message")
        return message

    def _edit(self, message: ChannelMessage, body: Mapping[str, Any]) -> None:
        payload = message.payload
        if "content" in body:
            payload["content"] = body["content"] or ""
        if "embeds" in body:
            payload["embeds"] = list(body["embeds"] or [])
        if "components" in body:
            payload["components"] = checked_components(body["components"])
        if "allowed_mentions" in body:
            check_allowed_mentions(body["allowed_mentions"])
            message.allowed_mentions = body["allowed_mentions"]
        payload["edited_timestamp"] = _now_iso()
        message.payload_json = json.dumps(payload)
        message.versions.append(payload["content"])
        message.changed_at = time.monotonic()
        if "content" in body or "embeds" in body:
            message.text_at = message.changed_at
        elif "components" in body:
            self.component_edits += 1

    def _history(self, channel_id: int, query: Mapping[str, str]) -> list[dict[str, Any]]:
        """Newest first, as Discord answers: `limit` (1-100, 50) before, after or around."""
        limit = max(1, min(100, int(query.get("limit", 50))))
        oldest_first = self._messages.get(channel_id, [])
        if "around" in query:
            around = int(query["around"])
            before = (
                [m for m in oldest_first if m.id < around][-(limit // 2) :] if limit > 1 else []
            )
            rest = [m for m in oldest_first if m.id >= around][: limit - len(before)]
            chosen = before + rest
        elif "after" in query:
            after = int(query["after"])
            chosen = [m for m in oldest_first if m.id > after][:limit]
        else:
            before_id = int(query["before"]) if "before" in query else None
            older = [m for m in oldest_first if before_id is None or m.id < before_id]
            chosen = older[-limit:]
        return [m.payload for m in reversed(chosen)]

    def _commands_answer(self, method: str, p: Mapping[str, str], body: Any) -> tuple[int, Any]:
        """Bulk overwrite (PUT), list (GET), create or replace one by name (POST), edit
        (PATCH) and delete (DELETE) one, globally or in a guild."""
        guild = int(p["guild_id"]) if "guild_id" in p else None
        stored = self._commands.setdefault(guild, [])
        if method == "PUT":
            stored[:] = [self._registered(command, guild) for command in body or []]
            return 200, stored
        if method == "GET" and "command_id" not in p:
            return 200, stored
        if method == "POST":
            command = self._registered(body, guild)
            stored[:] = [c for c in stored if c["name"] != command["name"]] + [command]
            return 201, command
        found = [c for c in stored if c["id"] == p.get("command_id")]
        if not found:
            raise _Answer(404, 10063, "Unknown application command")
        if method == "DELETE":
            stored.remove(found[0])
            return 204, None
        if method == "PATCH":
            found[0].update(body or {})
        return 200, found[0]

    def _registered(self, command: Mapping[str, Any], guild: int | None) -> dict[str, Any]:
        registered = {
            # Discord answers every command with a type (1, CHAT_INPUT, unless given) and a
            # description, which is "" for a USER or MESSAGE command (sent without one)
            "type": 1,
            "description": "",
            **command,
            "id": str(new_snowflake()),
            "application_id": str(self.application_id),
            "version": str(new_snowflake()),
        }
        if guild is not None:
            registered["guild_id"] = str(guild)
        return registered

    def commands(self, guild_id: int | None = None) -> list[dict[str, Any]]:
        """The application commands registered globally (or in `guild_id`)."""
        return list(self._commands.get(guild_id, []))

    def _interaction_callback(self, p: Mapping[str, str], body: Any) -> tuple[int, Any]:
        """An interaction's response: 4 posts a message (ephemeral with flag 64), 5 defers one;
        for a press of a message's component, 7 edits that message and 6 acknowledges it
        without a change. An interaction answered twice is refused (40060), as Discord does."""
        if isinstance(body, dict) and "payload_json" in body:
            body = json.loads(body["payload_json"])
        interaction_id = int(p["webhook_id"])
        if interaction_id in self._answered_interactions:
            raise _Answer(400, 40060, "Interaction has already been acknowledged.")
        self._answered_interactions.add(interaction_id)
        self.interaction_callbacks.append({"type": body["type"], "data": body.get("data") or {}})
        token = p["webhook_token"]
        pressed = self._pressed.get(interaction_id)
        answer: dict[str, Any] = {
            "interaction": {
                "id": p["webhook_id"],
                "type": 2 if pressed is None else 3,
                "response_message_ephemeral": bool((body.get("data") or {}).get("flags", 0) & 64),
            }
        }
        if body["type"] == 4:
            message = self._webhook_message(token, body.get("data") or {})
            answer["resource"] = {"type": 4, "message": message.payload}
            answer["interaction"]["response_message_id"] = str(message.id)
        elif body["type"] in (6, 7):
            if pressed is None:
                raise _Answer(400, 50035, "Invalid Form Body")  # only a component's press
            message = self._find(*pressed)
            if body["type"] == 7:
                self._edit(message, body.get("data") or {})
            answer["resource"] = {"type": body["type"], "message": message.payload}
        return 200, answer

    def press_of(self, interaction_id: int, channel_id: int, message_id: int) -> None:
        """A component of message `message_id` is pressed as interaction `interaction_id`: its
        responses 6 and 7 act on that message."""
        self._pressed[interaction_id] = (channel_id, message_id)

    def _webhook_message(self, token: str, body: Mapping[str, Any]) -> ChannelMessage:
        content = str(body.get("content") or "")
        payload = {
            "id": str(new_snowflake()),
            "channel_id": "0",
            "author": dict(self.bot_user),
            "content": content,
            "timestamp": _now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": list(body.get("embeds") or []),
            "pinned": False,
            "type": 0,
            "flags": int(body.get("flags") or 0),
            "components": [],
            "webhook_id": str(self.application_id),
        }
        message = ChannelMessage(json.dumps(payload), body.get("allowed_mentions"), [content])
        self.webhook_messages.setdefault(token, []).append(message)
        return message

    def _webhook(self, request: web.Request, p: Mapping[str, str], body: Any) -> tuple[int, Any]:
        if isinstance(body, dict) and "payload_json" in body:
            body = json.loads(body["payload_json"])
        token = p["webhook_token"]
        sent = self.webhook_messages.setdefault(token, [])
        message_id = p.get("message_id")
        if message_id is None:
            if request.method != "POST":
                return 200, {"id": p["webhook_id"], "token": token, "type": 3}
            message = self._webhook_message(token, body or {})
            return (200, message.payload) if request.query.get("wait") else (204, None)
        if message_id == "@original":
            if not sent:
                raise _Answer(404, 10008, "Unknown Message")
            message = sent[0]
        else:
            found = [m for m in sent if m.id == int(message_id)]
            if not found:
                raise _Answer(404, 10008, "Unknown Message")
            message = found[0]
        if request.method == "PATCH":
            self._edit(message, body or {})
        elif request.method == "DELETE":
            sent.remove(message)
            return 204, None
        return 200, message.payload


async def _json_body(request: web.Request) -> Any:
    if request.content_type.startswith("multipart/"):
        form = await request.post()
        return {key: value for key, value in form.items() if isinstance(value, str)}
    text = await request.text()
    return json.loads(text) if text else {}


_ROUTES: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...] = (
    # (method or "*", path segments with {names}, route name, major parameters)
    ("POST", ("channels", "{channel_id}", "messages"), "message_create", ("channel_id",)),
    ("GET", ("channels", "{channel_id}", "messages"), "history", ("channel_id",)),
    (
        "PATCH",
        ("channels", "{channel_id}", "messages", "{message_id}"),
        "message_edit",
        ("channel_id",),
    ),
    (
        "GET",
        ("channels", "{channel_id}", "messages", "{message_id}"),
        "message_get",
        ("channel_id",),
    ),
    # -- takes (issue 36) --
    (
        "DELETE",
        ("channels", "{channel_id}", "messages", "{message_id}"),
        "message_delete",
        ("channel_id",),
    ),
    ("POST", ("channels", "{channel_id}", "typing"), "typing", ("channel_id",)),
    ("GET", ("channels", "{channel_id}"), "channel_get", ("channel_id",)),
    ("POST", ("channels", "{channel_id}", "webhooks"), "webhook_create", ("channel_id",)),
    ("GET", ("channels", "{channel_id}", "webhooks"), "webhooks_get", ("channel_id",)),
    (
        "POST",
        ("interactions", "{webhook_id}", "{webhook_token}", "callback"),
        "interaction_callback",
        ("webhook_id", "webhook_token"),
    ),
    (
        "*",
        ("webhooks", "{webhook_id}", "{webhook_token}"),
        "webhook",
        ("webhook_id", "webhook_token"),
    ),
    (
        "*",
        ("webhooks", "{webhook_id}", "{webhook_token}", "messages", "{message_id}"),
        "webhook",
        ("webhook_id", "webhook_token"),
    ),
    ("*", ("applications", "{application_id}", "commands"), "commands", ("application_id",)),
    ("GET", ("guilds", "{guild_id}", "members", "{user_id}"), "member_get", ("guild_id",)),
    (
        "*",
        ("applications", "{application_id}", "commands", "{command_id}"),
        "commands",
        ("application_id",),
    ),
    (
        "*",
        ("applications", "{application_id}", "guilds", "{guild_id}", "commands"),
        "commands",
        ("guild_id",),
    ),
    (
        "*",
        ("applications", "{application_id}", "guilds", "{guild_id}", "commands", "{command_id}"),
        "commands",
        ("guild_id",),
    ),
    # -- reactions (issue 36, progress) --
    # Create Reaction and Delete Own Reaction share one bucket per channel: 1 per 0.25 s.
    (
        "PUT",
        ("channels", "{channel_id}", "messages", "{message_id}", "reactions", "{emoji}", "@me"),
        "reaction",
        ("channel_id",),
    ),
    (
        "DELETE",
        ("channels", "{channel_id}", "messages", "{message_id}", "reactions", "{emoji}", "@me"),
        "reaction",
        ("channel_id",),
    ),
    ("GET", ("users", "@me"), "users_me", ()),
    ("GET", ("gateway", "bot"), "gateway", ()),
    ("GET", ("gateway",), "gateway", ()),
)


def _match(method: str, path: str) -> _Matched | None:
    parts = tuple(path.strip("/").split("/"))
    for route_method, pattern, name, majors in _ROUTES:
        if route_method not in ("*", method) or len(pattern) != len(parts):
            continue
        params: dict[str, str] = {}
        for expected, actual in zip(pattern, parts, strict=True):
            if expected.startswith("{"):
                params[expected[1:-1]] = actual
            elif expected != actual:
                break
        else:
            major = "+".join(params[m] for m in majors)
            return _Matched(name, major, params)
    return None


@contextlib.contextmanager
def pointed_at(api_base: str) -> Iterator[None]:
    """Both libraries' HTTP clients (and their webhook adapters) talk to the API at `api_base`
    (a server's `api_base`) inside the block: their `Route.BASE` is set to it, then put back."""
    import discord.http
    import nextcord.http

    saved = (nextcord.http.Route.BASE, discord.http.Route.BASE)
    nextcord.http.Route.BASE = api_base
    discord.http.Route.BASE = api_base
    try:
        yield
    finally:
        nextcord.http.Route.BASE, discord.http.Route.BASE = saved
