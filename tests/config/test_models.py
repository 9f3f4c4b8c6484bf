from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from tests.support.paths import REPO
from tomori.config.models import ModelChain, ModelEntry
from tomori.config.settings import ConfigError
from tomori.providers.gemini import GeminiProvider
from tomori.providers.openai import OpenAIProvider

KEYS = {"OPENAI_API_KEY": "sk-secret-1", "GEMINI_API_KEY": "gm-secret-2"}


def chain(models: str, **extra: str) -> ModelChain:
    return ModelChain.from_env({**KEYS, "TOMORI_MODELS": models, **extra})


def test_the_first_entry_is_primary_and_the_rest_fallbacks_in_order() -> None:
    parsed = chain(" openai:gpt-4o-mini , gemini:gemini-2.5-flash,OpenAI:llama3:8b ")
    assert parsed.entries == (
        ModelEntry("openai", "gpt-4o-mini"),
        ModelEntry("gemini", "gemini-2.5-flash"),
        ModelEntry("openai", "llama3:8b"),  # a model name may itself hold a colon (Ollama)
    )
    assert set(parsed.credentials) == {"openai", "gemini"}


def test_vision_after_a_model_says_it_is_sent_images_and_is_not_part_of_its_name() -> None:
    parsed = chain("openai:gpt-4o-mini+vision,gemini:gemini-2.5-flash + Vision,openai:llama3:8b")
    assert parsed.entries == (
        ModelEntry("openai", "gpt-4o-mini", vision=True),
        ModelEntry("gemini", "gemini-2.5-flash", vision=True),
        ModelEntry("openai", "llama3:8b", vision=False),
    )
    assert [entry.label for entry in parsed.entries[:2]] == [
        "openai:gpt-4o-mini",
        "gemini:gemini-2.5-flash",
    ]


def test_noprefill_marks_a_model_that_takes_no_native_prefill_as_gemini_takes_none() -> None:
    parsed = chain("openai:a+noprefill+vision,openai:b + Vision + NoPrefill,openai:c,gemini:d")
    assert parsed.entries == (
        ModelEntry("openai", "a", vision=True, no_prefill=True),
        ModelEntry("openai", "b", vision=True, no_prefill=True),
        ModelEntry("openai", "c"),
        ModelEntry("gemini", "d"),
    )
    assert [entry.native_prefill for entry in parsed.entries] == [False, False, True, False]
    assert parsed.described == (
        "openai:a+vision+noprefill, openai:b+vision+noprefill, openai:c, gemini:d"
    )
    assert chain(parsed.described).entries == parsed.entries  # a stored chain reads back
    with pytest.raises(ConfigError, match="says \\+noprefill twice"):
        chain("openai:a+noprefill+noprefill")


@pytest.mark.parametrize(
    ("models", "message"),
    [
        ("", "TOMORI_MODELS is not set"),
        ("   ", "TOMORI_MODELS is not set"),
        ("openai:a,,gemini:b", "empty entry"),
        ("openai:a,", "empty entry"),
        ("gpt-4o", "'gpt-4o' is not provider:model"),
        ("openai:", "'openai:' is not provider:model"),
        (":gpt-4o", "':gpt-4o' is not provider:model"),
        ("openai:+vision", "'openai:\\+vision' is not provider:model"),
        ("anthropic:claude", "'anthropic:claude' names an unknown provider 'anthropic'"),
        (",".join(f"openai:m{n}" for n in range(7)), "at most 6"),
        ("openai:m+vision+vision", "'openai:m\\+vision\\+vision' says \\+vision twice"),
        ("openai:m+Vision +VISION", "says \\+vision twice"),
        ("openai:a,gemini:b,openai:a", "lists 'openai:a' twice: name each model once"),
        ("openai:a,OpenAI: a +vision", "lists 'openai:a' twice"),
    ],
)
def test_a_bad_list_stops_start_up_naming_the_entry(models: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        chain(models)


def test_vision_is_shown_one_way_however_it_was_written() -> None:
    parsed = chain("openai:a+Vision,openai:b +VISION,openai:c")
    assert parsed.described == "openai:a+vision, openai:b+vision, openai:c"
    assert [entry.model for entry in parsed.entries] == ["a", "b", "c"]


def test_a_missing_key_names_the_entry_and_the_variable() -> None:
    env = {"TOMORI_MODELS": "openai:gpt-4o-mini,gemini:gemini-2.5-flash", "OPENAI_API_KEY": "k"}
    expected = re.escape("'gemini:gemini-2.5-flash' needs GEMINI_API_KEY")
    with pytest.raises(ConfigError, match=expected):
        ModelChain.from_env(env)


def test_a_bad_base_url_is_refused_without_echoing_its_credentials() -> None:
    with pytest.raises(ConfigError) as raised:
        chain("openai:m", OPENAI_BASE_URL="ftp://user:hunter2@host/v1")
    assert "OPENAI_BASE_URL" in str(raised.value)
    assert "hunter2" not in str(raised.value)


@pytest.mark.parametrize(
    ("variable", "url", "allowed"),
    [
        ("OPENAI_BASE_URL", "http://localhost:99999/v1", "its port must be a number from 1 to"),
        ("OPENAI_BASE_URL", "http://user:hunter2@localhost:0/v1", "its port must be a number"),
        ("GEMINI_BASE_URL", "https://proxy:8o8o", "its port must be a number from 1 to 65535"),
        ("OPENAI_BASE_URL", "http://my proxy/v1", "its host must be a host name or an IP"),
        ("OPENAI_BASE_URL", "http://999.0.0.1:8000/v1", "its host must be a host name or an IP"),
        ("GEMINI_BASE_URL", "http://-proxy-.example", "its host must be a host name or an IP"),
        ("OPENAI_BASE_URL", "http://[::1/v1", "an http:// or https:// URL with a host"),
        ("OPENAI_BASE_URL", "http:///v1", "an http:// or https:// URL with a host"),
    ],
)
def test_a_base_url_with_an_impossible_port_or_host_stops_start_up(
    variable: str, url: str, allowed: str
) -> None:
    provider = variable.split("_")[0].lower()
    with pytest.raises(ConfigError) as raised:
        chain(f"{provider}:m", **{variable: url})
    message = str(raised.value)
    assert message.startswith(f"{variable}=")
    assert "is not allowed" in message
    assert allowed in message
    assert "hunter2" not in message
    assert "\n" not in message


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:11434/v1",
        "http://[::1]:8000/v1",
        "https://openrouter.ai/api/v1",
        "http://ollama_server:11434/v1",  # Docker Compose service names may hold _
        "http://10.0.0.5/v1",
    ],
)
def test_ordinary_base_urls_are_accepted(url: str) -> None:
    assert chain("openai:m", OPENAI_BASE_URL=url).credentials["openai"].base_url == url


def test_openai_credentials_in_the_url_are_refused_since_the_key_holds_the_header() -> None:
    with pytest.raises(ConfigError) as raised:
        chain("openai:m", OPENAI_BASE_URL="http://admin:hunter2@proxy.example/v1")
    message = str(raised.value)
    assert message.startswith("OPENAI_BASE_URL='http://***@proxy.example/v1' is not allowed")
    assert "Authorization" in message
    assert "hunter2" not in message
    assert "admin" not in message


def test_gemini_credentials_in_the_url_are_kept_for_basic_auth_to_the_proxy() -> None:
    url = "http://admin:hunter2@proxy.example:8080"
    assert chain("gemini:m", GEMINI_BASE_URL=url).credentials["gemini"].base_url == url


def test_keys_never_appear_in_the_chains_repr() -> None:
    parsed = chain("gemini:m", GEMINI_BASE_URL="http://user:hunter2@localhost:8000/v1")
    text = repr(parsed)
    assert "gm-secret-2" not in text
    assert "hunter2" not in text
    assert "localhost:8000" in text


async def test_one_provider_is_built_per_provider_named() -> None:
    providers = chain("openai:a,gemini:b,openai:c").build_providers()
    try:
        assert isinstance(providers["openai"], OpenAIProvider)
        assert isinstance(providers["gemini"], GeminiProvider)
        assert len(providers) == 2
    finally:
        for provider in providers.values():
            await provider.aclose()


@pytest.mark.slow  # a fresh interpreter per case
@pytest.mark.parametrize(
    ("models", "imported", "not_imported"),
    [("openai:gpt-4o-mini", "openai", "google.genai"), ("gemini:flash", "google.genai", "openai")],
)
def test_only_the_sdks_of_configured_providers_are_imported(
    models: str, imported: str, not_imported: str
) -> None:
    """Each SDK is tens of thousands of long-lived objects that every full GC walks again."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        import tomori_cog
        from tomori.config.models import ModelChain

        async def main():
            chain = ModelChain.from_env({{**{KEYS!r}, "TOMORI_MODELS": {models!r}}})
            for provider in chain.build_providers().values():
                await provider.aclose()

        asyncio.run(main())
        print({imported!r} in sys.modules, {not_imported!r} in sys.modules)
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert ran.stdout.split() == ["True", "False"]


def test_a_password_with_a_space_is_not_echoed_either() -> None:
    with pytest.raises(ConfigError) as raised:
        chain("openai:m", OPENAI_BASE_URL="http://admin:hunter 2@proxy.example/v1")
    assert "hunter" not in str(raised.value)


@pytest.mark.parametrize("configured", [None, "", "  "])
async def test_without_a_base_url_the_providers_own_is_used_never_the_environments(
    monkeypatch: pytest.MonkeyPatch, configured: str | None
) -> None:
    """An empty OPENAI_BASE_URL= means the default; and neither SDK may read the process
    environment itself (a base URL, another key, Vertex AI) behind the chain's back."""
    monkeypatch.setenv("OPENAI_BASE_URL", configured or "")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    monkeypatch.setenv("GOOGLE_API_KEY", "another-key")
    extra = {} if configured is None else {"OPENAI_BASE_URL": configured}
    providers = chain("openai:a,gemini:b", **extra).build_providers()
    try:
        openai_client = providers["openai"]._client  # type: ignore[attr-defined]
        assert str(openai_client.base_url) == "https://api.openai.com/v1/"
        gemini_client = providers["gemini"]._client._api_client  # type: ignore[attr-defined]
        assert not gemini_client.vertexai
        assert gemini_client.api_key == KEYS["GEMINI_API_KEY"]
        assert gemini_client._http_options.base_url == "https://generativelanguage.googleapis.com/"
    finally:
        for provider in providers.values():
            await provider.aclose()


@pytest.mark.parametrize(
    ("variable", "key"),
    [
        ("OPENAI_API_KEY", "sk-SECRÉTKEY123"),
        ("OPENAI_API_KEY", "sk-secret\x07key"),
        ("GEMINI_API_KEY", "gm secret"),
        ("GEMINI_API_KEY", "gm-secret\u200b"),
    ],
)
def test_a_key_no_http_header_can_carry_stops_start_up_naming_its_variable(
    variable: str, key: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        chain("openai:a,gemini:b", **{variable: key})
    message = str(raised.value)
    assert message.startswith(f"{variable} is not allowed: a key must be printable ASCII")
    assert "secret" not in message.lower()
    assert "\n" not in message
