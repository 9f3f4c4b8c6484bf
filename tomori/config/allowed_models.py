"""`TOMORI_ALLOWED_MODELS`: the models a server's admins may choose, a ceiling they cannot lift.

Every model a turn asks is paid for on the bot author's keys, and a public bot is in servers
whose admins anyone can be. So a chain an admin sets (`/tomori model`, a persona's `models`) may
name only what the author allows: by default the models of `TOMORI_MODELS` itself, or, when the
variable is set, any model matching one of its patterns, `provider:glob` (`openai:gpt-4o-mini`,
`openai:gpt-4.1-*`, `gemini:*`), comma separated. A lone `*` allows every model of every
provider the bot has a key for. A chain stored before the author narrowed the list is not run:
the turn takes the author's chain instead (`tomori.turns.config`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from tomori.config.parsers import ConfigError
from tomori.config.provider_kinds import PROVIDER_KINDS

VARIABLE = "TOMORI_ALLOWED_MODELS"
ANY = "*"


@dataclass(frozen=True, slots=True)
class AllowedModels:
    """`provider:glob` patterns; `None`: the author's own chain's models only."""

    patterns: tuple[tuple[str, str], ...] | None = None

    @classmethod
    def parse(cls, raw: str) -> AllowedModels:
        """The variable's value; `ConfigError` names a pattern that is not `provider:glob`."""
        if not raw.strip():
            return cls()
        patterns: list[tuple[str, str]] = []
        for piece in raw.split(","):
            written = piece.strip()
            if written == ANY:
                patterns += [(provider, ANY) for provider in PROVIDER_KINDS]
                continue
            provider, colon, model = written.partition(":")
            provider, model = provider.strip().lower(), model.strip()
            if not colon or not provider or not model:
                raise ConfigError(
                    f"{VARIABLE} entry {written!r} is not provider:pattern (for example "
                    f"openai:gpt-4o-mini or gemini:*), nor a lone * for every model"
                )
            if provider not in PROVIDER_KINDS:
                known = ", ".join(sorted(PROVIDER_KINDS))
                raise ConfigError(
                    f"{VARIABLE} entry {written!r} names an unknown provider {provider!r}: "
                    f"known providers are {known}"
                )
            patterns.append((provider, model))
        return cls(tuple(patterns))

    def admits(self, label: str, own: Iterable[str]) -> bool:
        """Whether the model `label` (`provider:model`) may be chosen, `own` being the labels
        of the author's chain."""
        if self.patterns is None:
            return label in set(own)
        provider, _, model = label.partition(":")
        return any(p == provider and fnmatchcase(model, glob) for p, glob in self.patterns)

    def described(self, own: Iterable[str]) -> str:
        """The allowed list as an admin is told it."""
        if self.patterns is None:
            return ", ".join(own)
        return ", ".join(f"{provider}:{glob}" for provider, glob in self.patterns)
