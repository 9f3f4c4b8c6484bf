"""A model's context as the test LLM server keeps it: its own count of a request's tokens, and
the refusal of one too long in OpenAI's shape.

The count is deliberately not the bot's (`tomori.prompt.tokens`): every run of up to five word
characters is a token, and so is every other character but white space, plus three a message.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TOKEN = re.compile(r"\w{1,5}|[^\w\s]")
MESSAGE_TOKENS = 3


def text_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def wire_tokens(body: Any) -> int:
    """A chat request's tokens, the server's way: its messages' texts and the tools offered."""
    total = MESSAGE_TOKENS
    for message in body.get("messages", []):
        total += MESSAGE_TOKENS
        content = message.get("content")
        if isinstance(content, str):
            total += text_tokens(content)
        elif isinstance(content, list):
            for part in content:
                total += text_tokens(part.get("text", "")) if part.get("type") == "text" else 85
        if message.get("tool_calls"):
            total += text_tokens(json.dumps(message["tool_calls"]))
    if body.get("tools"):
        total += text_tokens(json.dumps(body["tools"]))
    return total


def refusal_text(context_tokens: int, tokens: int) -> str:
    """OpenAI's words for a request over its model's context."""
    return (
        f"This model's maximum context length is {context_tokens} tokens. However, your "
        f"messages resulted in {tokens} tokens. Please reduce the length of the messages."
    )


def context_length_error(context_tokens: int, tokens: int) -> dict[str, Any]:
    """OpenAI's 400 body for a request over its model's context, as it sends it."""
    error = {
        "message": refusal_text(context_tokens, tokens),
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
    return {"error": error}
