from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator

import pytest

from tests.support.files import PIXEL, PIXEL_B64
from tests.support.gemini_wire import api_error, call_part, response, text_part
from tests.support.llm_server import LLMServer, Reply, drop, pause, raw, raw_bytes, sse, stall
from tests.support.passes import (
    Harness,
    collect,
    collect_until_error,
    kill_mid_stream_and_check_the_socket,
    stall_and_check_the_socket,
)
from tomori.generation.results import TimeoutPhase
from tomori.providers.base import (
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
from tomori.providers.gemini import GeminiProvider

API_KEY = "gemini-test-secret-key"
SIGNATURE = base64.b64encode(b"signed-thought").decode()


@pytest.fixture
async def provider(llm_server: LLMServer) -> AsyncIterator[GeminiProvider]:
    opened = GeminiProvider(api_key=API_KEY, base_url=llm_server.base_url)
    yield opened
    await opened.aclose()


async def test_events_arrive_in_order_with_thoughts_as_details(
    provider: GeminiProvider, llm_server: LLMServer
) -> None:
    llm_server.script(
        Reply(
            body=[
                sse(response(text_part("Pondering", thought=True))),
                sse(response(text_part("Hel"))),
                sse(response(text_part("lo"), finish="STOP", usage=(8, 2))),
            ]
        )
    )
    assert await collect(provider) == [
        DetailsDelta("Pondering"),
        TextDelta("Hel"),
        TextDelta("lo"),
        UsageEvent(Usage(8, 2)),
        Finish("STOP"),
    ]
    seen = llm_server.requests[0]
    assert seen.path.endswith("/models/test-model:streamGenerateContent?alt=sse")
    assert seen.headers["x-goog-api-key"] == API_KEY


async def test_a_function_call_keeps_its_thought_signature(
    provider: GeminiProvider, llm_server: LLMServer
) -> None:
    llm_server.script(
        Reply(
            body=[
                sse(response(text_part("Checking."))),
                sse(response(call_part("now", {"timezone": "UTC"}, SIGNATURE), finish="STOP")),
            ]
        )
    )
    events = await collect(provider)
    calls = [event.call for event in events if isinstance(event, ToolCallEvent)]
    assert [(c.name, c.arguments, c.problem) for c in calls] == [("now", {"timezone": "UTC"}, None)]
    assert calls[0].extras == {"thought_signature": b"signed-thought"}
    assert events[0] == TextDelta("Checking.")


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, ProviderErrorKind.BAD_REQUEST),
        (401, ProviderErrorKind.AUTHENTICATION),
        (403, ProviderErrorKind.AUTHENTICATION),
        (429, ProviderErrorKind.RATE_LIMITED),
        (500, ProviderErrorKind.SERVER_ERROR),
        (503, ProviderErrorKind.SERVER_ERROR),
    ],
)
async def test_http_errors_map_to_their_kind_and_say_nothing_secret(
    provider: GeminiProvider, llm_server: LLMServer, status: int, kind: ProviderErrorKind
) -> None:
    llm_server.script(Reply(status=status, json_body=api_error(status, f"key {API_KEY} refused")))
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    assert (raised.value.kind, raised.value.status) == (kind, status)
    assert API_KEY not in raised.value.safe_message
    assert len(llm_server.requests) == 1  # nothing was retried


@pytest.mark.parametrize("reason", ["SAFETY", "PROHIBITED_CONTENT", "RECITATION"])
async def test_a_blocking_finish_reason_is_content_blocked(
    provider: GeminiProvider, llm_server: LLMServer, reason: str
) -> None:
    llm_server.script(Reply(body=[sse(response(text_part("Hm"))), sse(response(finish=reason))]))
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    assert raised.value.kind is ProviderErrorKind.CONTENT_BLOCKED
    assert reason in raised.value.safe_message


async def test_a_blocked_prompt_is_content_blocked(
    provider: GeminiProvider, llm_server: LLMServer
) -> None:
    llm_server.script(Reply(body=[sse(response(block_reason="SAFETY"))]))
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    assert raised.value.kind is ProviderErrorKind.CONTENT_BLOCKED


async def test_a_malformed_event_is_a_server_error(
    provider: GeminiProvider, llm_server: LLMServer
) -> None:
    llm_server.script(
        Reply(body=[sse(response(text_part("ok"))), raw("data: {broken\n\n"), stall()])
    )
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    assert raised.value.kind is ProviderErrorKind.SERVER_ERROR
    connection = llm_server.connections[0]
    await asyncio.wait_for(connection.closed.wait(), 1)  # the stream was not left open
    assert connection.closed_by_client


@pytest.mark.parametrize(
    "reply",
    [
        Reply(content_type="text/html", body=[raw("<html>\n<body>Log in</body>\n</html>\n")]),
        Reply(json_body={"id": "chatcmpl-1", "object": "chat.completion", "choices": []}),
        Reply(content_type="text/plain", body=[pause(0.0)]),
    ],
    ids=["proxy-login-page", "another-format", "empty-body"],
)
async def test_a_200_without_stream_events_is_a_malformed_response(
    provider: GeminiProvider, llm_server: LLMServer, reply: Reply
) -> None:
    llm_server.script(reply)
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    assert raised.value.kind is ProviderErrorKind.SERVER_ERROR


async def test_invalid_utf8_mid_stream_is_malformed_after_the_text_before_it(
    provider: GeminiProvider, llm_server: LLMServer
) -> None:
    llm_server.script(
        Reply(
            body=[
                sse(response(text_part("Before."))),
                raw_bytes(b'data: {"bad": "\xff\xfe"}\n\n'),
                stall(),
            ]
        )
    )
    events, error = await collect_until_error(provider)
    assert error.kind is ProviderErrorKind.SERVER_ERROR
    assert "UnicodeDecodeError" in error.detail
    assert events == [TextDelta("Before.")]


async def test_the_providers_own_error_text_is_kept_for_the_log_without_secrets(
    provider: GeminiProvider, llm_server: LLMServer
) -> None:
    said = f"Function calling is not enabled for models/x. ?key={API_KEY}"
    llm_server.script(Reply(status=400, json_body=api_error(400, said)))
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    assert raised.value.detail.startswith("Function calling is not enabled for models/x.")
    assert API_KEY not in raised.value.detail


async def test_credentials_in_the_base_url_reach_the_proxy_as_basic_auth_beside_the_key(
    llm_server: LLMServer,
) -> None:
    proxied = GeminiProvider(
        api_key=API_KEY, base_url=f"http://proxy-user:proxy-pass@127.0.0.1:{llm_server.port}"
    )
    llm_server.script(Reply(body=[sse(response(text_part("Through."), finish="STOP"))]))
    try:
        events = await collect(proxied)
    finally:
        await proxied.aclose()
    assert TextDelta("Through.") in events
    headers = llm_server.requests[0].headers
    assert (
        headers["authorization"] == "Basic " + base64.b64encode(b"proxy-user:proxy-pass").decode()
    )
    assert headers["x-goog-api-key"] == API_KEY


async def test_a_connection_dropped_mid_stream_is_a_connection_error(
    provider: GeminiProvider, llm_server: LLMServer
) -> None:
    llm_server.script(Reply(body=[sse(response(text_part("par"))), drop()]))
    with pytest.raises(ProviderError) as raised:
        await collect(provider)
    assert raised.value.kind is ProviderErrorKind.CONNECTION


async def test_an_unreachable_server_is_a_connection_error_without_a_hidden_retry() -> None:
    closed_port = GeminiProvider(api_key=API_KEY, base_url="http://127.0.0.1:9")
    started = time.monotonic()
    try:
        with pytest.raises(ProviderError) as raised:
            await collect(closed_port)
    finally:
        await closed_port.aclose()
    assert raised.value.kind is ProviderErrorKind.CONNECTION
    assert time.monotonic() - started < 1  # its implicit retry sleeps 1 to 10 s


async def test_images_a_tool_returned_follow_its_response_as_inline_data(
    provider: GeminiProvider, llm_server: LLMServer
) -> None:
    call = ToolCall("c1", "screenshot", {})
    request = StreamRequest(
        model="test-model",
        context=(ContextItem(Role.USER, "Show me."),),
        tool_history=(ToolExchange(call, {"text": ""}, images=(Image(PIXEL, "image/webp"),)),),
    )
    llm_server.script(Reply(body=[sse(response(text_part("A pixel."), finish="STOP"))]))
    await collect(provider, request)
    [response_part, image_part] = llm_server.requests[0].body["contents"][-1]["parts"]
    assert response_part == {"functionResponse": {"name": "screenshot", "response": {"text": ""}}}
    assert sorted(image_part["inlineData"].values()) == sorted([PIXEL_B64, "image/webp"])


async def test_the_conversation_is_sent_in_the_gemini_format(
    provider: GeminiProvider, llm_server: LLMServer
) -> None:
    call = ToolCall("c1", "now", {"timezone": "UTC"}, extras={"thought_signature": b"sig"})
    request = StreamRequest(
        model="test-model",
        context=(
            ContextItem(Role.SYSTEM, "Be brief."),
            ContextItem(Role.USER, "Look:", images=(Image(PIXEL, "image/webp"),)),
            ContextItem(Role.USER, "Well?"),
            ContextItem(Role.ASSISTANT, "A cat."),
            ContextItem(Role.USER, "Time?"),
        ),
        tool_history=(ToolExchange(call, {"time": "12:00"}, pre_tool_text=("Let me ", "look.")),),
        tools=(ToolSpec("now", "The current time", {"type": "object", "properties": {}}),),
    )
    llm_server.script(Reply(body=[sse(response(text_part("Noon."), finish="STOP"))]))
    await collect(provider, request)
    body = llm_server.requests[0].body
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    image = body["contents"][0]["parts"][1]["inlineData"]  # key case is the SDK's own choice
    assert sorted(image.values()) == sorted([PIXEL_B64, "image/webp"])
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [{"text": "Look:"}, {"inlineData": image}, {"text": "Well?"}],
        },
        {"role": "model", "parts": [{"text": "A cat."}]},
        {"role": "user", "parts": [{"text": "Time?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Let me look."},
                {
                    "functionCall": {"name": "now", "args": {"timezone": "UTC"}},
                    "thoughtSignature": base64.b64encode(b"sig").decode(),
                },
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "now", "response": {"time": "12:00"}}}],
        },
    ]
    declarations = body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["now"]


async def test_a_kill_mid_stream_closes_the_connection_at_once(
    provider: GeminiProvider, llm_server: LLMServer, harness: Harness
) -> None:
    llm_server.script(Reply(body=[sse(response(text_part("partial\n"))), stall()]))
    await kill_mid_stream_and_check_the_socket(provider, llm_server, harness)


@pytest.mark.parametrize(
    ("reply", "phase"),
    [
        (Reply(header_delay=60, body=[sse(response(text_part("late")))]), TimeoutPhase.FIRST_TOKEN),
        (Reply(body=[sse(response(text_part("begun\n"))), stall()]), TimeoutPhase.IDLE),
    ],
    ids=["slow-headers", "mid-stream"],
)
async def test_a_stall_is_ended_by_the_rolling_timeout_and_the_connection_closed(
    provider: GeminiProvider,
    llm_server: LLMServer,
    harness: Harness,
    reply: Reply,
    phase: TimeoutPhase,
) -> None:
    llm_server.script(reply)
    await stall_and_check_the_socket(provider, llm_server, harness, phase)
