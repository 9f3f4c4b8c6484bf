"""A local HTTP server that speaks like an LLM provider, scripted per test.

Plain asyncio on 127.0.0.1, port 0, so the tests see exactly what the socket sees: when each
connection opened and when the client closed it. Each request takes the next scripted `Reply`:
a status, optional slow headers, and a body of actions (server-sent events, raw bytes,
keep-alive comments, pauses, a hold until the test says, a stall until the client gives up, or
a dropped connection), or a reset before any response. The real openai and google-genai SDKs
talk to it over real sockets.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from tests.support.token_window import context_length_error, wire_tokens


@dataclass(frozen=True)
class Action:
    kind: str
    payload: bytes = b""
    seconds: float = 0.0
    event: asyncio.Event | None = None


def sse(data: Any) -> Action:
    """One server-sent event whose data is `data` as JSON (or as given, if a string)."""
    text = data if isinstance(data, str) else json.dumps(data)
    return Action("write", f"data: {text}\n\n".encode())


def raw(text: str) -> Action:
    return Action("write", text.encode())


def raw_bytes(payload: bytes) -> Action:
    """Bytes as they are, such as invalid UTF-8 in the middle of an event."""
    return Action("write", payload)


def keep_alive() -> Action:
    return Action("write", b": keep-alive\n\n")


def pause(seconds: float) -> Action:
    return Action("pause", seconds=seconds)


def at(seconds: float) -> Action:
    """Pause until `seconds` after the body began: a schedule that many small pauses would let
    drift (each sleep wakes a little late, and under load a lot)."""
    return Action("at", seconds=seconds)


def stall() -> Action:
    """Send nothing more until the client closes the connection."""
    return Action("stall")


def hold_until(event: asyncio.Event) -> Action:
    """Send nothing more until the test sets `event` (the server runs in the test's loop), or
    the client closes the connection (seen at once):
    once it has seen what it waits for (the channel showing the text so far), not after a
    pause it hopes is long enough, which load may make too short."""
    return Action("hold", event=event)


def drop() -> Action:
    """Close the connection in the middle of the body."""
    return Action("drop")


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Sequence[Action] = ()
    json_body: Any = None
    header_delay: float = 0.0
    headers: Sequence[tuple[str, str]] = ()
    content_type: str | None = None
    """Overrides the usual type (JSON for `json_body`, an event stream for `body`)."""
    reset: bool = False
    """Close the connection once the request is read, before any byte of a response (after
    `header_delay`): a reset, not a response."""


@dataclass
class SeenConnection:
    opened_at: float
    closed_at: float | None = None
    closed_by_client: bool = False
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    def mark_closed(self, by_client: bool) -> None:
        if self.closed_at is None:
            self.closed_at = time.monotonic()
            self.closed_by_client = by_client
            self.closed.set()


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    connection: SeenConnection | None = None


class _ClientGone(Exception):
    pass


class LLMServer:
    def __init__(
        self,
        default: Callable[[SeenRequest], Reply] | None = None,
        *,
        context_tokens: int | None = None,
    ) -> None:
        """`default` answers requests once the scripted replies run out (500 if not given).
        `context_tokens`: the model's context holds this many tokens, counted the server's own
        way (`token_window.wire_tokens`); a chat request over it is refused as OpenAI refuses
        one, and takes no scripted reply."""
        self._default = default or (lambda request: _unscripted())
        self.context_tokens = context_tokens
        self.counted: list[int] = []
        """With `context_tokens`: each chat request's tokens, as this server counted them."""
        self._replies: deque[Reply] = deque()
        self.requests: list[SeenRequest] = []
        self.request_arrived = asyncio.Event()
        self.in_flight = 0
        self.most_in_flight = 0
        self.connections: list[SeenConnection] = []
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    async def start(self, port: int = 0) -> None:
        """Listen on `port` (0: any free one): a server closed and started again on its old
        port is a provider that was down and is back."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for handler in list(self._handlers):
            handler.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        connection = SeenConnection(opened_at=time.monotonic())
        self.connections.append(connection)
        by_client = True
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                request.connection = connection
                self.requests.append(request)
                self.request_arrived.set()
                reply = self._over_context(request)
                if reply is None:
                    reply = self._replies.popleft() if self._replies else self._default(request)
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
                try:
                    answered = await self._respond(reply, reader, writer)
                finally:
                    self.in_flight -= 1
                if not answered:
                    by_client = False
                    break
        except (_ClientGone, ConnectionError, asyncio.IncompleteReadError):
            by_client = True
        finally:
            connection.mark_closed(by_client)
            writer.close()
            self._handlers.discard(task)

    def _over_context(self, request: SeenRequest) -> Reply | None:
        """The refusal of a chat request over the model's context, if it is one."""
        if self.context_tokens is None or not request.path.endswith("/chat/completions"):
            return None
        tokens = wire_tokens(request.body)
        self.counted.append(tokens)
        answer_room = request.body.get("max_tokens") or request.body.get("max_completion_tokens")
        if tokens + (answer_room or 0) <= self.context_tokens:
            return None
        return Reply(status=400, json_body=context_length_error(self.context_tokens, tokens))

    async def _respond(
        self, reply: Reply, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Play one reply; False when the server closed the connection itself."""
        if reply.header_delay:
            await _wait_unless_closed(reader, reply.header_delay)
        if reply.reset:
            writer.transport.abort()
            return False
        reason = HTTPStatus(reply.status).phrase
        extra = "".join(f"{name}: {value}\r\n" for name, value in reply.headers)
        if reply.json_body is not None or not reply.body:
            body = json.dumps(reply.json_body if reply.json_body is not None else {}).encode()
            writer.write(
                f"HTTP/1.1 {reply.status} {reason}\r\n"
                f"Content-Type: {reply.content_type or 'application/json'}\r\n"
                f"Content-Length: {len(body)}\r\n{extra}\r\n".encode()
                + body
            )
            await writer.drain()
            return True
        writer.write(
            f"HTTP/1.1 {reply.status} {reason}\r\n"
            f"Content-Type: {reply.content_type or 'text/event-stream'}\r\n"
            f"Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n{extra}\r\n".encode()
        )
        await writer.drain()
        began = asyncio.get_running_loop().time()
        for action in reply.body:
            if action.kind == "write":
                writer.write(b"%x\r\n%s\r\n" % (len(action.payload), action.payload))
                await writer.drain()
            elif action.kind == "pause":
                await asyncio.sleep(action.seconds)  # cheap: load runs pause thousands of times
                if reader.at_eof():
                    raise _ClientGone
            elif action.kind == "at":
                await asyncio.sleep(began + action.seconds - asyncio.get_running_loop().time())
                if reader.at_eof():
                    raise _ClientGone
            elif action.kind == "hold":
                assert action.event is not None
                await _hold(action.event, reader)
            elif action.kind == "stall":
                await _wait_unless_closed(reader, None)
            elif action.kind == "drop":
                transport = writer.transport
                transport.abort()
                return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


def _unscripted() -> Reply:
    return Reply(status=500, json_body={"error": {"message": "no reply scripted for this request"}})


async def _hold(event: asyncio.Event, reader: asyncio.StreamReader) -> None:
    """Wait for `event`, but notice at once if the client closes the connection meanwhile (a
    stop closes the stream it holds: its close is seen when it comes, not at the release)."""
    released = asyncio.ensure_future(event.wait())
    closing = asyncio.ensure_future(_wait_unless_closed(reader, None))
    try:
        await asyncio.wait({released, closing}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in (released, closing):
            waiting.cancel()
        await asyncio.gather(released, closing, return_exceptions=True)
    if closing.done() and not closing.cancelled() and closing.exception() is not None:
        raise _ClientGone
    if reader.at_eof():
        raise _ClientGone


async def _wait_unless_closed(reader: asyncio.StreamReader, seconds: float | None) -> None:
    """Sleep, but notice at once if the client closes the connection meanwhile."""
    try:
        data = await asyncio.wait_for(reader.read(1), seconds)
    except TimeoutError:
        return
    if not data:
        raise _ClientGone


async def _read_request(reader: asyncio.StreamReader) -> SeenRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    payload = await reader.readexactly(length) if length else b""
    body: Any = json.loads(payload) if payload else None
    return SeenRequest(method, path, headers, body)
