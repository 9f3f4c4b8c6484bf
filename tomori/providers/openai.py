"""OpenAI and every OpenAI-compatible server (OpenRouter, vLLM, llama.cpp, Ollama) through the
`openai` SDK's streaming chat completions.

The SDK's own timeouts are set so they never fight `stream_once`'s rolling timeout: no read,
write or pool timeout (its read timeout is per read, 600 s by default, and would otherwise end
a healthy slow stream or outlive a dead one), only a connect timeout. Retries are off: a retry
before the first byte only delays the fallback model that the generation turn would try next.
The stream is closed on every exit (`async with`): a bare `break` would leave it streaming.

The HTTP transport is aiohttp, through the SDK's own `DefaultAioHttpClient`, not the default
httpx2 stack: aiohttp is installed anyway (both Discord libraries need it) and reads a chunk for
a fraction of the CPU, which is what decides how many channels one event loop can stream at
once (`bench/cog_bench.py`). Timeouts, retries and errors are the SDK's as before.

Chunks are read as the plain JSON objects the server sent (the SDK's documented `client.post`
with `cast_to=object`), not as the SDK's pydantic models: building those models was 60% of the
CPU the SDK spends per chunk, and this provider reads four fields of each. The SDK still sends
the request, maps HTTP errors, decodes the event stream and raises on an error event; the few
fields read here are checked by hand, and a chunk of the wrong shape is a malformed response.
So is a 200 whose body holds no stream event at all (an HTML login page of a proxy, or a server
that ignored `"stream": true` and sent one JSON completion): the SDK reads either as an empty
stream, which would end the turn as a silent empty answer instead of trying the fallback. A
completion's text is not salvaged: a server that ignores the protocol is told apart, not
half-supported. Bytes that are not UTF-8 are malformed too, wherever they fall. A stream that
ends with neither a finish reason nor `[DONE]` is cut short (a proxy that closes it politely):
the text read may be any part of the answer, so it is no complete one.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI, AsyncStream
from openai._streaming import ServerSentEvent

from tomori.providers.base import (
    TOOL_IMAGES,
    ArgumentsProblem,
    ContextItem,
    DetailsDelta,
    Finish,
    Image,
    ProviderEvent,
    Role,
    StreamRequest,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    Usage,
    UsageEvent,
)
from tomori.providers.errors import (
    connection_error,
    content_blocked,
    cut_short,
    error_text,
    malformed_response,
    sanitised,
    secrets_of,
    status_error,
)

CONNECT_TIMEOUT_S = 10.0
DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Passed when none is configured: given `None`, the SDK would read `OPENAI_BASE_URL` from the
process environment itself, an unchecked value (an empty one breaks every request) that a bot
configuring its chain in code never meant to use."""
OPENAI_HOST = "api.openai.com"
CONTENT_FILTER_FINISH = "content_filter"
"""The finish reason of an answer a content filter stopped (OpenAI, Azure): not a whole one."""
REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where OpenAI-compatible servers put thinking text: vLLM and DeepSeek, then OpenRouter."""


class OpenAIProvider:
    """Streams chat completions; one instance (one HTTP client) serves every model of it."""

    def __init__(self, *, api_key: str, base_url: str | None = None) -> None:
        self._secrets = secrets_of(api_key, base_url)
        self._max_tokens_name = max_tokens_parameter(base_url or DEFAULT_BASE_URL)
        self._client = AsyncOpenAI(
            api_key=api_key,
            base_url=base_url or DEFAULT_BASE_URL,
            max_retries=0,
            timeout=openai.Timeout(None, connect=CONNECT_TIMEOUT_S),
            http_client=openai.DefaultAioHttpClient(),
        )

    @property
    def name(self) -> str:
        return "openai"

    async def aclose(self) -> None:
        await self._client.close()

    async def stream(self, request: StreamRequest) -> AsyncGenerator[ProviderEvent, None]:
        try:
            stream = await self._client.post(
                "/chat/completions",
                body=request_arguments(request, self._max_tokens_name),
                cast_to=object,
                stream=True,
                stream_cls=_EndWatchedStream,
            )
            async with stream:
                assembler = _ToolCallAssembler()
                said_anything = finished = False
                async for chunk in stream:
                    for event in _events_of(chunk, assembler):
                        said_anything = True
                        finished = finished or type(event) is Finish
                        yield event
                if not said_anything:
                    content_type = sanitised(stream.response.headers.get("content-type", "none"))
                    raise malformed_response(f"no stream events (Content-Type: {content_type})")
                if not (finished or stream.done):
                    raise cut_short("no finish reason and no [DONE]")
                for call in assembler.finish():
                    yield ToolCallEvent(call)
        except openai.APIStatusError as error:
            detail = sanitised(error_text(error.body), self._secrets)
            raise status_error(
                error.status_code, error.response.headers, detail=detail, code=error.code
            ) from error
        except openai.APIConnectionError as error:
            detail = sanitised(str(error.__cause__ or error), self._secrets)
            raise connection_error(detail) from error
        except (openai.APIError, json.JSONDecodeError, UnicodeDecodeError, _MalformedChunk) as e:
            detail = sanitised(f"{type(e).__name__}: {e}", self._secrets)
            raise malformed_response(detail) from e


def max_tokens_parameter(base_url: str) -> str:
    """What the output ceiling is called at this endpoint.

    OpenAI's own API deprecated `max_tokens` for `max_completion_tokens`, and its reasoning
    models refuse `max_tokens` with a 400; most OpenAI-compatible servers (vLLM, llama.cpp,
    Ollama, OpenRouter) know `max_tokens` and some refuse or ignore the newer name. Sending both
    would be refused by OpenAI's reasoning models, so each endpoint gets the name it knows.
    """
    host = urlsplit(base_url).hostname or ""
    return "max_completion_tokens" if host == OPENAI_HOST else "max_tokens"


def request_arguments(
    request: StreamRequest, max_tokens_name: str = "max_completion_tokens"
) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for one pass; the sampling settings
    only where they are set, so an unset one is the provider's default."""
    arguments: dict[str, Any] = {
        "model": request.model,
        "messages": openai_messages(request),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.max_output_tokens is not None:
        arguments[max_tokens_name] = request.max_output_tokens
    if request.temperature is not None:
        arguments["temperature"] = request.temperature
    if request.tools:
        arguments["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                },
            }
            for tool in request.tools
        ]
    return arguments


def openai_messages(request: StreamRequest) -> list[dict[str, Any]]:
    """The conversation, then each earlier tool exchange with the text written before it."""
    messages = [_message(item) for item in request.context]
    for exchange in request.tool_history:
        call = exchange.call
        messages.append(
            {
                "role": "assistant",
                "content": "".join(exchange.pre_tool_text) or None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": call.raw_arguments or json.dumps(dict(call.arguments)),
                        },
                    }
                ],
            }
        )
        messages.append(
            {"role": "tool", "tool_call_id": call.id, "content": json.dumps(dict(exchange.result))}
        )
        if exchange.images:  # a tool message holds text only: the images follow as the user's
            messages.append(
                _message(
                    ContextItem(Role.USER, TOOL_IMAGES.format(tool=call.name), exchange.images)
                )
            )
    return messages


def _message(item: ContextItem) -> dict[str, Any]:
    if item.role is Role.USER and item.images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": item.text}]
        parts += [
            {"type": "image_url", "image_url": {"url": _data_url(image)}} for image in item.images
        ]
        return {"role": "user", "content": parts}
    return {"role": str(item.role), "content": item.text}


def _data_url(image: Image) -> str:
    """The image inline, as every OpenAI-compatible server with vision reads it: no server
    has to reach the place the image came from."""
    return f"data:{image.content_type};base64,{base64.b64encode(image.data).decode('ascii')}"


class _EndWatchedStream(AsyncStream[object]):
    """The SDK's event stream, noting whether the server ended it with `[DONE]`.

    The SDK ends its iteration without a word both at `[DONE]` and when the body simply
    stops, yet only the first says the answer is complete; its events pass here on their way
    (`_iter_events`, the one place the SDK reads them).
    """

    done = False

    async def _iter_events(self) -> AsyncIterator[ServerSentEvent]:
        async for event in super()._iter_events():
            if event.data.startswith("[DONE]"):
                self.done = True
            yield event


class _MalformedChunk(ValueError):
    """A chunk that is valid JSON but not a chat completion chunk."""


def _events_of(chunk: object, assembler: _ToolCallAssembler) -> list[ProviderEvent]:
    events: list[ProviderEvent] = []
    fields = _object(chunk)
    usage = fields.get("usage")
    if usage is not None:
        counts = _object(usage)
        events.append(
            UsageEvent(Usage(_count(counts, "prompt_tokens"), _count(counts, "completion_tokens")))
        )
    for choice in _list(fields.get("choices"))[:1]:
        choice_fields = _object(choice)
        delta = _object(choice_fields.get("delta") or {})
        for name in REASONING_FIELDS:
            reasoning = delta.get(name)
            if isinstance(reasoning, str) and reasoning:
                events.append(DetailsDelta(reasoning))
                break
        content = _text(delta, "content")
        if content:
            events.append(TextDelta(content))
        for position, fragment in enumerate(_list(delta.get("tool_calls"))):
            fragment_fields = _object(fragment)
            function = _object(fragment_fields.get("function") or {})
            index = fragment_fields.get("index", position)  # some compatible servers omit it
            if not isinstance(index, int):
                raise _MalformedChunk("tool call index")
            assembler.add(
                index,
                _text(fragment_fields, "id"),
                _text(function, "name"),
                _text(function, "arguments"),
            )
        finish_reason = _text(choice_fields, "finish_reason")
        if finish_reason == CONTENT_FILTER_FINISH:  # the rest of the answer was withheld
            raise content_blocked(finish_reason)
        if finish_reason is not None:
            events.extend(ToolCallEvent(call) for call in assembler.finish())
            events.append(Finish(finish_reason))
    return events


def _object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _MalformedChunk("expected an object")
    return value


def _list(value: object) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _MalformedChunk("expected a list")
    return value


def _text(fields: dict[str, Any], name: str) -> str | None:
    value = fields.get(name)
    if value is not None and not isinstance(value, str):
        raise _MalformedChunk(f"{name} is not text")
    return value


def _count(fields: dict[str, Any], name: str) -> int:
    value = fields.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _ToolCallAssembler:
    """Builds tool calls from their streamed fragments, keyed by index.

    Arguments that do not parse as a JSON object (cut off, not JSON, or not an object) are
    reported as the call's `problem`, so it is never run and the model is asked to issue it
    again.
    """

    def __init__(self) -> None:
        self._calls: dict[int, _PartialCall] = {}

    def add(self, index: int, call_id: str | None, name: str | None, arguments: str | None) -> None:
        partial = self._calls.setdefault(index, _PartialCall())
        if call_id:
            partial.id = call_id
        if name:
            partial.name += name
        if arguments:
            partial.arguments.append(arguments)

    def finish(self) -> list[ToolCall]:
        calls = [_complete(index, partial) for index, partial in sorted(self._calls.items())]
        self._calls.clear()
        return calls


def _complete(index: int, partial: _PartialCall) -> ToolCall:
    raw = "".join(partial.arguments)
    call_id = partial.id or f"call_{index}"
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as error:
        # A parser that ran out of text (within a string, or after the last value) was cut
        # off; one that met a wrong character before the end was not.
        ended = error.pos >= len(raw.rstrip()) or error.msg.startswith("Unterminated string")
        problem = ArgumentsProblem.CUT_OFF if ended else ArgumentsProblem.NOT_JSON
        return ToolCall(call_id, partial.name, {}, raw_arguments=raw, problem=problem)
    if not isinstance(parsed, dict):
        problem = ArgumentsProblem.NOT_AN_OBJECT
        return ToolCall(call_id, partial.name, {}, raw_arguments=raw, problem=problem)
    return ToolCall(call_id, partial.name, parsed, raw_arguments=raw)
