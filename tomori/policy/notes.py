"""The memories and the channel summaries as in force, in words: `--check` and `/tomori show`
say them beside each model's context budget, so an author (or a server's admin) sees what a
turn's model is shown beyond its messages, and what bounds it, before a member asks.
"""

from __future__ import annotations

from tomori.config.models import ModelChain
from tomori.config.settings import Settings
from tomori.prompt.budget import NOTE_SHARE
from tomori.summary.model import summarizer

SHARE = f"its note at most 1/{NOTE_SHARE} of each model's room"


def kept_for(days: int, since: str) -> str:
    return "kept until forgotten" if days == 0 else f"kept {days} days after {since}"


def memories_in_force(settings: Settings, *, refused_here: bool = False) -> str:
    """Whether turns remember, and the bounds (`refused_here`: the server said no)."""
    if not settings.memories:
        return "off (TOMORI_MEMORIES=0)"
    if refused_here:
        return "off in this server (/tomori memory off)"
    return (
        f"on, at most {settings.memories_per_turn} shown a turn ({SHARE}), "
        f"{settings.memories_per_scope} kept per scope, {settings.memory_chars} characters "
        f"each, {kept_for(settings.memory_days, 'saved')}"
    )


def summaries_in_force(settings: Settings, chain: ModelChain) -> tuple[str, bool]:
    """Whether channels are summarized, by which model of `chain`'s, and the bounds; and
    whether that is worth a warning (`TOMORI_SUMMARY_MODEL` names a model the chain's
    providers do not serve, so the chain's first model writes them)."""
    if not settings.summaries:
        return "off (TOMORI_SUMMARIES=0)", False
    served = {entry.provider for entry in chain.entries} | set(chain.credentials)
    chosen = summarizer(settings, chain.entries, served)
    if chosen is None:
        return "on, but no model of the chain can write them", True
    words = (
        f"on, written by {chosen.described} in at most {settings.summary_tokens} tokens "
        f"({SHARE}), {kept_for(settings.memory_days, 'last written')}"
    )
    return words, chosen.unserved
