"""Gemini through `google-genai` (`client.aio.models.generate_content_stream`).

google-genai is the supported successor of google-generativeai, whose async REST streaming is
broken. Two of its defaults would fight `stream_once`, so both are set: with aiohttp installed
(always, here) its `timeout` is a total deadline that would end a long healthy answer, so there
is none; and it silently retries a failed connection after sleeping 1 to 10 s, which would hold
back the fallback model, so retries are limited to the one attempt. `aclose()` on its stream
does not close the connection; cancelling the task that reads it does, which is how
`stream_once` stops a pass.

A 200 that yields no event at all (a proxy's HTML page, a body in some other format) is a
malformed response, as is a stream with bytes that are not UTF-8: the SDK would otherwise end
the first quietly as an empty answer and raise the second as a bare `UnicodeDecodeError`. Gemini
ends every answer with a finish reason: a stream that ends without one was cut short (a proxy
that closes it politely), and is no complete answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Mapping
from itertools import groupby
from typing import Any

import aiohttp
import pydantic
from google import genai
from google.genai import errors, types

from tomori.providers.base import (
    ContextItem,
    DetailsDelta,
    Finish,
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

BLOCKING_FINISH_REASONS = frozenset(
    {
        types.FinishReason.SAFETY,
        types.FinishReason.RECITATION,
        types.FinishReason.BLOCKLIST,
        types.FinishReason.PROHIBITED_CONTENT,
        types.FinishReason.SPII,
        types.FinishReason.IMAGE_SAFETY,
        types.FinishReason.IMAGE_PROHIBITED_CONTENT,
    }
)
THOUGHT_SIGNATURE = "thought_signature"


DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
"""Passed when none is configured, as Vertex AI is refused: left to itself, the SDK reads
`GOOGLE_GEMINI_BASE_URL` and `GOOGLE_GENAI_USE_VERTEXAI` from the process environment,
values `ModelChain` never checked."""


class GeminiProvider:
    """Streams Gemini generations; one instance (one client) serves every model of it."""

    def __init__(self, *, api_key: str, base_url: str | None = None) -> None:
        self._secrets = secrets_of(api_key, base_url)
        self._client = genai.Client(
            vertexai=False,
            api_key=api_key,
            http_options=types.HttpOptions(
                base_url=base_url or DEFAULT_BASE_URL,
                timeout=None,
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
        )

    @property
    def name(self) -> str:
        return "gemini"

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    async def stream(self, request: StreamRequest) -> AsyncGenerator[ProviderEvent, None]:
        contents, config = gemini_request(request)
        try:
            responses = await self._client.aio.models.generate_content_stream(
                model=request.model, contents=contents, config=config
            )
            said_anything = finished = False
            async for response in responses:
                for event in _events_of(response):
                    said_anything = True
                    finished = finished or type(event) is Finish
                    yield event
            if not said_anything:
                raise malformed_response("no stream events in the response")
            if not finished:
                raise cut_short("no finish reason")
        except errors.APIError as error:
            text = error_text(error.details) or error.message or ""
            raise status_error(
                error.code, _headers_of(error), detail=sanitised(text, self._secrets)
            ) from error
        except (aiohttp.ClientError, OSError) as error:
            raise connection_error(sanitised(str(error), self._secrets)) from error
        except (
            errors.UnknownApiResponseError,
            json.JSONDecodeError,
            pydantic.ValidationError,
            UnicodeDecodeError,
        ) as error:
            detail = sanitised(f"{type(error).__name__}: {error}", self._secrets)
            raise malformed_response(detail) from error


def gemini_request(
    request: StreamRequest,
) -> tuple[list[types.Content], types.GenerateContentConfig]:
    """The contents and config of one pass: system text apart, same-role turns merged."""
    system = [item.text for item in request.context if item.role is Role.SYSTEM]
    dialogue = [item for item in request.context if item.role is not Role.SYSTEM]
    contents = [
        types.Content(role=_role(role), parts=[part for item in items for part in _parts(item)])
        for role, items in groupby(dialogue, key=lambda item: item.role)
    ]
    for exchange in request.tool_history:
        call = exchange.call
        model_parts = (
            [types.Part(text="".join(exchange.pre_tool_text))] if exchange.pre_tool_text else []
        )
        signature = call.extras.get(THOUGHT_SIGNATURE)
        model_parts.append(
            types.Part(
                function_call=types.FunctionCall(name=call.name, args=dict(call.arguments)),
                thought_signature=signature if isinstance(signature, bytes) else None,
            )
        )
        contents.append(types.Content(role="model", parts=model_parts))
        contents.append(
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            name=call.name, response=dict(exchange.result)
                        )
                    ),
                    *(
                        types.Part(
                            inline_data=types.Blob(data=image.data, mime_type=image.content_type)
                        )
                        for image in exchange.images
                    ),
                ],
            )
        )
    config = types.GenerateContentConfig(
        system_instruction="\n\n".join(system) if system else None,
        tools=[
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name=tool.name,
                        description=tool.description,
                        parameters_json_schema=dict(tool.parameters),
                    )
                    for tool in request.tools
                ]
            )
        ]
        if request.tools
        else None,
        max_output_tokens=request.max_output_tokens,
        temperature=request.temperature,
    )
    return contents, config


def _role(role: Role) -> str:
    return "model" if role is Role.ASSISTANT else "user"


def _parts(item: ContextItem) -> list[types.Part]:
    parts = [types.Part(text=item.text)] if item.text else []
    for image in item.images:
        parts.append(
            types.Part(inline_data=types.Blob(data=image.data, mime_type=image.content_type))
        )
    return parts


def _events_of(response: types.GenerateContentResponse) -> list[ProviderEvent]:
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        raise content_blocked(str(feedback.block_reason.value))
    events: list[ProviderEvent] = []
    candidate = response.candidates[0] if response.candidates else None
    content = candidate.content if candidate is not None else None
    for index, part in enumerate(content.parts or () if content is not None else ()):
        if part.function_call is not None:
            events.append(ToolCallEvent(_tool_call(part, index)))
        elif part.text:
            events.append(DetailsDelta(part.text) if part.thought else TextDelta(part.text))
    usage = response.usage_metadata
    if usage is not None:
        output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        events.append(UsageEvent(Usage(usage.prompt_token_count or 0, output)))
    if candidate is not None and candidate.finish_reason is not None:
        if candidate.finish_reason in BLOCKING_FINISH_REASONS:
            raise content_blocked(str(candidate.finish_reason.value))
        events.append(Finish(str(candidate.finish_reason.value)))
    return events


def _tool_call(part: types.Part, index: int) -> ToolCall:
    call = part.function_call
    assert call is not None
    arguments = dict(call.args or {})
    extras = {THOUGHT_SIGNATURE: part.thought_signature} if part.thought_signature else {}
    return ToolCall(
        id=call.id or f"call_{index}",
        name=call.name or "",
        arguments=arguments,
        raw_arguments=json.dumps(arguments),
        extras=extras,
    )


def _headers_of(error: errors.APIError) -> Mapping[str, str] | None:
    response: Any = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    return {str(k).lower(): str(v) for k, v in headers.items()} if headers else None
