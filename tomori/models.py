"""`TOMORI_MODELS`: which models answer, in order, and the providers that serve them.

`TOMORI_MODELS=openai:gpt-4o-mini,gemini:gemini-2.5-flash` names the primary model first and
then up to five fallbacks, each `provider:model`. Every problem stops start-up with one error
naming the entry at fault (never a key's value), because a chain that silently lost an entry
would only show itself on the day the primary fails.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from tomori.config import ConfigError
from tomori.providers.base import Provider

MAX_FALLBACKS = 5
EXAMPLE = "openai:gpt-4o-mini,gemini:gemini-2.5-flash"


@dataclass(frozen=True, slots=True)
class ProviderKind:
    key_variable: str
    base_url_variable: str


PROVIDER_KINDS = {
    "openai": ProviderKind("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "gemini": ProviderKind("GEMINI_API_KEY", "GEMINI_BASE_URL"),
}


MODEL_VARIABLES: tuple[tuple[str, str, str], ...] = (
    (
        "TOMORI_MODELS",
        "(required)",
        "provider:model, comma separated, primary first, then up "
        "to 5 fallbacks; providers: openai, gemini",
    ),
    (
        "OPENAI_API_KEY",
        "(none)",
        "key for openai: entries (any non-empty value for a local server that takes none)",
    ),
    (
        "OPENAI_BASE_URL",
        "OpenAI's",
        "any OpenAI-compatible server: OpenRouter, vLLM, "
        "llama.cpp, Ollama (http://localhost:11434/v1)",
    ),
    ("GEMINI_API_KEY", "(none)", "key for gemini: entries"),
    ("GEMINI_BASE_URL", "Google's", "another Gemini endpoint (a proxy, or a test server)"),
)
"""(variable, default, what it does) for `--help` and the README."""


@dataclass(frozen=True, slots=True)
class ModelEntry:
    provider: str
    model: str

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"


@dataclass(frozen=True, slots=True)
class Credentials:
    api_key: str
    base_url: str | None

    def __repr__(self) -> str:  # never print a key, even in a traceback's locals
        return f"Credentials(api_key='***', base_url={_redacted(self.base_url)!r})"


@dataclass(frozen=True, slots=True)
class ModelChain:
    """The models in the order they are tried, and the credentials of each provider used."""

    entries: tuple[ModelEntry, ...]
    credentials: Mapping[str, Credentials]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ModelChain:
        env = os.environ if environ is None else environ
        raw = env.get("TOMORI_MODELS", "")
        if not raw.strip():
            raise ConfigError(
                f"TOMORI_MODELS is not set: list the models to use as provider:model, "
                f"primary first, comma separated (for example {EXAMPLE})"
            )
        entries = tuple(_parse_entry(piece, raw) for piece in raw.split(","))
        if len(entries) > 1 + MAX_FALLBACKS:
            raise ConfigError(
                f"TOMORI_MODELS lists {len(entries)} models: at most {1 + MAX_FALLBACKS} are "
                f"allowed (a primary and up to {MAX_FALLBACKS} fallbacks)"
            )
        credentials = {}
        for entry in entries:
            if entry.provider not in credentials:
                credentials[entry.provider] = _credentials_for(entry, env)
        return cls(entries, credentials)

    def build_providers(self) -> dict[str, Provider]:
        """One provider (one HTTP client) per provider named; the caller closes them.

        A provider's SDK is imported here, and only when a model of it is configured: each SDK
        brings tens of thousands of long-lived objects, which every full garbage collection of
        the bot's process walks again (google-genai alone costs about 25 ms a pass here).
        """
        providers: dict[str, Provider] = {}
        for name, credentials in self.credentials.items():
            if name == "openai":
                from tomori.providers.openai import OpenAIProvider

                providers[name] = OpenAIProvider(
                    api_key=credentials.api_key, base_url=credentials.base_url
                )
            else:
                from tomori.providers.gemini import GeminiProvider

                providers[name] = GeminiProvider(
                    api_key=credentials.api_key, base_url=credentials.base_url
                )
        return providers


def _parse_entry(piece: str, raw: str) -> ModelEntry:
    entry = piece.strip()
    if not entry:
        raise ConfigError(f"TOMORI_MODELS={raw!r} has an empty entry: remove the extra comma")
    provider, colon, model = entry.partition(":")
    provider, model = provider.strip().lower(), model.strip()
    if not colon or not model or not provider:
        raise ConfigError(
            f"TOMORI_MODELS entry {entry!r} is not provider:model (for example openai:gpt-4o-mini)"
        )
    if provider not in PROVIDER_KINDS:
        known = ", ".join(sorted(PROVIDER_KINDS))
        raise ConfigError(
            f"TOMORI_MODELS entry {entry!r} names an unknown provider {provider!r}: "
            f"known providers are {known}"
        )
    return ModelEntry(provider, model)


def _credentials_for(entry: ModelEntry, env: Mapping[str, str]) -> Credentials:
    kind = PROVIDER_KINDS[entry.provider]
    api_key = env.get(kind.key_variable, "").strip()
    if not api_key:
        raise ConfigError(
            f"TOMORI_MODELS entry {entry.label!r} needs {kind.key_variable}, which is not set "
            f"(a local server that takes no key still needs any non-empty value)"
        )
    base_url = env.get(kind.base_url_variable, "").strip() or None
    if base_url is not None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"{kind.base_url_variable}={_redacted(base_url)!r} is not allowed: it must be "
                f"an http:// or https:// URL"
            )
    return Credentials(api_key, base_url)


def _redacted(url: str | None) -> str | None:
    """The URL without any user:password part."""
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()
