"""Turning what an SDK raised into a `ProviderError` the generation turn can act on.

Both providers classify by HTTP status first, because that is what both SDKs expose and what
decides the next step: credentials and bad requests will not get better by retrying, rate
limits and server errors may on another model. The messages are ours, never the SDK's, so no
key, URL or request detail reaches a user or a log line through them.
"""

from __future__ import annotations

from collections.abc import Mapping

from tomori.providers.base import ProviderError, ProviderErrorKind

_MESSAGES = {
    ProviderErrorKind.AUTHENTICATION: "the provider refused the credentials",
    ProviderErrorKind.RATE_LIMITED: "the provider is rate limiting requests",
    ProviderErrorKind.SERVER_ERROR: "the provider failed to answer",
    ProviderErrorKind.BAD_REQUEST: "the provider rejected the request",
    ProviderErrorKind.CONNECTION: "the connection to the provider failed",
    ProviderErrorKind.CONTENT_BLOCKED: "the provider blocked the content",
}


def kind_for_status(status: int) -> ProviderErrorKind:
    if status in (401, 403):
        return ProviderErrorKind.AUTHENTICATION
    if status == 429:
        return ProviderErrorKind.RATE_LIMITED
    if status >= 500:
        return ProviderErrorKind.SERVER_ERROR
    return ProviderErrorKind.BAD_REQUEST


def status_error(status: int, headers: Mapping[str, str] | None = None) -> ProviderError:
    kind = kind_for_status(status)
    return ProviderError(
        kind,
        f"{_MESSAGES[kind]} (HTTP {status})",
        status=status,
        retry_after_s=_retry_after(headers) if kind is ProviderErrorKind.RATE_LIMITED else None,
    )


def connection_error() -> ProviderError:
    return ProviderError(ProviderErrorKind.CONNECTION, _MESSAGES[ProviderErrorKind.CONNECTION])


def malformed_response() -> ProviderError:
    return ProviderError(
        ProviderErrorKind.SERVER_ERROR, "the provider sent a response that could not be read"
    )


def content_blocked(reason: str) -> ProviderError:
    return ProviderError(
        ProviderErrorKind.CONTENT_BLOCKED,
        f"{_MESSAGES[ProviderErrorKind.CONTENT_BLOCKED]} ({reason})",
    )


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    if headers is None:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: rare from LLM providers, not worth a parser
