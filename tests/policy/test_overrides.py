"""What applies where (channel > server > environment), and the store that keeps the values."""

from __future__ import annotations

import asyncio
import itertools
import re
from dataclasses import astuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.databases import DatabaseUnderTest, RecordingDatabase
from tomori.config.models import ModelChain
from tomori.config.scope import Scope
from tomori.config.settings import ConfigError
from tomori.policy import override_store
from tomori.policy.override_store import OverrideStore, SettingsUnavailable
from tomori.policy.overrides import (
    MAX_MODELS_CHARS,
    MAX_PROMPT_CHARS,
    Defaults,
    Overrides,
    Source,
    check_limits,
    check_models,
    check_prompt,
    resolve,
)
from tomori.store import Database
from tomori.store.base import Params, Row

_guilds = itertools.count()
texts = st.none() | st.text(min_size=1, max_size=5)
flags = st.none() | st.booleans()
counts = st.none() | st.integers(0, 10**6)
channel_values = st.builds(Overrides, models=texts, system_prompt=texts, autoreply=flags)
server_values = st.builds(
    Overrides, models=texts, system_prompt=texts, cooldown_ms=counts, daily_tokens=counts
)
defaults = st.builds(
    Defaults,
    models=st.text(),
    system_prompt=st.text(),
    autoreply=st.booleans(),
    cooldown_ms=st.integers(0, 86_400_000),
    daily_tokens=st.integers(0, 1_000_000_000),
)


@given(channel_values, server_values, defaults)
def test_each_value_comes_from_the_nearest_scope_that_sets_it(
    channel: Overrides, server: Overrides, environment: Defaults
) -> None:
    resolved = resolve(channel, server, environment)
    for name in ("models", "system_prompt"):
        chosen = getattr(resolved, name)
        if getattr(channel, name) is not None:
            expected = (getattr(channel, name), Source.CHANNEL)
        elif getattr(server, name) is not None:
            expected = (getattr(server, name), Source.SERVER)
        else:
            expected = (getattr(environment, name), Source.ENVIRONMENT)
        assert (chosen.value, chosen.source) == expected
    autoreply = resolved.autoreply
    if channel.autoreply is None:
        assert (autoreply.value, autoreply.source) == (environment.autoreply, Source.ENVIRONMENT)
    else:
        assert (autoreply.value, autoreply.source) == (channel.autoreply, Source.CHANNEL)
    # A server's only (a channel cannot set them), and only tighter than the author's: a longer
    # cooldown, fewer daily tokens (0 is no limit, looser than any).
    cooldown, tokens = resolved.cooldown_ms, resolved.daily_tokens
    assert cooldown.value >= environment.cooldown_ms
    if server.cooldown_ms is not None and server.cooldown_ms >= environment.cooldown_ms:
        assert (cooldown.value, cooldown.source) == (server.cooldown_ms, Source.SERVER)
    else:
        assert (cooldown.value, cooldown.source) == (environment.cooldown_ms, Source.ENVIRONMENT)
    ceiling = environment.daily_tokens
    if ceiling > 0:
        assert 0 < tokens.value <= ceiling
    if server.daily_tokens is not None and (ceiling == 0 or 0 < server.daily_tokens <= ceiling):
        assert (tokens.value, tokens.source) == (server.daily_tokens, Source.SERVER)
    else:
        assert (tokens.value, tokens.source) == (ceiling, Source.ENVIRONMENT)


@given(st.text(max_size=MAX_PROMPT_CHARS + 50))
def test_a_prompt_is_kept_or_refused_whole(raw: str) -> None:
    try:
        prompt = check_prompt(raw)
    except ConfigError:
        assert not raw.strip() or len(raw.strip()) > MAX_PROMPT_CHARS or "\0" in raw
    else:
        assert prompt == raw.strip()
        assert 0 < len(prompt) <= MAX_PROMPT_CHARS
        assert "\0" not in prompt  # PostgreSQL's text cannot hold one


@given(st.integers(-(10**12), 10**12), st.integers(-(10**12), 10**12))
def test_limits_are_bounded_as_their_variables_are(cooldown: int, tokens: int) -> None:
    try:
        limits = check_limits(
            cooldown, tokens, Defaults(models="", system_prompt="", autoreply=False)
        )
    except ConfigError:
        assert not (0 <= cooldown <= 86_400_000 and 0 <= tokens <= 1_000_000_000)
    else:
        assert (limits.cooldown_ms, limits.daily_tokens) == (cooldown, tokens)


AUTHOR = Defaults(
    models="", system_prompt="", autoreply=False, cooldown_ms=10_000, daily_tokens=5_000
)


@pytest.mark.parametrize(
    ("cooldown", "tokens", "refused"),
    [
        (9_999, None, "sets a cooldown of 10000 ms: a server may lengthen it"),
        (0, None, "sets a cooldown of 10000 ms"),
        (None, 5_001, "at most 5000 tokens a day"),
        (None, 0, "0, no limit, is not a server's to set"),
        (60_000, 100, None),
        (10_000, 5_000, None),
    ],
)
def test_a_server_only_tightens_the_authors_limits(
    cooldown: int | None, tokens: int | None, refused: str | None
) -> None:
    if refused is None:
        assert check_limits(cooldown, tokens, AUTHOR) == Overrides(
            cooldown_ms=cooldown, daily_tokens=tokens
        )
    else:
        with pytest.raises(ConfigError, match=re.escape(refused)):
            check_limits(cooldown, tokens, AUTHOR)


def test_a_server_limit_stored_looser_than_the_authors_gives_way_to_the_authors() -> None:
    looser = Overrides(cooldown_ms=0, daily_tokens=0)
    resolved = resolve(Overrides(), looser, AUTHOR)
    assert (resolved.cooldown_ms.value, resolved.daily_tokens.value) == (10_000, 5_000)
    assert resolved.cooldown_ms.source is Source.ENVIRONMENT
    tighter = resolve(Overrides(), Overrides(cooldown_ms=20_000, daily_tokens=10), AUTHOR)
    assert (tighter.cooldown_ms.value, tighter.daily_tokens.value) == (20_000, 10)
    assert tighter.daily_tokens.source is Source.SERVER


def test_a_chain_takes_the_bots_keys_and_names_what_is_wrong() -> None:
    allowed = {"TOMORI_ALLOWED_MODELS": "*+vision"}
    environ = {"OPENAI_API_KEY": "sk-x", "TOMORI_MODELS": "openai:a", **allowed}
    author = ModelChain.from_env(environ)
    too_long = ",".join(f"openai:{'m' * 400}{n}" for n in range(3))  # no answer could show it
    with pytest.raises(ConfigError, match=f"at most {MAX_MODELS_CHARS} are allowed"):
        check_models(too_long, environ, author)
    chain = check_models(" openai:a , openai:b+vision ", environ, author)
    assert chain.described == "openai:a, openai:b+vision"
    with pytest.raises(ConfigError, match="models lists 7 models"):
        check_models(",".join(["openai:m"] * 7), environ, author)
    with pytest.raises(ConfigError, match="needs GEMINI_API_KEY"):
        check_models("gemini:g", environ, author)
    with pytest.raises(ConfigError, match="NUL"):
        check_models("openai:a\0", environ, author)
    assert "sk-x" not in repr(check_models("openai:a", environ, author).credentials)


@pytest.mark.parametrize(
    ("allowed", "chosen", "refused"),
    [
        ("", "openai:a", None),  # unset: the author's own chain's models
        (
            "",
            "openai:b",
            "openai:b is not among the models this bot allows; its author allows openai:a",
        ),
        ("openai:gpt-4.1-*", "openai:gpt-4.1-mini, openai:gpt-4o", "openai:gpt-4o is not among"),
        ("openai:gpt-4.1-*", "openai:gpt-4.1-mini", None),
        ("openai:*", "openai:anything", None),
        (
            "openai:*",
            "openai:anything+vision",
            "openai:anything may not be sent images (+vision) on this bot: images cost its "
            "author's tokens, and its author allows them for no model",
        ),
        ("openai:gpt-4o*+vision, openai:*", "openai:gpt-4o-mini+vision, openai:b", None),
        ("openai:gpt-4o*+vision, openai:*", "openai:b+vision", "allows them for openai:gpt-4o*"),
        ("*+vision", "openai:anything+vision", None),
        ("", "openai:a+vision", "openai:a may not be sent images"),  # not +vision in the chain
        ("*", "openai:anything", None),
        ("openai:A*", "openai:a", "openai:a is not among"),  # a model name's case counts
    ],
)
def test_an_admins_chain_names_only_models_the_author_allows(
    allowed: str, chosen: str, refused: str | None
) -> None:
    environ = {"OPENAI_API_KEY": "sk-x", "TOMORI_MODELS": "openai:a"}
    author = ModelChain.from_env({**environ, "TOMORI_ALLOWED_MODELS": allowed})
    if refused is None:
        assert check_models(chosen, environ, author).entries
    else:
        with pytest.raises(ConfigError, match=re.escape(refused)):
            check_models(chosen, environ, author)


def test_unset_images_are_allowed_for_the_models_the_authors_chain_marks_vision() -> None:
    environ = {"OPENAI_API_KEY": "sk-x", "TOMORI_MODELS": "openai:a+vision, openai:b"}
    author = ModelChain.from_env(environ)
    assert check_models("openai:b, openai:a+vision", environ, author).sees_images
    with pytest.raises(ConfigError, match=re.escape("allows them for openai:a+vision")):
        check_models("openai:a, openai:b+vision", environ, author)


@pytest.mark.parametrize("written", ["gpt-4o", "openai:", "azure:gpt-4o", ":x"])
def test_an_allowed_list_that_is_not_provider_pattern_stops_start_up(written: str) -> None:
    environ = {"OPENAI_API_KEY": "sk-x", "TOMORI_MODELS": "openai:a"}
    with pytest.raises(ConfigError, match="TOMORI_ALLOWED_MODELS entry"):
        ModelChain.from_env({**environ, "TOMORI_ALLOWED_MODELS": written})


async def test_values_are_stored_per_scope_and_reset_alone(database: DatabaseUnderTest) -> None:
    store = OverrideStore(await database.open())
    await store.set(Scope.SERVER, "g", "c1", Overrides(models="openai:s", cooldown_ms=5))
    await store.set(Scope.CHANNEL, "g", "c1", Overrides(system_prompt="p", autoreply=False))
    await store.set(Scope.CHANNEL, "g", "c1", Overrides(autoreply=True))  # keeps the prompt
    await store.set(Scope.SERVER, "g", "c1", Overrides(daily_tokens=7))  # keeps the rest
    channel, server = await store.read("g", "c1")
    assert channel == Overrides(system_prompt="p", autoreply=True)
    assert server == Overrides(models="openai:s", cooldown_ms=5, daily_tokens=7)
    assert await store.read("g", "c2") == (Overrides(), server)
    assert await store.read("other", "c3") == (Overrides(), Overrides())
    assert await store.reset(Scope.CHANNEL, "g", "c1")
    assert not await store.reset(Scope.CHANNEL, "g", "c1")
    assert await store.read("g", "c1") == (Overrides(), server)
    with pytest.raises(ValueError, match="does not have"):
        await store.set(Scope.CHANNEL, "g", "c1", Overrides(cooldown_ms=1))


async def test_a_prefill_is_stored_per_scope_and_cleared_alone(database: DatabaseUnderTest) -> None:
    store = OverrideStore(await database.open())
    await store.set(Scope.SERVER, "g", "c1", Overrides(prefill="Tomori:", cooldown_ms=5))
    await store.set(Scope.CHANNEL, "g", "c1", Overrides(prefill="Aria:", system_prompt="p"))
    assert await store.read("g", "c1") == (
        Overrides(system_prompt="p", prefill="Aria:"),
        Overrides(cooldown_ms=5, prefill="Tomori:"),
    )
    assert await store.clear(Scope.CHANNEL, "g", "c1", "prefill")
    assert not await store.clear(Scope.CHANNEL, "g", "c1", "prefill")  # not set any more
    assert await store.clear(Scope.SERVER, "g", "c1", "prefill")
    assert await store.read("g", "c1") == (Overrides(system_prompt="p"), Overrides(cooldown_ms=5))
    with pytest.raises(ValueError, match="no value"):
        await store.clear(Scope.CHANNEL, "g", "c1", "cooldown_ms")


class HeldReads(RecordingDatabase):
    """A store whose reads are held until the test lets them answer (a slow database)."""

    def __init__(self, inner: Database) -> None:
        super().__init__(inner)
        self.reading = asyncio.Event()
        self.answer = asyncio.Event()

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        rows = await super().fetchall(sql, params)
        self.reading.set()
        await self.answer.wait()
        return rows


async def test_a_read_begun_before_a_change_does_not_bring_back_what_it_replaced(
    database: DatabaseUnderTest,
) -> None:
    held = HeldReads(await database.open())
    store = OverrideStore(held)
    reading = asyncio.create_task(store.read_cached("g", "c"))  # the reply rule, say
    await held.reading.wait()  # it has read autoreply unset, and is slow to say so...
    await store.set(Scope.CHANNEL, "g", "c", Overrides(autoreply=True))  # ...as this lands
    held.answer.set()
    await reading
    channel, _ = await store.read_cached("g", "c")
    assert channel.autoreply is True  # at once, not after the cache's seconds


async def test_a_failed_read_is_not_waited_on_again_by_the_cached_readers(
    database: DatabaseUnderTest,
) -> None:
    db = RecordingDatabase(await database.open())
    store = OverrideStore(db)
    await db.execute("DROP TABLE server_settings")  # every read of the settings now fails
    with pytest.raises(Exception) as first:  # noqa: PT011 - the engine's own error
        await store.read_cached("g", "")
    assert store.is_database_error(first.value)
    asked = len(db.statements)
    with pytest.raises(SettingsUnavailable):  # for a while: at once, the store not asked
        await store.read_cached("other", "")
    assert len(db.statements) == asked


async def test_another_processs_change_is_read_at_once_and_cached_only_briefly(
    database: DatabaseUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, there = OverrideStore(await database.open()), OverrideStore(await database.open())
    assert await here.read_cached("g", "c") == (Overrides(), Overrides())
    await there.set(Scope.CHANNEL, "g", "c", Overrides(autoreply=True))
    assert await here.read_cached("g", "c") == (Overrides(), Overrides())  # within the TTL
    assert (await here.read("g", "c"))[0].autoreply is True  # what a turn reads
    monkeypatch.setattr(override_store, "CACHE_TTL_S", 0.0)
    assert await here.read_cached("g", "c2") == (Overrides(), Overrides())
    await there.set(Scope.CHANNEL, "g", "c2", Overrides(autoreply=True))
    assert (await here.read_cached("g", "c2"))[0].autoreply is True  # past the TTL


CHANNELS = ("c1", "c2")
prompts = st.text(min_size=1, max_size=20).filter(lambda text: "\0" not in text)
"""What `check_prompt` lets through to the store: no NUL."""
channel_changes = st.builds(
    Overrides,
    models=st.none() | st.sampled_from(["openai:a", "openai:b"]),
    system_prompt=st.none() | prompts,
    autoreply=flags,
)
server_changes = st.builds(
    Overrides,
    models=st.none() | st.sampled_from(["openai:s", "gemini:t"]),
    system_prompt=st.none() | prompts,
    cooldown_ms=counts,
    daily_tokens=counts,
)
operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("set"), st.just(Scope.CHANNEL), st.sampled_from(CHANNELS), channel_changes
        ),
        st.tuples(st.just("set"), st.just(Scope.SERVER), st.just("c1"), server_changes),
        st.tuples(st.just("reset"), st.sampled_from(Scope), st.sampled_from(CHANNELS), st.none()),
    ),
    max_size=6,
)


def merged(old: Overrides, new: Overrides) -> Overrides:
    return Overrides(
        *(b if b is not None else a for a, b in zip(astuple(old), astuple(new), strict=True))
    )


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations)
async def test_what_is_read_is_every_change_merged_in_order(
    database: DatabaseUnderTest, steps: list[tuple[str, Scope, str, Overrides | None]]
) -> None:
    if not database.opened:  # one connection for every example
        await database.open()
    db = database.opened[0]
    guild = f"g{next(_guilds)}"  # examples share the database: each its own server
    store = OverrideStore(db)
    expected = {"server": Overrides(), **{channel: Overrides() for channel in CHANNELS}}
    for action, scope, channel, changes in steps:
        key = "server" if scope is Scope.SERVER else channel
        if action == "set":
            assert changes is not None
            await store.set(scope, guild, f"{guild}/{channel}", changes)
            expected[key] = merged(expected[key], changes)
        else:
            await store.reset(scope, guild, f"{guild}/{channel}")
            expected[key] = Overrides()
    for channel in CHANNELS:
        assert await store.read(guild, f"{guild}/{channel}") == (
            expected[channel],
            expected["server"],
        )
