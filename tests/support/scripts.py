"""Scripted LLM replies in the OpenAI wire format, for end-to-end tests."""

from __future__ import annotations

from collections.abc import Callable

from tests.support.llm_server import Action, Reply, SeenRequest, pause, sse, stall
from tests.support.openai_wire import chunk, tool_fragment, usage_chunk
from tests.support.token_window import wire_tokens


def finished(text: str) -> list[Action]:
    """How the model ends a stream of `text`: its finish reason, its usage, `[DONE]`."""
    return [sse(chunk(finish="stop")), sse(usage_chunk(10, len(text) // 4)), sse("[DONE]")]


def answer(text: str, *, pieces: int = 8, gap: float = 0.0) -> Reply:
    """The model streams `text` in `pieces` chunks, `gap` seconds apart."""
    size = max(1, -(-len(text) // pieces))
    body: list[Action] = []
    for at in range(0, len(text), size):
        if gap:
            body.append(pause(gap))
        body.append(sse(chunk(text[at : at + size])))
    return Reply(body=[*body, *finished(text)])


def in_parts(*parts: str, gap: float = 0.5) -> Reply:
    """The model streams each of `parts` `gap` seconds after the one before: with a gap over
    the writer's first gathering, the first part is a message of its own."""
    body: list[Action] = []
    for n, part in enumerate(parts):
        if n:
            body.append(pause(gap))
        body.append(sse(chunk(part)))
    text = "".join(parts)
    return Reply(body=[*body, *finished(text)])


def stalled_after(text: str) -> Reply:
    """The model sends `text`, then nothing more, ever."""
    return Reply(body=[sse(chunk(text)), stall()])


def silent() -> Reply:
    """The model accepts the request and never sends a byte of body."""
    return Reply(body=[stall()])


def tool_call(
    name: str,
    arguments: str,
    *,
    call_id: str = "call_1",
    text: str = "",
    usage: tuple[int, int] | None = None,
) -> Reply:
    """The model (optionally says `text`, then) calls tool `name` with raw JSON `arguments`;
    with `usage`, it reports the tokens it used (in, out), else none."""
    body: list[Action] = [sse(chunk(text))] if text else []
    body += [
        sse(chunk(tool_calls=[tool_fragment(0, call_id=call_id, name=name)])),
        sse(chunk(tool_calls=[tool_fragment(0, arguments=arguments)])),
        sse(chunk(finish="tool_calls")),
        *([sse(usage_chunk(*usage))] if usage is not None else []),
        sse("[DONE]"),
    ]
    return Reply(body=body)


def http_error(status: int) -> Reply:
    return Reply(status=status, json_body={"error": {"message": f"HTTP {status} from the model"}})


def counted_answer(text: str) -> Callable[[SeenRequest], Reply]:
    """Every request answered `text`, its usage the request's tokens as the server counts
    them (`token_window.wire_tokens`), as an OpenAI-compatible server reports."""

    def reply(request: SeenRequest) -> Reply:
        prompt = wire_tokens(request.body)
        return Reply(
            body=[
                sse(chunk(text)),
                sse(chunk(finish="stop")),
                sse(usage_chunk(prompt, max(1, len(text) // 4))),
                sse("[DONE]"),
            ]
        )

    return reply
