"""Turning what an SDK raised into a `ProviderError` the generation turn can act on.

Both providers classify by HTTP status first, because that is what both SDKs expose and what
decides the next step: credentials and bad requests will not get better by retrying, rate
limits and server errors may on another model. The messages are ours, never the SDK's, so no
key, URL or request detail reaches a user through them.

The provider's own words (the `error.message` of a 400, what made a response unreadable) still
matter to whoever runs the bot: "this model does not support tools" is the fix, "HTTP 400" is
not. They travel as `ProviderError.detail`, for the log only, and every one passes through
`sanitised` first: that is the single rule for provider text reaching a log line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, quote_plus, urlsplit

from tomori.providers.base import ProviderError, ProviderErrorKind

_MESSAGES = {
    ProviderErrorKind.AUTHENTICATION: "the provider refused the credentials",
    ProviderErrorKind.RATE_LIMITED: "the provider is rate limiting requests",
    ProviderErrorKind.SERVER_ERROR: "the provider failed to answer",
    ProviderErrorKind.BAD_REQUEST: "the provider rejected the request",
    ProviderErrorKind.CONNECTION: "the connection to the provider failed",
    ProviderErrorKind.CUT_SHORT: "the provider's stream ended before its answer did",
    ProviderErrorKind.CONTENT_BLOCKED: "the provider blocked the content",
}


MAX_DETAIL_CHARS = 300
"""A provider's error text is logged up to this long: enough for its message, not a page."""

_URL_CREDENTIALS = re.compile(r"(//)[^/?#]*@")
_SECRET_PARAMETER = re.compile(r"((?:api_?key|key|token|password)=)[^&\s\"']+", re.IGNORECASE)
_BEARER = re.compile(r"(bearer\s+)\S+", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x20\x7f]+")


def sanitised(text: str, secrets: Iterable[str] = ()) -> str:
    """Provider text made fit for a log line: no secret, no URL credentials, one short line.

    `secrets` are the values this provider was configured with (its key, the password of its
    base URL); anything shaped like a credential (`user:pass@` in a URL, `key=` in a query,
    a bearer token) is masked too, whoever's it is. A secret is masked as written and as a URL
    would carry it (percent-encoded), since a provider may echo the request it refused. Control
    characters and line breaks become single spaces so one error is one log line.
    """
    forms = {form for secret in secrets if secret for form in (secret, *_encoded(secret))}
    for secret in sorted(forms, key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _URL_CREDENTIALS.sub(r"\1***@", text)
    text = _SECRET_PARAMETER.sub(r"\1***", text)
    text = _BEARER.sub(r"\1***", text)
    text = _CONTROL.sub(" ", text).strip()
    if len(text) > MAX_DETAIL_CHARS:
        text = text[: MAX_DETAIL_CHARS - 1] + "…"
    return text


def _encoded(secret: str) -> tuple[str, ...]:
    """The secret as a URL's path or query would carry it (`-` as `%2D` by strict encoders)."""
    strict = "".join(
        f"%{byte:02X}" if not chr(byte).isalnum() else chr(byte) for byte in secret.encode()
    )
    return (quote(secret, safe=""), quote_plus(secret), strict)


PLACEHOLDER_KEY_CHARS = 8
"""A key shorter than this is a placeholder for a local server that takes none (`ollama`):
real provider keys are dozens of characters, and masking `ollama` would garble the very
model names the log line is for. A URL's password is masked whatever its length."""


def secrets_of(api_key: str, base_url: str | None) -> tuple[str, ...]:
    """What a provider configured with this key and base URL must never log."""
    password = urlsplit(base_url).password if base_url else None
    key = api_key if len(api_key) >= PLACEHOLDER_KEY_CHARS else None
    return tuple(secret for secret in (key, password) if secret)


def error_text(body: object) -> str:
    """The message of an error body in the shapes providers send (`{"error": {"message"}}`)."""
    if isinstance(body, Mapping):
        for name in ("error", "message", "detail"):
            if body.get(name):
                return error_text(body[name])
    if isinstance(body, str):
        return body
    return "" if body is None else json.dumps(body, default=str)


def kind_for_status(status: int) -> ProviderErrorKind:
    if status in (401, 403):
        return ProviderErrorKind.AUTHENTICATION
    if status == 429:
        return ProviderErrorKind.RATE_LIMITED
    if status >= 500:
        return ProviderErrorKind.SERVER_ERROR
    return ProviderErrorKind.BAD_REQUEST


def status_error(
    status: int,
    headers: Mapping[str, str] | None = None,
    *,
    detail: str = "",
    code: str | None = None,
) -> ProviderError:
    """`detail` must already be `sanitised`, like every `detail` below; `code` is the error's
    own code, where the provider gives one (`content_filter`)."""
    if refuses_content(status, code, detail):
        return content_blocked(shown_reason(detail) or code or "none given", status, detail)
    kind = kind_for_status(status)
    return ProviderError(
        kind,
        f"{_MESSAGES[kind]} (HTTP {status})",
        status=status,
        retry_after_s=_retry_after(headers) if kind is ProviderErrorKind.RATE_LIMITED else None,
        detail=detail,
        code=code or "",
    )


def connection_error(detail: str = "") -> ProviderError:
    return ProviderError(
        ProviderErrorKind.CONNECTION, _MESSAGES[ProviderErrorKind.CONNECTION], detail=detail
    )


def cut_short(detail: str) -> ProviderError:
    """A stream that ended without the provider's word that the answer is complete: what was
    read may be any part of the answer, so it is no complete answer. `detail` names the word
    that never came ("no finish reason")."""
    return ProviderError(
        ProviderErrorKind.CUT_SHORT, _MESSAGES[ProviderErrorKind.CUT_SHORT], detail=detail
    )


def malformed_response(detail: str = "") -> ProviderError:
    """A 200 whose body is not the stream asked for: garbled, truncated, or another format."""
    return ProviderError(
        ProviderErrorKind.SERVER_ERROR,
        "the provider sent a response that could not be read",
        detail=detail,
    )


def content_blocked(reason: str, status: int | None = None, detail: str = "") -> ProviderError:
    """The provider refused the content; `reason` is shown to the asker, so it must be
    `shown_reason`'s or the provider's own code (`SAFETY`)."""
    return ProviderError(
        ProviderErrorKind.CONTENT_BLOCKED,
        f"{_MESSAGES[ProviderErrorKind.CONTENT_BLOCKED]} ({reason})",
        status=status,
        detail=detail,
        reason=reason,
    )


REFUSAL_CODES = frozenset({"content_filter", "content_policy_violation", "invalid_prompt"})
"""The codes OpenAI and Azure OpenAI give a request their filters refused."""
_REFUSAL_WORDS = re.compile(
    r"content[ _-]?(?:filter|management|policy)|flagged|moderation|responsible ?ai"
    r"|safety (?:filter|system|polic)",
    re.IGNORECASE,
)


def refuses_content(status: int, code: str | None, detail: str) -> bool:
    """Whether a 400 or 403 is the provider refusing what it was asked (Azure's content
    filter, OpenAI's flagged prompt, OpenRouter's moderation): unlike another bad request,
    asking the next model would route around the provider's judgement."""
    if status not in (400, 403):
        return False
    return code in REFUSAL_CODES or bool(_REFUSAL_WORDS.search(detail))


MAX_REASON_CHARS = 200
_URL = re.compile(r"\S+://\S+")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def shown_reason(detail: str) -> str:
    """A refusal's reason as the asker is shown it: the first sentence of the provider's
    (sanitised) words, without its links, one short line."""
    text = " ".join(_URL.sub("", detail).split())
    end = _SENTENCE_END.search(text)
    sentence = text[: end.start() + 1] if end is not None else text
    if len(sentence) > MAX_REASON_CHARS:
        sentence = sentence[: MAX_REASON_CHARS - 1] + "…"
    return sentence


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if headers is None:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: rare from LLM providers, not worth a parser


_IMAGE_WORDS = re.compile(r"image|vision|multimodal|multi-modal", re.IGNORECASE)


def refuses_images(error: ProviderError) -> bool:
    """Whether a provider turned the request down because of the images in it.

    A bad request whose text names images (OpenAI's "image_url is only supported by certain
    models", llama.cpp's "image input is not supported", Gemini's "Unable to process input
    image", vLLM's "not a multimodal model"): the same request without them may well succeed,
    which no other bad request promises.
    """
    return error.kind is ProviderErrorKind.BAD_REQUEST and bool(_IMAGE_WORDS.search(error.detail))


@dataclass(frozen=True, slots=True)
class Overflow:
    """A provider's refusal of a request longer than its model's context, and the numbers
    it named, where it named them."""

    context_tokens: int | None = None
    """The tokens the model's context holds."""
    sent_tokens: int | None = None
    """The tokens the request's messages came to, as the server counted them."""


OVERFLOW_CODES = frozenset({"context_length_exceeded"})
"""OpenAI's code for it (llama.cpp's code is the status; its words say it)."""
_OVERFLOW_WORDS = re.compile(
    r"maximum context length|context (?:size|window|length)|input token count"
    r"|prompt is too long|too many tokens",
    re.IGNORECASE,
)
_CONTEXT_NAMED = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),  # OpenAI, vLLM
    re.compile(r"available context size \((\d+) tokens\)", re.IGNORECASE),  # llama.cpp
    re.compile(r"maximum number of tokens allowed \((\d+)\)", re.IGNORECASE),  # Gemini
)
_SENT_NAMED = (
    re.compile(r"\((\d+) in the messages", re.IGNORECASE),  # OpenAI, vLLM
    re.compile(r"messages resulted in (\d+) tokens", re.IGNORECASE),  # OpenAI
    re.compile(r"request has (\d+) input tokens", re.IGNORECASE),  # vLLM
    re.compile(r"request \((\d+) tokens\) exceeds", re.IGNORECASE),  # llama.cpp
    re.compile(r"input token count \((\d+)\)", re.IGNORECASE),  # Gemini
)


def overflow(error: ProviderError) -> Overflow | None:
    """The refusal of a request too long for the model's context, if `error` is one: a bad
    request with OpenAI's `context_length_exceeded` code, or whose words say so (OpenAI's and
    vLLM's "maximum context length is N tokens", llama.cpp's "exceeds the available context
    size", Gemini's "The input token count (M) exceeds the maximum number of tokens allowed
    (N)"). Unlike another bad request, a shorter request to the same model may well succeed."""
    if error.kind is not ProviderErrorKind.BAD_REQUEST:
        return None
    if error.code not in OVERFLOW_CODES and not _OVERFLOW_WORDS.search(error.detail):
        return None
    return Overflow(_named(_CONTEXT_NAMED, error.detail), _named(_SENT_NAMED, error.detail))


def _named(patterns: Iterable[re.Pattern[str]], detail: str) -> int | None:
    for pattern in patterns:
        if (found := pattern.search(detail)) is not None:
            return int(found.group(1))
    return None
