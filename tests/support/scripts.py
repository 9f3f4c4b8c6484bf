"""Scripted LLM replies in the OpenAI wire format, for end-to-end tests."""

from __future__ import annotations

from tests.support.llm_server import Action, Reply, pause, sse, stall
from tests.support.openai_wire import chunk, usage_chunk


def answer(text: str, *, pieces: int = 8, gap: float = 0.0) -> Reply:
    """The model streams `text` in `pieces` chunks, `gap` seconds apart."""
    size = max(1, -(-len(text) // pieces))
    body: list[Action] = []
    for at in range(0, len(text), size):
        if gap:
            body.append(pause(gap))
        body.append(sse(chunk(text[at : at + size])))
    body += [sse(chunk(finish="stop")), sse(usage_chunk(10, len(text) // 4)), sse("[DONE]")]
    return Reply(body=body)


def stalled_after(text: str) -> Reply:
    """The model sends `text`, then nothing more, ever."""
    return Reply(body=[sse(chunk(text)), stall()])


def silent() -> Reply:
    """The model accepts the request and never sends a byte of body."""
    return Reply(body=[stall()])
