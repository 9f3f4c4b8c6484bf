"""A refusal of a request too long for the model's context, told apart from any other bad
request in each server's own words, with the numbers it names (`providers.errors.overflow`)."""

from __future__ import annotations

import pytest

from tomori.providers.errors import Overflow, overflow, status_error


@pytest.mark.parametrize(
    ("detail", "code", "named"),
    [
        (  # OpenAI, with its code
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens. Please reduce the length of the messages.",
            "context_length_exceeded",
            Overflow(8192, 9000),
        ),
        (  # vLLM, older
            "This model's maximum context length is 2048 tokens. However, you requested 2100 "
            "tokens (2000 in the messages, 100 in the completion). Please reduce the length "
            "of the messages or completion.",
            None,
            Overflow(2048, 2000),
        ),
        (  # vLLM, newer
            "This model's maximum context length is 1536 tokens and your request has 4176 "
            "input tokens",
            None,
            Overflow(1536, 4176),
        ),
        (  # llama.cpp's server
            "request (4476 tokens) exceeds the available context size (4096 tokens)",
            None,
            Overflow(4096, 4476),
        ),
        (  # Gemini
            "The input token count (134123) exceeds the maximum number of tokens allowed (131072).",
            None,
            Overflow(131072, 134123),
        ),
        ("prompt is too long", "context_length_exceeded", Overflow()),  # the code says it
    ],
)
def test_a_context_refusal_is_known_by_its_words_and_names_its_numbers(
    detail: str, code: str | None, named: Overflow
) -> None:
    assert overflow(status_error(400, detail=detail, code=code)) == named


@pytest.mark.parametrize(
    ("status", "detail"),
    [
        (400, "image_url is only supported by certain models"),
        (400, "Invalid value for 'temperature'"),
        (500, "This model's maximum context length is 8192 tokens."),  # no bad request
    ],
)
def test_another_failure_is_no_context_refusal(status: int, detail: str) -> None:
    assert overflow(status_error(status, detail=detail)) is None
