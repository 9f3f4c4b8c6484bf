"""Each model's context budget: how many tokens its requests may hold, and how they count.

A model's context size is the author's for it, first found first: its `TOMORI_MODELS`
entry's `+context=N`, else `TOMORI_CONTEXT_TOKENS`, else the default for where it is served
(`OWN_API_CONTEXT_TOKENS` for OpenAI's and Gemini's own APIs, `OTHER_SERVER_CONTEXT_TOKENS` for
any other server, since a local server silently drops the start of what overflows it). A
chain a server's admins chose may say `+context=N` below that, never above: a larger request
is the author's tokens. A smaller size a server named in refusing a request
(`providers.errors.overflow`) replaces it for the process's life. Of it, room is kept
for the answer: `TOMORI_MAX_OUTPUT_TOKENS` when set, else `ANSWER_SHARE` of the context (at
most `ANSWER_TOKENS_MAX`), never more than half. The request gets the rest
(`tomori.prompt.budget` fits it).

The estimate (`tomori.prompt.tokens`) is scaled by a ratio learned per model from what its
server reports: an OpenAI-compatible answer's `usage.prompt_tokens` (and a refusal's own count)
is exactly what the request sent came to. The ratio is the highest of the last few seen, with
a margin, so that it never under-counts for long; it starts at 1 (the estimate errs high).
Kept in memory: a restart learns again within a turn or two.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from tomori.config.models import ModelChain, ModelEntry
from tomori.config.provider_kinds import PROVIDER_KINDS
from tomori.config.settings import Settings
from tomori.prompt.budget import Fitted, fitted
from tomori.prompt.tokens import request_tokens
from tomori.providers.base import ProviderError, StreamRequest, Usage
from tomori.providers.errors import overflow

log = logging.getLogger(__name__)

Fit = Callable[[StreamRequest], StreamRequest]
"""A request as one model is sent it: each pass of its tool loop goes through one."""

OWN_API_CONTEXT_TOKENS = 32_768
"""The default for OpenAI's and Gemini's own APIs, whose models hold 128k tokens and more:
enough for any history window, and a bound on what one turn costs its author."""
OTHER_SERVER_CONTEXT_TOKENS = 4_096
"""The default for any other OpenAI-compatible server (Ollama's own default context)."""
ANSWER_SHARE = 4
"""Without `TOMORI_MAX_OUTPUT_TOKENS`, a quarter of the context is kept for the answer..."""
ANSWER_TOKENS_MAX = 4_096
"""...and never more than this."""
SEEN_RATIOS = 8
"""How many of a model's reported counts its ratio is the highest of."""
RATIO_MARGIN = 1.05
"""What the highest ratio seen is raised by: tokenizers differ between two texts."""
RATIO_FLOOR = 0.5
TIGHTER_SHARE = 0.75
"""A refusal that names no number is retried with this share of the room it had."""


@dataclass(frozen=True, slots=True)
class Budget:
    """What a model's request is fitted to, and where its size came from."""

    context_tokens: int
    answer_tokens: int
    source: str

    @property
    def room(self) -> int:
        """The tokens the request may hold."""
        return self.context_tokens - self.answer_tokens

    @property
    def described(self) -> str:
        return (
            f"{self.context_tokens} tokens ({self.source}), {self.answer_tokens} of them "
            f"kept for the answer"
        )


class ContextBook:
    """The context budgets of one process's models, and what their servers taught it."""

    def __init__(
        self,
        settings: Settings,
        other_servers: Collection[str] = (),
        authors: Iterable[ModelEntry] = (),
    ) -> None:
        """`other_servers`: the providers whose models another server serves than the
        provider's own API (an `OPENAI_BASE_URL`); `authors`: the entries of the author's own
        chain (`TOMORI_MODELS`), whose `+context` is the author's word for its model."""
        self._settings = settings
        self._other_servers = frozenset(other_servers)
        self._authors = {
            entry.label: entry.context_tokens
            for entry in authors
            if entry.context_tokens is not None
        }
        self._named: dict[str, int] = {}
        """By model label, the context size its server named in a refusal."""
        self._ratios: dict[str, deque[float]] = {}

    def budget(self, entry: ModelEntry) -> Budget:
        """The budget `entry`'s requests are fitted to now (see the module docstring)."""
        size, source = self._configured(entry)
        named = self._named.get(entry.label)
        if named is not None and named < size:
            size, source = named, "named by its server"
        answer = self._settings.max_output_tokens
        if answer is None:
            answer = min(size // ANSWER_SHARE, ANSWER_TOKENS_MAX)
        return Budget(size, min(answer, size // 2), source)

    def ratio(self, entry: ModelEntry) -> float:
        """What the estimate is scaled by for `entry` (see the module docstring)."""
        seen = self._ratios.get(entry.label)
        return max(RATIO_FLOOR, max(seen) * RATIO_MARGIN) if seen else 1.0

    def fitted(self, entry: ModelEntry, request: StreamRequest) -> Fitted:
        """`request` as `entry` is sent it: within its budget's room."""
        return self._fitted(entry, request, self.budget(entry).room)

    def fitting(self, entry: ModelEntry, room: int) -> Fit:
        """How each pass of `entry`'s tool loop is fitted: to `room`, as its first was."""
        return lambda request: self._fitted(entry, request, room).request

    def observed(self, entry: ModelEntry, sent: StreamRequest, usage: Usage | None) -> None:
        """Learn `entry`'s ratio from what its server said `sent` came to."""
        if usage is not None and usage.input_tokens > 0:
            self._counted(entry, sent, usage.input_tokens)

    def tighter(
        self, entry: ModelEntry, request: StreamRequest, sent: Fitted, error: ProviderError
    ) -> Fitted | None:
        """`request` fitted again after `error` refused `sent` as too long for `entry`'s
        context (None if it was no such refusal): to the size the server named and by the
        count it gave, both kept, or else to a smaller share of the room it had."""
        refusal = overflow(error)
        if refusal is None:
            return None
        if refusal.context_tokens is not None:
            self._named[entry.label] = refusal.context_tokens
        if refusal.sent_tokens is not None:
            self._counted(entry, sent.request, refusal.sent_tokens)
        again = self.fitted(entry, request)
        if again.tokens >= sent.tokens:  # it taught nothing that shortens the request
            room = int(min(self.budget(entry).room, sent.tokens) * TIGHTER_SHARE)
            again = self._fitted(entry, request, room)
        return again

    def _fitted(self, entry: ModelEntry, request: StreamRequest, room: int) -> Fitted:
        fit = fitted(request, room, self.ratio(entry))
        if fit.tokens > room:
            log.warning(
                "the request to %s holds %d tokens, over its room of %d, with the history "
                "and its files left out: the system prompt, notes and the turn's own messages "
                "take more",
                entry.label,
                fit.tokens,
                room,
            )
        elif fit.left_out or fit.cut or fit.results_cut or fit.notes_cut:
            log.info(
                "the request to %s fits its room of %d tokens: %d history messages left "
                "out, %d attachments and %d tool results cut, %d notes cut to their share",
                entry.label,
                room,
                fit.left_out,
                fit.cut,
                fit.results_cut,
                fit.notes_cut,
            )
        return fit

    def _configured(self, entry: ModelEntry) -> tuple[int, str]:
        """The entry's own `+context`, up to the author's size for its model."""
        size, source = self._authors_size(entry)
        if entry.context_tokens is not None and entry.context_tokens <= size:
            return entry.context_tokens, "its +context"
        return size, source

    def _authors_size(self, entry: ModelEntry) -> tuple[int, str]:
        own = self._authors.get(entry.label)
        if own is not None:
            return own, "its +context"
        if self._settings.context_tokens is not None:
            return self._settings.context_tokens, "TOMORI_CONTEXT_TOKENS"
        if entry.provider in self._other_servers:
            return OTHER_SERVER_CONTEXT_TOKENS, "the default for a server of OPENAI_BASE_URL"
        return OWN_API_CONTEXT_TOKENS, "the default for its provider's own API"

    def _counted(self, entry: ModelEntry, sent: StreamRequest, tokens: int) -> None:
        estimate = request_tokens(sent)
        if estimate <= 0:
            return
        seen = self._ratios.setdefault(entry.label, deque(maxlen=SEEN_RATIOS))
        seen.append(tokens / estimate)


def served_elsewhere(chain: ModelChain, environ: Mapping[str, str]) -> frozenset[str]:
    """The providers whose models another server serves (`OPENAI_BASE_URL`: a local or
    compatible server, whose context is anyone's); a Gemini base URL is a proxy of Google's."""
    credentials = chain.credentials.get("openai")
    url = credentials.base_url if credentials is not None else None
    elsewhere = url or environ.get(PROVIDER_KINDS["openai"].base_url_variable, "").strip()
    return frozenset({"openai"} if elsewhere else ())
