"""What a server's admins set for it and its channels, and what applies where: written once.

A value set for a channel beats one set for its server, which beats the bot's environment.
Every reader goes through `resolve`: the turn (its model chain and system prompt), the reply
rule (whether a channel answers every message) and `/tomori show` (which also says where each
value came from), so they never disagree. Nothing here knows Discord or the database.

Each value an admin may set is checked by `check_*` below, with the parsers the environment's
variables use, so a value that could not be set there cannot be set here either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from tomori.config.models import ModelChain
from tomori.config.parsers import ConfigError
from tomori.config.settings import COOLDOWN_MS, DAILY_TOKENS, ShowErrors, ShowProgress
from tomori.prompt.prefill import MAX_PREFILL_CHARS

MAX_PROMPT_CHARS = 4_000
"""A system prompt an admin sets is sent with every turn in its channels, so it is paid for in
tokens each time: about 1,000 tokens at most. Discord lets a slash command's text option hold
6,000 characters; this leaves room below that and says so before anything is stored."""

MAX_MODELS_CHARS = 1_000
"""Six model names fit many times over; a longer chain could not be shown back to the admin
in one of Discord's embeds (4,096 characters) by the change's answer or by `/tomori show`."""


class Source(StrEnum):
    """Where a value in force came from, as `/tomori show` says it."""

    CHANNEL = "this channel"
    SERVER = "this server"
    ENVIRONMENT = "the bot's settings"


@dataclass(frozen=True, slots=True)
class Overrides:
    """The values set at one scope; None is "not set here"."""

    models: str | None = None
    """A model chain as `TOMORI_MODELS` writes one, checked by `check_models` when set."""
    system_prompt: str | None = None
    autoreply: bool | None = None
    """A channel's only: whether it answers every message."""
    cooldown_ms: int | None = None
    """A server's only, like `daily_tokens`."""
    daily_tokens: int | None = None
    scenes: bool | None = None
    """A server's only: whether its members may run `/scene`."""
    prefill: str | None = None
    """What the answers begin with (`/tomori prefill`), checked by `check_prefill`."""
    follow_ups: bool | None = None
    """A server's only: whether a message of the user being answered stops the answer."""
    swipes: bool | None = None
    """A server's only: whether the last answer carries Regenerate and ◀ ▶ (`turns.takes`)."""
    progress: ShowProgress | None = None
    """A server's only: whether its direct triggers show their turn's progress as reactions."""
    errors: ShowErrors | None = None
    """A server's only: how a direct trigger whose turn failed is told so."""

    @property
    def empty(self) -> bool:
        return self == Overrides()


NOTHING = Overrides()


@dataclass(frozen=True, slots=True)
class Defaults:
    """What the bot's environment gives a channel when nothing is set for it."""

    models: str
    """The environment's chain, as its entries are written."""
    system_prompt: str
    autoreply: bool
    """Whether the channel is one of `TOMORI_CHANNELS`."""
    cooldown_ms: int = 0
    """`TOMORI_USER_COOLDOWN_MS`."""
    daily_tokens: int = 0
    """`TOMORI_USER_DAILY_TOKENS`."""
    scenes: bool = True
    """Scenes are allowed until a server's admins turn them off."""
    prefill: str = ""
    """None: the environment sets no prefill."""
    follow_ups: bool = True
    """`TOMORI_FOLLOW_UPS`."""
    swipes: bool = True
    """Swipes are on until a server's admins turn them off."""
    progress: ShowProgress = ShowProgress.REACTIONS
    """`TOMORI_PROGRESS`."""
    errors: ShowErrors = ShowErrors.REPLY
    """`TOMORI_ERRORS`."""


@dataclass(frozen=True, slots=True)
class Sourced[T]:
    value: T
    source: Source


@dataclass(frozen=True, slots=True)
class Resolved:
    """What applies in one channel, and where each value comes from."""

    models: Sourced[str]
    system_prompt: Sourced[str]
    autoreply: Sourced[bool]
    cooldown_ms: Sourced[int]
    """A server's only: a channel cannot set it."""
    daily_tokens: Sourced[int]
    """A server's only, like `cooldown_ms`."""
    scenes: Sourced[bool]
    """A server's only: whether `/scene` runs in its channels."""
    prefill: Sourced[str]
    """"" is none."""
    follow_ups: Sourced[bool]
    """A server's only, like `cooldown_ms`."""
    swipes: Sourced[bool]
    """A server's only, like `cooldown_ms`."""
    progress: Sourced[ShowProgress]
    """A server's only, like `cooldown_ms`."""
    errors: Sourced[ShowErrors]
    """A server's only, like `cooldown_ms`."""


def resolve(channel: Overrides, server: Overrides, defaults: Defaults) -> Resolved:
    """Channel beats server beats environment, value by value."""
    return Resolved(
        models=_first(channel.models, server.models, defaults.models),
        system_prompt=_first(channel.system_prompt, server.system_prompt, defaults.system_prompt),
        autoreply=_first(channel.autoreply, None, defaults.autoreply),
        cooldown_ms=_first(None, _tighter_cooldown(server, defaults), defaults.cooldown_ms),
        daily_tokens=_first(None, _tighter_tokens(server, defaults), defaults.daily_tokens),
        scenes=_first(None, server.scenes, defaults.scenes),
        prefill=_first(channel.prefill, server.prefill, defaults.prefill),
        follow_ups=_first(None, server.follow_ups, defaults.follow_ups),
        swipes=_first(None, server.swipes, defaults.swipes),
        progress=_first(None, server.progress, defaults.progress),
        errors=_first(None, server.errors, defaults.errors),
    )


def _tighter_cooldown(server: Overrides, defaults: Defaults) -> int | None:
    """A server's cooldown, where it is no shorter than the author's (a floor: one stored
    before the author lengthened theirs no longer applies)."""
    chosen = server.cooldown_ms
    return chosen if chosen is not None and chosen >= defaults.cooldown_ms else None


def _tighter_tokens(server: Overrides, defaults: Defaults) -> int | None:
    """A server's daily tokens, where they are within the author's (a ceiling; 0 is none)."""
    chosen, ceiling = server.daily_tokens, defaults.daily_tokens
    if chosen is None or (ceiling > 0 and not 0 < chosen <= ceiling):
        return None
    return chosen


def _first[T](channel: T | None, server: T | None, environment: T) -> Sourced[T]:
    if channel is not None:
        return Sourced(channel, Source.CHANNEL)
    if server is not None:
        return Sourced(server, Source.SERVER)
    return Sourced(environment, Source.ENVIRONMENT)


def check_models(raw: str, environ: Mapping[str, str], author: ModelChain) -> ModelChain:
    """The chain `raw` names, parsed as `TOMORI_MODELS` is; `ConfigError` says what is wrong.

    Only providers the bot has a key for pass: those of the author's chain, or any whose key
    variable is set in `environ`; and only models the author allows (`ModelChain.refusal`)."""
    if "\0" in raw:
        raise ConfigError("the models hold a NUL character: write them as provider:model")
    if len(raw.strip()) > MAX_MODELS_CHARS:
        raise ConfigError(
            f"the models are {len(raw.strip())} characters long: at most {MAX_MODELS_CHARS} are "
            f"allowed"
        )
    chosen = ModelChain.parse(raw.strip(), environ, source="models", known=author.credentials)
    refusal = author.refusal(chosen)
    if refusal is not None:
        raise ConfigError(refusal)
    return chosen


def check_prompt(raw: str) -> str:
    prompt = raw.strip()
    if not prompt:
        raise ConfigError("the prompt is empty: give some text (/tomori reset clears a prompt)")
    if "\0" in prompt:
        raise ConfigError("the prompt holds a NUL character, which cannot be stored: remove it")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ConfigError(
            f"the prompt is {len(prompt)} characters long: at most {MAX_PROMPT_CHARS} are "
            f"allowed (it is sent with every message the channel gets an answer to)"
        )
    return prompt


def check_limits(cooldown_ms: int | None, daily_tokens: int | None, author: Defaults) -> Overrides:
    """The server limits to store, each read as its variable would be; None leaves one as is.

    The author's limits (`author`) bound them: a server may lengthen the cooldown and lower
    the daily tokens, never the other way, and never lift a limit the author set."""
    checked = NOTHING
    if cooldown_ms is not None:
        checked = replace(checked, cooldown_ms=COOLDOWN_MS("cooldown_ms", str(cooldown_ms)))
        if cooldown_ms < author.cooldown_ms:
            raise ConfigError(
                f"the bot's author sets a cooldown of {author.cooldown_ms} ms: a server may "
                f"lengthen it, not shorten it"
            )
    if daily_tokens is not None:
        checked = replace(checked, daily_tokens=DAILY_TOKENS("daily_tokens", str(daily_tokens)))
        ceiling = author.daily_tokens
        if ceiling > 0 and not 0 < daily_tokens <= ceiling:
            raise ConfigError(
                f"the bot's author allows each member at most {ceiling} tokens a day: a server "
                f"may set fewer, not more (0, no limit, is not a server's to set)"
            )
    return checked


def check_prefill(raw: str) -> str:
    """A prefill as answers begin with it: trimmed (a leading or trailing space would be
    posted, or make the model's echo miss it), at most `MAX_PREFILL_CHARS`."""
    prefill = raw.strip()
    if not prefill:
        raise ConfigError("the prefill is empty: give some text (reset clears a prefill)")
    if "\0" in prefill:
        raise ConfigError("the prefill holds a NUL character, which cannot be stored: remove it")
    if len(prefill) > MAX_PREFILL_CHARS:
        raise ConfigError(
            f"the prefill is {len(prefill)} characters long: at most {MAX_PREFILL_CHARS} are "
            f"allowed (every answer is posted beginning with it)"
        )
    return prefill
