"""`TOMORI_ALLOWED_MODELS`: the models a server's admins may choose, a ceiling they cannot lift.

Every model a turn asks is paid for on the bot author's keys, and a public bot is in servers
whose admins anyone can be. So a chain an admin sets (`/tomori model`, a persona's `models`) may
name only what the author allows: by default the models of `TOMORI_MODELS` itself, or, when the
variable is set, any model matching one of its patterns, `provider:glob` (`openai:gpt-4o-mini`,
`openai:gpt-4.1-*`, `gemini:*`), comma separated. A lone `*` allows every model of every
provider the bot has a key for. Reading images costs the author's tokens and memory too, so an
admin may mark `+vision` only a model the author lets read them: by default those
`TOMORI_MODELS` marks `+vision`, else those a pattern ending in `+vision` matches
(`openai:gpt-4o*+vision`, `*+vision`). A chain stored before the author narrowed the list is
not run: the turn takes the author's chain instead (`tomori.turns.config`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import NamedTuple

from tomori.config.parsers import ConfigError
from tomori.config.provider_kinds import PROVIDER_KINDS

VARIABLE = "TOMORI_ALLOWED_MODELS"
ANY = "*"
_IMAGES = re.compile(r"\s*\+\s*vision$", re.IGNORECASE)


class ModelPattern(NamedTuple):
    provider: str
    glob: str
    images: bool
    """`+vision`: the models it matches may be sent images."""

    @property
    def written(self) -> str:
        return f"{self.provider}:{self.glob}" + ("+vision" if self.images else "")


@dataclass(frozen=True, slots=True)
class AllowedModels:
    """`provider:glob` patterns; `None`: the author's own chain's models only."""

    patterns: tuple[ModelPattern, ...] | None = None

    @classmethod
    def parse(cls, raw: str) -> AllowedModels:
        """The variable's value; `ConfigError` names a pattern that is not `provider:glob`."""
        if not raw.strip():
            return cls()
        patterns: list[ModelPattern] = []
        for piece in raw.split(","):
            written = piece.strip()
            found = _IMAGES.search(written)
            images = found is not None
            bare = written[: found.start()] if found else written
            if bare == ANY:
                patterns += [ModelPattern(provider, ANY, images) for provider in PROVIDER_KINDS]
                continue
            provider, colon, model = bare.partition(":")
            provider, model = provider.strip().lower(), model.strip()
            if not colon or not provider or not model:
                raise ConfigError(
                    f"{VARIABLE} entry {written!r} is not provider:pattern (for example "
                    f"openai:gpt-4o-mini, gemini:* or openai:gpt-4o*+vision), nor a lone * for "
                    f"every model"
                )
            if provider not in PROVIDER_KINDS:
                known = ", ".join(sorted(PROVIDER_KINDS))
                raise ConfigError(
                    f"{VARIABLE} entry {written!r} names an unknown provider {provider!r}: "
                    f"known providers are {known}"
                )
            patterns.append(ModelPattern(provider, model, images))
        return cls(tuple(patterns))

    def admits(self, label: str, own: Mapping[str, bool], *, images: bool = False) -> bool:
        """Whether the model `label` (`provider:model`) may be chosen, and sent images if
        `images`; `own` maps each model of the author's chain to whether it is (`+vision`)."""
        if self.patterns is None:
            return label in own and (own[label] or not images)
        provider, _, model = label.partition(":")
        return any(
            p.provider == provider and fnmatchcase(model, p.glob) and (p.images or not images)
            for p in self.patterns
        )

    def described(self, own: Mapping[str, bool], *, images: bool = False) -> str:
        """The allowed list as an admin is told it (`images`: those allowed images only)."""
        if self.patterns is None:
            seeing = [(label, sees) for label, sees in own.items() if sees or not images]
            written = [label + ("+vision" if sees else "") for label, sees in seeing]
        else:
            written = [p.written for p in self.patterns if p.images or not images]
        return ", ".join(written) or "no model"
