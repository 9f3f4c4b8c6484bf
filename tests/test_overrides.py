"""What applies where (channel > server > environment), and the store that keeps the values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.databases import DatabaseUnderTest
from tomori import override_store
from tomori.config import ConfigError
from tomori.override_store import OverrideStore
from tomori.overrides import (
    MAX_PROMPT_CHARS,
    Defaults,
    Overrides,
    Scope,
    Source,
    check_limits,
    check_models,
    check_prompt,
    resolve,
)

texts = st.none() | st.text(min_size=1, max_size=5)
flags = st.none() | st.booleans()
counts = st.none() | st.integers(0, 10**6)
channel_values = st.builds(Overrides, models=texts, system_prompt=texts, autoreply=flags)
server_values = st.builds(
    Overrides, models=texts, system_prompt=texts, cooldown_ms=counts, daily_tokens=counts
)
defaults = st.builds(Defaults, models=st.text(), system_prompt=st.text(), autoreply=st.booleans())


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
    assert (resolved.cooldown_ms, resolved.daily_tokens) == (
        server.cooldown_ms,
        server.daily_tokens,
    )


@given(st.text(max_size=MAX_PROMPT_CHARS + 50))
def test_a_prompt_is_kept_or_refused_whole(raw: str) -> None:
    try:
        prompt = check_prompt(raw)
    except ConfigError:
        assert not raw.strip() or len(raw.strip()) > MAX_PROMPT_CHARS
    else:
        assert prompt == raw.strip()
        assert 0 < len(prompt) <= MAX_PROMPT_CHARS


@given(st.integers(-(10**12), 10**12), st.integers(-(10**12), 10**12))
def test_limits_are_bounded_as_their_variables_are(cooldown: int, tokens: int) -> None:
    try:
        limits = check_limits(cooldown, tokens)
    except ConfigError:
        assert not (0 <= cooldown <= 86_400_000 and 0 <= tokens <= 1_000_000_000)
    else:
        assert (limits.cooldown_ms, limits.daily_tokens) == (cooldown, tokens)


def test_a_chain_takes_the_bots_keys_and_names_what_is_wrong() -> None:
    environ = {"OPENAI_API_KEY": "sk-x"}
    chain = check_models(" openai:a , openai:b+vision ", environ, {})
    assert chain.described == "openai:a, openai:b+vision"
    with pytest.raises(ConfigError, match="models lists 7 models"):
        check_models(",".join(["openai:m"] * 7), environ, {})
    with pytest.raises(ConfigError, match="needs GEMINI_API_KEY"):
        check_models("gemini:g", environ, {})
    assert "sk-x" not in repr(check_models("openai:a", environ, {}).credentials)


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
