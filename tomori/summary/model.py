"""Which model writes a channel's summaries: one rule, for the folds and for what
`--check` and `/tomori show` say of them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from tomori.config.models import ModelEntry
from tomori.config.settings import Settings


@dataclass(frozen=True, slots=True)
class Summarizer:
    """The model that folds a channel's summaries, and why it."""

    entry: ModelEntry
    named: bool
    """`TOMORI_SUMMARY_MODEL` (else the chain's first model)."""
    unserved: bool = False
    """`TOMORI_SUMMARY_MODEL` is set, but no provider of the chain serves it."""

    @property
    def described(self) -> str:
        why = "TOMORI_SUMMARY_MODEL" if self.named else "the chain's first model"
        if self.unserved:
            why += ": no provider of the chain serves TOMORI_SUMMARY_MODEL"
        return f"{self.entry.label} ({why})"


def summarizer(
    settings: Settings, entries: Sequence[ModelEntry], served: Collection[str]
) -> Summarizer | None:
    """Who folds the summaries of a channel whose chain is `entries`, its providers `served`:
    `TOMORI_SUMMARY_MODEL` when one of them serves it, else the chain's first model."""
    named = settings.summary_model
    provider, _, model = named.partition(":")
    if named and provider in served:
        return Summarizer(ModelEntry(provider, model), named=True)
    if not entries:
        return None
    return Summarizer(entries[0], named=False, unserved=bool(named))
