"""The providers a model chain may name: their variables, the header each sends its key in,
and what a key or a base URL must be before the first request.

A base URL is checked as far as can be without a connection: scheme, host and port. Its
`user:password@` part is sent as Basic auth where the provider's key travels in a header of its
own (Gemini: `x-goog-api-key`), which is how an authenticating proxy in front of it expects
it. The OpenAI SDK sends its key as `Authorization: Bearer`, the very header Basic auth needs,
so the two cannot both reach the proxy (and aiohttp refuses the request): such a URL is refused
at start-up instead of failing every message.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from tomori.providers.errors import sanitised


@dataclass(frozen=True, slots=True)
class ProviderKind:
    key_variable: str
    base_url_variable: str
    key_header: str
    """The HTTP header the SDK sends the key in."""
    base_url_hint: str
    """What the base URL usually looks like, for an operator whose requests found nothing."""
    sdk: str = ""
    """The module of the provider's SDK when an extra of the package installs it ("" when
    every install has it): the extra is named after the provider."""
    native_prefill: bool = True
    """Whether its models go on from a trailing assistant turn (a native prefill). Gemini's
    do not while they think, and 2.5 models think unless told not to, which this cog does not
    do: a prefill reaches them as an instruction (TomoriBot's `resolvePrefillBlocker`)."""

    @property
    def takes_url_credentials(self) -> bool:
        """Basic auth from the URL can go along only if the key leaves `Authorization` free."""
        return self.key_header != "Authorization"


PROVIDER_KINDS = {
    "openai": ProviderKind(
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "Authorization",
        "an OpenAI-compatible server's usually ends in /v1",
    ),
    "gemini": ProviderKind(
        "GEMINI_API_KEY",
        "GEMINI_BASE_URL",
        "x-goog-api-key",
        "the endpoint's root, without /v1 or /v1beta, which the SDK adds itself; unset for "
        "Google's own",
        sdk="google.genai",
        native_prefill=False,
    ),
}
_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


def fits_a_header(key: str) -> bool:
    """Whether an HTTP header can carry the key: anything else fails every request (with a
    UnicodeEncodeError that no fallback catches), so it is refused before the first one."""
    return all("!" <= character <= "~" for character in key)


def base_url_problem(url: str, kind: ProviderKind) -> str | None:
    """What is wrong with a base URL, in words that never repeat its credentials."""
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return "it must be an http:// or https:// URL with a host"
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        return "its port must be a number from 1 to 65535"
    if not valid_host(parts.hostname):
        return "its host must be a host name or an IP address"
    if has_credentials(parts) and not kind.takes_url_credentials:
        return (
            f"a user name or password in the URL cannot be sent, since the {kind.key_variable} "
            f"already travels in the {kind.key_header} header that Basic auth would need; "
            f"remove the user:password@ part (a proxy that checks a token can take it as "
            f"{kind.key_variable})"
        )
    return None


def valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    try:
        name = host.encode("idna").decode("ascii").rstrip(".")
    except UnicodeError:
        return False
    labels = name.split(".")
    if all(label.isdigit() for label in labels):
        return False  # a dotted number that is not an IPv4 address, such as 999.0.0.1
    return len(name) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in labels)


def has_credentials(parts: SplitResult) -> bool:
    return parts.username is not None or parts.password is not None


def redacted(url: str | None) -> str | None:
    """The URL without any user:password part (by the same rule as provider error text)."""
    return None if url is None else sanitised(url)
