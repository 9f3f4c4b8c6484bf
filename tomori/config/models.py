"""`TOMORI_MODELS`: which models answer, in order, and the providers that serve them.

`TOMORI_MODELS=openai:gpt-4o-mini,gemini:gemini-2.5-flash` names the primary model first and
then up to five fallbacks, each `provider:model`. A model that takes images says so with
`+vision` (`openai:gpt-4o-mini+vision`): the others are sent the text alone, with a note that
an image they cannot see was attached. A prefill (`/tomori prefill`, `/respond`) is sent as a
trailing assistant turn to the models whose provider continues one
(`ProviderKind.native_prefill`); `+noprefill` marks a model of such a provider that does not (a
server whose template refuses or ignores a trailing assistant turn), so a manual prefill reaches
it as an instruction. Every problem stops start-up with one error naming the entry at fault
(never a key's value), because a chain that silently lost an entry would only show itself on
the day the primary fails.

"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from tomori.config.allowed_models import VARIABLE as ALLOWED_VARIABLE
from tomori.config.allowed_models import AllowedModels
from tomori.config.parsers import install_extra, installed
from tomori.config.provider_kinds import (
    PROVIDER_KINDS,
    base_url_problem,
    fits_a_header,
    redacted,
)
from tomori.config.settings import MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS, ConfigError
from tomori.providers.base import Provider

MAX_FALLBACKS = 5
EXAMPLE = "openai:gpt-4o-mini,gemini:gemini-2.5-flash"


MODEL_VARIABLES: tuple[tuple[str, str, str], ...] = (
    (
        "TOMORI_MODELS",
        "(required)",
        "provider:model, comma separated, primary first, then up "
        "to 5 fallbacks, each model once; providers: openai, gemini; +vision (once) after a "
        "model that takes images (openai:gpt-4o-mini+vision); +noprefill after an openai: "
        "model whose server ignores a trailing assistant turn (a prefill is then an "
        "instruction); +context=N (or +context=Nk, thousands of 1024) after a model whose "
        "context holds N tokens (openai:llama3.2+context=8k): its requests are fitted to "
        "it, whatever TOMORI_CONTEXT_TOKENS says (an admin's chain may lower it, never raise "
        "it)",
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
        "llama.cpp, Ollama (http://localhost:11434/v1); no user:password@ "
        "(the key takes the Authorization header)",
    ),
    (
        "TOMORI_ALLOWED_MODELS",
        "the models of TOMORI_MODELS",
        "the models a server's admins may choose (/tomori model, a persona's models), as "
        "provider:pattern, comma separated (openai:gpt-4o-mini, openai:gpt-4.1-*, gemini:*), "
        "or * for every model of the providers the bot has a key for; +vision after a pattern "
        "lets admins send its models images (openai:gpt-4o*+vision, *+vision): unset, only "
        "the models TOMORI_MODELS marks +vision may be",
    ),
    (
        "GEMINI_API_KEY",
        "(none)",
        "key for gemini: entries (which need the gemini extra: pip install 'tomori-cog[gemini]')",
    ),
    (
        "GEMINI_BASE_URL",
        "Google's",
        "another Gemini endpoint (a proxy, or a test server); a user:password@ goes to "
        "the proxy as Basic auth",
    ),
)
"""(variable, default, what it does) for `--help` and docs/configuration.md."""


_SUFFIX = re.compile(r"\s*\+\s*(vision|noprefill|context\s*=\s*(\d{1,8})\s*(k?))$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ModelEntry:
    provider: str
    model: str
    vision: bool = False
    """Whether the model is sent images (`+vision` in its entry); `label` leaves it out."""
    no_prefill: bool = False
    """`+noprefill` in its entry: it takes no native prefill, whatever its provider does."""
    context_tokens: int | None = None
    """`+context=N` in its entry: the tokens its context holds (None: the bot's default)."""

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def native_prefill(self) -> bool:
        """Whether a prefill is sent to it as a trailing assistant turn (else in words)."""
        return not self.no_prefill and PROVIDER_KINDS[self.provider].native_prefill

    @property
    def written(self) -> str:
        """The entry as `TOMORI_MODELS` writes it, its suffixes included."""
        vision = "+vision" if self.vision else ""
        context = "" if self.context_tokens is None else f"+context={self.context_tokens}"
        return self.label + vision + ("+noprefill" if self.no_prefill else "") + context


@dataclass(frozen=True, slots=True)
class Credentials:
    api_key: str
    base_url: str | None

    def __repr__(self) -> str:  # never print a key, even in a traceback's locals
        return f"Credentials(api_key='***', base_url={redacted(self.base_url)!r})"

    @property
    def endpoint(self) -> str:
        """Where its models are asked, in words safe to keep in the database: the base URL
        without any user:password part, or "" for the provider's own."""
        return redacted(self.base_url) or ""


@dataclass(frozen=True, slots=True)
class ModelChain:
    """The models in the order they are tried, and the credentials of each provider used."""

    entries: tuple[ModelEntry, ...]
    credentials: Mapping[str, Credentials]
    allowed: AllowedModels = AllowedModels(None)  # noqa: RUF009 (frozen: shared safely)
    """What an admin's chain may name (`TOMORI_ALLOWED_MODELS`): by default this chain's own."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ModelChain:
        env = os.environ if environ is None else environ
        raw = env.get("TOMORI_MODELS", "")
        if not raw.strip():
            raise ConfigError(
                f"TOMORI_MODELS is not set: list the models to use as provider:model, "
                f"primary first, comma separated (for example {EXAMPLE})"
            )
        allowed = AllowedModels.parse(env.get(ALLOWED_VARIABLE, ""))
        return replace(cls.parse(raw, env), allowed=allowed)

    def refusal(self, chosen: ModelChain) -> str | None:
        """Why an admin may not choose `chosen` (the models of it this bot does not allow, or
        marks `+vision` it does not allow images for), or None if it may."""
        own = {entry.label: entry.vision for entry in self.entries}
        barred = [e.label for e in chosen.entries if not self.allowed.admits(e.label, own)]
        if barred:
            which = ", ".join(barred)
            return (
                f"{which} {'is' if len(barred) == 1 else 'are'} not among the models this bot "
                f"allows; its author allows {self.allowed.described(own)}"
            )
        blind = [
            e.label
            for e in chosen.entries
            if e.vision and not self.allowed.admits(e.label, own, images=True)
        ]
        if blind:
            return (
                f"{', '.join(blind)} may not be sent images (+vision) on this bot: images cost "
                f"its author's tokens, and its author allows them for "
                f"{self.allowed.described(own, images=True)}"
            )
        return None

    @classmethod
    def parse(
        cls,
        raw: str,
        environ: Mapping[str, str],
        *,
        source: str = "TOMORI_MODELS",
        known: Mapping[str, Credentials] | None = None,
    ) -> ModelChain:
        """A chain written as `TOMORI_MODELS` writes one, its errors naming `source`.

        A provider in `known` keeps those credentials (a chain built in code has keys the
        environment may lack); any other takes its key from `environ`."""
        if not raw.strip():
            raise ConfigError(
                f"{source} is empty: list the models as provider:model, primary first, "
                f"comma separated (for example {EXAMPLE})"
            )
        entries = tuple(_parse_entry(piece, raw, source) for piece in raw.split(","))
        if len(entries) > 1 + MAX_FALLBACKS:
            raise ConfigError(
                f"{source} lists {len(entries)} models: at most {1 + MAX_FALLBACKS} are "
                f"allowed (a primary and up to {MAX_FALLBACKS} fallbacks)"
            )
        for index, entry in enumerate(entries):
            if entry.label in (earlier.label for earlier in entries[:index]):
                raise ConfigError(
                    f"{source} lists {entry.label!r} twice: name each model once (asking "
                    f"a model that just failed again only delays the next one)"
                )
        credentials = dict(known or {})
        for entry in entries:
            if entry.provider not in credentials:
                credentials[entry.provider] = _credentials_for(entry, environ, source)
        used = {entry.provider for entry in entries}
        return cls(entries, {name: c for name, c in credentials.items() if name in used})

    @property
    def described(self) -> str:
        """The chain as its entries were written, `+vision` included (for the log)."""
        return ", ".join(m.written for m in self.entries)

    @property
    def sees_images(self) -> bool:
        """Whether any model of the chain is sent images: if none is, none are read."""
        return any(m.vision for m in self.entries)

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


def _parse_entry(piece: str, raw: str, source: str) -> ModelEntry:
    entry = piece.strip()
    if not entry:
        raise ConfigError(f"{source}={raw!r} has an empty entry: remove the extra comma")
    provider, colon, model = entry.partition(":")
    provider, model = provider.strip().lower(), model.strip()
    suffixes: list[str] = []
    context_tokens = None
    while (found := _SUFFIX.search(model)) is not None:
        suffix = found.group(1).lower()
        if found.group(2) is not None:
            suffix = "context"
            context_tokens = _context_size(entry, source, int(found.group(2)), found.group(3))
        if suffix in suffixes:
            raise ConfigError(
                f"{source} entry {entry!r} says +{suffix} twice: write it once, after the model"
            )
        suffixes.append(suffix)
        model = model[: found.start()]
    if not colon or not model or not provider:
        raise ConfigError(
            f"{source} entry {entry!r} is not provider:model (for example openai:gpt-4o-mini)"
        )
    if provider not in PROVIDER_KINDS:
        known = ", ".join(sorted(PROVIDER_KINDS))
        raise ConfigError(
            f"{source} entry {entry!r} names an unknown provider {provider!r}: "
            f"known providers are {known}"
        )
    if any(character.isspace() or not character.isprintable() for character in model):
        raise ConfigError(
            f"{source} entry {entry!r}: a model's name holds no spaces or control characters "
            f"(a misspelt option after it, or a stray character?)"
        )
    return ModelEntry(
        provider, model, "vision" in suffixes, "noprefill" in suffixes, context_tokens
    )


def _context_size(entry: str, source: str, number: int, thousands: str) -> int:
    """The tokens `+context=N` (or `Nk`, thousands of 1024) gives, checked."""
    tokens = number * (1024 if thousands else 1)
    if not MIN_CONTEXT_TOKENS <= tokens <= MAX_CONTEXT_TOKENS:
        raise ConfigError(
            f"{source} entry {entry!r} says +context={tokens}: a context holds "
            f"{MIN_CONTEXT_TOKENS} to {MAX_CONTEXT_TOKENS} tokens"
        )
    return tokens


def _credentials_for(entry: ModelEntry, env: Mapping[str, str], source: str) -> Credentials:
    kind = PROVIDER_KINDS[entry.provider]
    if kind.sdk and not installed(kind.sdk):
        raise ConfigError(
            f"{source} entry {entry.label!r} needs the {entry.provider} extra, which is not "
            f"installed (its SDK, {kind.sdk}, is missing): {install_extra(entry.provider)}"
        )
    api_key = env.get(kind.key_variable, "").strip()
    if not api_key:
        raise ConfigError(
            f"{source} entry {entry.label!r} needs {kind.key_variable}, which is not set "
            f"(a local server that takes no key still needs any non-empty value)"
        )
    if not fits_a_header(api_key):
        raise ConfigError(
            f"{kind.key_variable} is not allowed: a key must be printable ASCII without spaces "
            f"(it travels in an HTTP header); look for a character changed or added in copying"
        )
    base_url = env.get(kind.base_url_variable, "").strip() or None
    if base_url is not None:
        problem = base_url_problem(base_url, kind)
        if problem:
            raise ConfigError(
                f"{kind.base_url_variable}={redacted(base_url)!r} is not allowed: {problem}"
            )
    return Credentials(api_key, base_url)
