"""How many tokens a request holds, estimated with no download: the budget's one measure.

A tokenizer that matches the model is rarely at hand (a local server's model is anyone's, and
tiktoken fetches its encodings from the internet on first use, which a turn can never wait
on), so the text is counted as byte-pair tokenizers tend to cut it, erring high: a run of Latin
letters a token per four (a long word is several), digits a token per three, each punctuation
mark and each line break one, and each other character one (two beyond the Basic
Multilingual Plane: emoji, rare CJK). English prose comes out a little above what OpenAI's and
Llama's tokenizers say; Japanese and Chinese about even. Each model's own ratio to what its
server reports corrects the rest (`tomori.generation.contexts`).
"""

from __future__ import annotations

import json
import math
import re

from tomori.providers.base import ContextItem, StreamRequest, ToolExchange, ToolSpec

_LETTERS = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"\d{1,3}")
_MARKS = re.compile(r"[!-/:-@\[-`{-~\n]")
_OTHER = re.compile(r"[^\x00-\x7f]")
_ASTRAL = re.compile(r"[\U00010000-\U0010ffff]")

MESSAGE_TOKENS = 4
"""What a chat template adds around each message (role markers, separators)."""
REQUEST_TOKENS = 3
"""What it adds once per request (the assistant's turn it primes)."""
IMAGE_TOKENS = 768
"""An image, counted as OpenAI's high detail counts a 1024-pixel square (765); Gemini's 258
is less, a local model's anyone's."""


def text_tokens(text: str) -> int:
    """The estimate of `text`'s tokens (see the module docstring)."""
    words = _LETTERS.findall(text)
    letters = sum(map(len, words))
    return (
        (letters + 3 * len(words)) // 4
        + len(_DIGITS.findall(text))
        + len(_MARKS.findall(text))
        + len(_OTHER.findall(text))
        + len(_ASTRAL.findall(text))
    )


def item_tokens(item: ContextItem) -> int:
    """One message's estimate, its template's share and its images included."""
    return MESSAGE_TOKENS + text_tokens(item.text) + IMAGE_TOKENS * len(item.images)


def fixed_tokens(request: StreamRequest) -> int:
    """Everything of `request` beyond its context items: its notices, the tools offered, the
    tool exchanges of the turn so far, and the request's own share."""
    notices = sum(map(item_tokens, request.request_notices))
    tools = sum(MESSAGE_TOKENS + text_tokens(json.dumps(_wire(tool))) for tool in request.tools)
    exchanges = sum(map(exchange_tokens, request.tool_history))
    return REQUEST_TOKENS + notices + tools + exchanges


def exchange_tokens(exchange: ToolExchange) -> int:
    """One tool exchange's estimate: the call, its result and the text before it."""
    return (
        2 * MESSAGE_TOKENS
        + text_tokens("".join(exchange.pre_tool_text))
        + text_tokens(f"{exchange.call.name} {exchange.call.raw_arguments}")
        + text_tokens(json.dumps(exchange.result, default=str))
        + IMAGE_TOKENS * len(exchange.images)
    )


def _wire(tool: ToolSpec) -> dict[str, object]:
    """A tool as a chat request offers it (OpenAI's shape; Gemini's declaration is alike): its
    JSON punctuation is tokens too."""
    described = {"name": tool.name, "description": tool.description}
    return {"type": "function", "function": {**described, "parameters": tool.parameters}}


def request_tokens(request: StreamRequest) -> int:
    """The estimate of the whole request as it is sent."""
    return fixed_tokens(request) + sum(map(item_tokens, request.context))


def scaled(tokens: int, ratio: float) -> int:
    """An estimate as a model's server counts it, by the ratio learned of it (rounded up)."""
    return math.ceil(tokens * ratio)
