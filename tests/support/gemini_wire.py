"""Gemini `streamGenerateContent?alt=sse` responses as the wire carries them."""

from __future__ import annotations

from typing import Any


def response(
    *parts: dict[str, Any],
    finish: str | None = None,
    usage: tuple[int, int] | None = None,
    block_reason: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"modelVersion": "test-model"}
    if parts or finish:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
        if finish is not None:
            candidate["finishReason"] = finish
        body["candidates"] = [candidate]
    if usage is not None:
        body["usageMetadata"] = {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "totalTokenCount": sum(usage),
        }
    if block_reason is not None:
        body["promptFeedback"] = {"blockReason": block_reason}
    return body


def text_part(text: str, *, thought: bool = False) -> dict[str, Any]:
    return {"text": text, "thought": True} if thought else {"text": text}


def call_part(name: str, args: dict[str, Any], signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def api_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": "FAILED"}}
