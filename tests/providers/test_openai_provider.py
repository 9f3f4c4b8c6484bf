from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import quote

import pytest

from tests.support.files import PIXEL, PIXEL_B64
from tests.support.llm_server import (
    LLMServer,
    Reply,
    drop,
    keep_alive,
    pause,
    raw,
    raw_bytes,
    sse,
    stall,
)
from tests.support.openai_wire import chunk, tool_fragment, usage_chunk
from tests.support.passes import (
    Harness,
    collect,
    collect_until_error,
    kill_mid_stream_and_check_the_socket,
    stall_and_check_the_socket,
)
from tomori.generation.results import TimeoutPhase
from tomori.providers.base import (
    ArgumentsProblem,
    ContextItem,
    DetailsDelta,
    Finish,
    Image,
    ProviderError,
    ProviderErrorKind,
    Role,
    StreamRequest,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolExchange,
    ToolSpec,
    Usage,
    UsageEvent,
)
from tomori.providers.errors import MAX_DETAIL_CHARS, sanitised, secrets_of
from tomori.providers.openai import OpenAIProvider

API_KEY = "sk-test-secret-key"


@pytest.fixture
async def provider(llm_server: LLMServer) -> AsyncIterator[OpenAIProvider]:
    opened = OpenAIProvider(api_key=API_KEY, base_url=f"{llm_server.base_url}/v1")
    yield opened
    await opened.aclose()


def streamed(*actions: object) -> Reply:
    return Reply(body=[*actions, sse("[DONE]")])  # type: ignore[list-item]


async def test_events_arrive_in_order_with_reasoning_as_details_and_usage_last(
    provider: OpenAIProvider, llm_server: LLMServer
) -> None:
    llm_server.script(
        streamed(
            sse(chunk(reasoning="Thinking")),
            sse(chunk("Hel")),
            keep_alive(),
            sse(chunk("lo")),
            sse(chunk(finish="stop")),
            sse(usage_chunk(11, 2)),
        )
    )
    assert await collect(provider) == [
        DetailsDelta("Thinking"),
        TextDelta("Hel"),
        TextDelta("lo"),
        Finish("stop"),
        UsageEvent(Usage(11, 2)),
    ]
    seen = llm_server.requests[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {API_KEY}"
    assert seen.body["model"] == "test-model"
    assert seen.body["stream"] is True
    assert seen.body["stream_options"] == {"include_usage": True}


async def test_a_tool_call_split_over_many_chunks_is_assembled(
    provider: OpenAIProvider, llm_server: LLMServer
) -> None:
    arguments = '{"timezone": "Europe/Paris", "format": "long"}'
    pieces = [arguments[i : i + 5] for i in range(0, len(arguments), 5)]
    llm_server.script(
        streamed(
            sse(chunk("Checking.")),
            sse(chunk(tool_calls=[tool_fragment(0, call_id="call_7", name="now")])),
            *[sse(chunk(tool_calls=[tool_fragment(0, arguments=piece)])) for piece in pieces],
            sse(chunk(finish="tool_calls")),
            sse(usage_chunk(5, 9)),
        )
    )
    events = await collect(provider)
    assert events == [
        TextDelta("Checking."),
        ToolCallEvent(
            ToolCall(
                "call_7",
                "now",
                {"timezone": "Europe/Paris", "format": "long"},
                raw_arguments=arguments,
            )
        ),
        Finish("tool_calls"),
        UsageEvent(Usage(5, 9)),
    ]


async def test_tool_calls_without_an_index_are_told_apart_by_their_position(
    provider: OpenAIProvider, llm_server: LLMServer
) -> None:
    calls = [
        tool_fragment(0, call_id="call_a", name="now", arguments='{"timezone": "UTC"}'),
        tool_fragment(1, call_id="call_b", name="now", arguments="{}"),
    ]
    for fragment in calls:
        del fragment["index"]  # as some OpenAI-compatible servers send them, whole
    llm_server.script(streamed(sse(chunk(tool_calls=calls)), sse(chunk(finish="tool_calls"))))
    events = await collect(provider)
    assert events == [
        ToolCallEvent(ToolCall("call_a", "now", {"timezone": "UTC"}, '{"timezone": "UTC"}')),
        ToolCallEvent(ToolCall("call_b", "now", {}, "{}")),
        Finish("tool_calls"),
    ]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"tim', ArgumentsProblem.CUT_OFF),
        ('{"timezone": UTC}', ArgumentsProblem.NOT_JSON),
        ('["UTC"]', ArgumentsProblem.NOT_AN_OBJECT),
    ],
    ids=["cut-off", "not-json", "not-an-object"],
)
async def test_arguments_that_cannot_be_used_say_why(
    provider: OpenAIProvider, llm_server: LLMServer, arguments: str, problem: ArgumentsProblem
) -> None:
    llm_server.script(
        streamed(
            sse(chunk(tool_calls=[tool_fragment(0, call_id="c", name="now", arguments=arguments)])),
            sse(chunk(finish="tool_calls")),
        )
    )
    events = await collect(provider)
    call = next(event.call for event in events if isinstance(event, ToolCallEvent))
    assert (call.problem, call.arguments, call.raw_arguments) == (problem, {}, arguments)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, ProviderErrorKind.AUTHENTICATION),
        (403, ProviderErrorKind.AUTHENTICATION),
        (429, ProviderErrorKind.RATE_LIMITED),
        (500, ProviderErrorKind.SERVER_ERROR),
        (503, ProviderErrorKind.SERVER_ERROR),
        (400, ProviderErrorKind.BAD_REQUEST),
        (404, ProviderErrorKind.BAD_REQUEST),
    ],
)
async def test_http_errors_map_to_their_kind_and_say_nothing_secret(
    provider: OpenAIProvider, llm_server: LLMServer, status: int, kind: ProviderErrorKind
) -> None:
    llm_server.script(
        Reply(
            status=status,
            json_body={"error": {"message": f"bad key {API_KEY} at {llm_server.base_url}"}},
            headers=[("Retry-After", "7")],
        )
    )
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    error = raised.value
    assert (error.kind, error.status) == (kind, status)
    assert API_KEY not in error.safe_message
    assert "127.0.0.1" not in error.safe_message
    assert error.retry_after_s == (7.0 if status == 429 else None)
    assert len(llm_server.requests) == 1  # the SDK retried nothing


@pytest.mark.parametrize(
    ("status", "error", "reason"),
    [
        (
            400,
            {
                "code": "content_filter",
                "message": "The response was filtered due to the prompt triggering Azure "
                "OpenAI's content management policy. Please modify your prompt and retry: "
                "https://go.microsoft.com/fwlink/?linkid=2198766",
            },
            "The response was filtered due to the prompt triggering Azure OpenAI's content "
            "management policy.",
        ),
        (
            400,
            {
                "code": "invalid_prompt",
                "message": "Invalid prompt: your prompt was flagged as potentially violating "
                "our usage policy. Please try again with a different prompt.",
            },
            "Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
        ),
        (
            403,
            {"message": "Your chosen model requires moderation and your input was flagged"},
            "Your chosen model requires moderation and your input was flagged",
        ),
        (400, {"code": "context_length_exceeded", "message": "maximum context length"}, None),
        (400, {"message": "this model does not support tools"}, None),
    ],
    ids=["azure-filter", "openai-flagged", "openrouter-moderation", "context-length", "tools"],
)
async def test_a_refusal_of_the_content_is_told_apart_from_other_bad_requests(
    provider: OpenAIProvider,
    llm_server: LLMServer,
    status: int,
    error: dict[str, str],
    reason: str | None,
) -> None:
    """A filter's refusal carries its reason, first sentence and no link, for the asker; a
    bad request of another kind stays one (the next model may well take it)."""
    llm_server.script(Reply(status=status, json_body={"error": error}))
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    refused = raised.value.kind is ProviderErrorKind.CONTENT_BLOCKED
    assert (raised.value.reason if refused else None) == reason


@pytest.mark.parametrize(
    "event",
    [
        "{not json",
        "[1, 2]",
        '{"choices": {"delta": {}}}',
        '{"choices": [{"delta": {"content": 5}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"index": "0", "function": {}}]}}]}',
    ],
    ids=["not-json", "not-an-object", "choices-not-a-list", "content-not-text", "index-not-int"],
)
async def test_a_malformed_chunk_is_a_server_error(
    provider: OpenAIProvider, llm_server: LLMServer, event: str
) -> None:
    llm_server.script(Reply(body=[sse(chunk("fine")), raw(f"data: {event}\n\n"), stall()]))
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    assert raised.value.kind is ProviderErrorKind.SERVER_ERROR
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), 1)  # the stream was not left open
    assert connection.closed_by_client


A_COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "The whole answer at once."},
            "finish_reason": "stop",
        }
    ],
}


@pytest.mark.parametrize(
    ("reply", "content_type"),
    [
        (
            Reply(content_type="text/html", body=[raw("<html><body>Log in</body></html>\n")]),
            "text/html",
        ),
        (Reply(json_body=A_COMPLETION), "application/json"),
        (Reply(body=[sse("[DONE]")]), "text/event-stream"),
    ],
    ids=["proxy-login-page", "stream-ignored", "no-chunk"],
)
async def test_a_200_without_stream_events_is_a_malformed_response(
    provider: OpenAIProvider, llm_server: LLMServer, reply: Reply, content_type: str
) -> None:
    llm_server.script(reply)
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    assert raised.value.kind is ProviderErrorKind.SERVER_ERROR
    assert f"no stream events (Content-Type: {content_type}" in raised.value.detail


async def test_invalid_utf8_mid_stream_is_malformed_after_the_text_before_it(
    provider: OpenAIProvider, llm_server: LLMServer
) -> None:
    llm_server.script(
        Reply(body=[sse(chunk("Before.")), raw_bytes(b'data: {"bad": "\xff\xfe"}\n\n'), stall()])
    )
    events, error = await collect_until_error(provider)
    assert error.kind is ProviderErrorKind.SERVER_ERROR
    assert "UnicodeDecodeError" in error.detail
    assert events == [TextDelta("Before.")]


async def test_the_providers_own_error_text_is_kept_for_the_log_without_secrets(
    llm_server: LLMServer,
) -> None:
    proxied = OpenAIProvider(api_key=API_KEY, base_url=f"{llm_server.base_url}/v1")
    said = (
        f"registry.ollama.ai/library/gemma:2b does not support tools (key {API_KEY}, "
        f"upstream http://admin:hunter2@10.0.0.5/v1?key=abc123)\n" + "x" * 1000
    )
    llm_server.script(Reply(status=400, json_body={"error": {"message": said}}))
    try:
        with pytest.raises(ProviderError) as raised:
            await collect(proxied)
    finally:
        await proxied.aclose()
    detail = raised.value.detail
    assert detail.startswith("registry.ollama.ai/library/gemma:2b does not support tools")
    for secret in (API_KEY, "hunter2", "admin", "abc123", "\n"):
        assert secret not in detail
    assert len(detail) <= 300
    assert "does not support" not in raised.value.safe_message  # users see only our words


async def test_a_connection_dropped_mid_stream_is_a_connection_error(
    provider: OpenAIProvider, llm_server: LLMServer
) -> None:
    llm_server.script(Reply(body=[sse(chunk("par")), drop()]))
    events, error = await collect_until_error(provider)
    assert error.kind is ProviderErrorKind.CONNECTION
    assert events == [TextDelta("par")]


async def test_an_unreachable_server_is_a_connection_error() -> None:
    closed_port = OpenAIProvider(api_key=API_KEY, base_url="http://127.0.0.1:9/v1")
    try:
        with pytest.raises(ProviderError) as raised:
            await collect(closed_port)
        assert raised.value.kind is ProviderErrorKind.CONNECTION
    finally:
        await closed_port.aclose()


async def test_the_conversation_is_sent_in_the_openai_format(
    provider: OpenAIProvider, llm_server: LLMServer
) -> None:
    call = ToolCall("call_1", "now", {"timezone": "UTC"}, raw_arguments='{"timezone": "UTC"}')
    request = StreamRequest(
        model="test-model",
        context=(
            ContextItem(Role.SYSTEM, "Be brief."),
            ContextItem(Role.USER, "What is this?", images=(Image(PIXEL, "image/webp"),)),
            ContextItem(Role.ASSISTANT, "A cat."),
            ContextItem(Role.USER, "And the time?"),
        ),
        tool_history=(ToolExchange(call, {"time": "12:00"}, pre_tool_text=("Let me ", "look.")),),
        tools=(ToolSpec("now", "The current time", {"type": "object", "properties": {}}),),
    )
    llm_server.script(streamed(sse(chunk("Noon.")), sse(chunk(finish="stop"))))
    await collect(provider, request)
    body = llm_server.requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": f"data:image/webp;base64,{PIXEL_B64}"}},
            ],
        },
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": "And the time?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "now", "arguments": '{"timezone": "UTC"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"time": "12:00"}'},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "now",
                "description": "The current time",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]


async def test_a_kill_mid_stream_closes_the_connection_at_once(
    provider: OpenAIProvider, llm_server: LLMServer, harness: Harness
) -> None:
    llm_server.script(Reply(body=[sse(chunk("partial\n")), stall()]))
    await kill_mid_stream_and_check_the_socket(provider, llm_server, harness)


@pytest.mark.parametrize(
    ("reply", "phase"),
    [
        (Reply(header_delay=60, body=[sse(chunk("late"))]), TimeoutPhase.FIRST_TOKEN),
        (Reply(body=[stall()]), TimeoutPhase.FIRST_TOKEN),
        (Reply(body=[sse(chunk("begun\n")), stall()]), TimeoutPhase.IDLE),
        (Reply(body=[sse(chunk("a\n")), *[keep_alive(), pause(0.03)] * 20]), TimeoutPhase.IDLE),
    ],
    ids=["slow-headers", "silent-body", "mid-stream", "keep-alives-only"],
)
async def test_a_stall_is_ended_by_the_rolling_timeout_and_the_connection_closed(
    provider: OpenAIProvider,
    llm_server: LLMServer,
    harness: Harness,
    reply: Reply,
    phase: TimeoutPhase,
) -> None:
    llm_server.script(reply)
    await stall_and_check_the_socket(provider, llm_server, harness, phase)


def test_the_sanitising_rule_masks_secrets_and_keeps_one_short_line() -> None:
    secrets = secrets_of(API_KEY, "http://proxy-user:pw@proxy.example/v1")
    text = (
        f"bad key {API_KEY}; pw rejected by http://proxy-user:pw@proxy.example/v1?key=AIza1 "
        "with Authorization: Bearer sk-other\nnext\tline " + "y" * 500
    )
    said = sanitised(text, secrets)
    assert said.startswith("bad key ***; *** rejected by http://***@proxy.example/v1?key=*** ")
    assert "Bearer ***" in said
    assert "sk-other" not in said
    assert "\n" not in said
    assert "\t" not in said
    assert len(said) == MAX_DETAIL_CHARS
    # Echoed back percent-encoded, as a refused request's URL carries it, the key is masked too.
    echoed = sanitised(f"seen: {API_KEY.replace('-', '%2D')} and {quote(API_KEY)}", secrets)
    assert echoed == "seen: *** and ***"
    # A placeholder key for a server that takes none is no secret, and masking it would hide
    # the model's name: `ollama` stays readable.
    assert secrets_of("ollama", None) == ()
    assert sanitised("registry.ollama.ai/library/x", secrets_of("ollama", None)).startswith(
        "registry.ollama.ai"
    )
