"""TOMORI_DB_URL: read once as asyncpg can use it, its password shown nowhere."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.command import run
from tomori.config.settings import VARIABLES, ConfigError, DatabaseUrl, Settings
from tomori.store.connect import open_database

CERT = Path(__file__)
"""Any file stands for a certificate here: the address is checked to name one, not read."""
CERT_IN_URL = quote(str(CERT), safe="")


@pytest.mark.parametrize(
    ("raw", "dsn", "shown"),
    [
        (
            "postgresql://tomori:hunter2@db:5432/bot",
            "postgresql://tomori:hunter2@db:5432/bot",
            "postgresql://tomori:***@db:5432/bot",
        ),
        (" postgres://tomori@db/bot ", "postgresql://tomori@db/bot", "postgresql://tomori@db/bot"),
        ("postgresql://db.internal/bot", "postgresql://db.internal/bot", None),
        (
            "postgresql://u:p%40ss%2Fw%3Ard@[::1]:6432/bot",
            "postgresql://u:p%40ss%2Fw%3Ard@[::1]:6432/bot",
            "postgresql://u:***@[::1]:6432/bot",
        ),
        ("postgresql://u:p@ss@db/bot", "postgresql://u:p%40ss@db/bot", "postgresql://u:***@db/bot"),
        (
            "postgresql://b%C3%B6t:pw@db/my%20bot",
            "postgresql://b%C3%B6t:pw@db/my%20bot",
            "postgresql://b%C3%B6t:***@db/my%20bot",
        ),
        (
            f"postgresql://u:pw@db/bot?sslmode=verify-full&sslrootcert={CERT}",
            f"postgresql://u:pw@db/bot?sslmode=verify-full&sslrootcert={CERT_IN_URL}",
            f"postgresql://u:***@db/bot?sslmode=verify-full&sslrootcert={CERT_IN_URL}",
        ),
        (
            f"postgresql://u@db/bot?sslcert={CERT}&sslkey={CERT}&sslpassword=p%26w&sslmode=require",
            f"postgresql://u@db/bot?sslcert={CERT_IN_URL}&sslkey={CERT_IN_URL}&sslpassword=p%26w"
            "&sslmode=require",
            f"postgresql://u@db/bot?sslcert={CERT_IN_URL}&sslkey={CERT_IN_URL}&sslpassword=***"
            "&sslmode=require",
        ),
        (
            "postgresql://db/bot?ssl_min_protocol_version=TLSv1.3&sslnegotiation=direct",
            "postgresql://db/bot?ssl_min_protocol_version=TLSv1.3&sslnegotiation=direct",
            None,
        ),
    ],
)
def test_a_postgresql_url_is_read_and_shown_without_its_password(
    raw: str, dsn: str, shown: str | None
) -> None:
    url = Settings.from_env({"TOMORI_DB_URL": raw}).db_url
    assert url is not None
    assert url.dsn() == dsn
    assert str(url) == (shown or dsn)
    assert repr(url) == f"DatabaseUrl({str(url)!r})"


def test_the_parts_of_a_database_url_are_decoded() -> None:
    url = Settings.from_env({"TOMORI_DB_URL": "postgresql://b%C3%B6t:x@DB:5433/my%20bot"}).db_url
    assert url is not None
    assert (url.user, url.host, url.port, url.database) == ("böt", "db", 5433, "my bot")


@pytest.mark.parametrize("empty", ["", "  ", "\t"])
def test_an_empty_database_url_is_unset_and_sqlite_stays(empty: str) -> None:
    """`TOMORI_DB_URL=` left empty in a .env file means "not set", as an empty optional
    `OPENAI_BASE_URL` does: SQLite at `TOMORI_DB_PATH`."""
    settings = Settings.from_env({"TOMORI_DB_URL": empty, "TOMORI_DB_PATH": "bot.db"})
    assert settings.db_url is None
    assert settings.db_path == Path("bot.db")


def test_without_a_database_url_sqlite_stays_the_default() -> None:
    settings = Settings.from_env({"TOMORI_DB_PATH": "bot.db"})
    assert settings.db_url is None
    assert settings.db_path == Path("bot.db")
    assert [v.default for v in VARIABLES if v.name == "TOMORI_DB_URL"] == ["(none)"]


@pytest.mark.parametrize(
    ("raw", "shown", "why"),
    [
        ("mysql://u:hunter2@db/bot", "mysql://u:***@db/bot", "not a postgresql:// address"),
        ("u:hunter2@db/bot", "***", "not a postgresql:// address"),
        ("host=db user=u password=hunter2 dbname=bot", "***", "a space"),  # libpq's keywords
        ("postgresql://u:hunter2@db", "postgresql://u:***@db", "database name is missing"),
        ("postgresql://u:hunter2@db/a/b", "postgresql://u:***@db/a/b", "database name"),
        ("postgresql://u:hunter2@/bot", "postgresql://u:***@/bot", "host is missing"),
        ("postgresql://u:hunter2@a,b/bot", "postgresql://u:***@a,b/bot", "more than one host"),
        ("postgresql://u:hunter2@db:99999/bot", "postgresql://u:***@db:99999/bot", "port"),
        ("postgresql://u:hunter2@db:0/bot", "postgresql://u:***@db:0/bot", "port is 0"),
        ("postgresql://u:hunter2@db:x/bot", "postgresql://u:***@db:***/bot", "port"),
        ("postgresql://u:hunt/er2@db/bot", "postgresql://u:***@db/bot", "host or port"),
        ("postgresql://u:hunter2", "postgresql://u:***", "host or port"),
        ("postgresql://u@db/bot?password=hunter2", "postgresql://u@db/bot?***", "not read here"),
        (
            "postgresql://u:hunter2@db/bot?sslmode=sometimes",
            "postgresql://u:***@db/bot?***",
            "one of",
        ),
        ("postgresql://u:hunter2@db/bot?sslmode=", "postgresql://u:***@db/bot?***", "one of"),
        (
            "postgresql://u:hunter2@db/bot?sslmode",
            "postgresql://u:***@db/bot?***",
            "cannot be read",
        ),
        (
            "postgresql://u:hunter2@db/bot?connect_timeout=9",
            "postgresql://u:***@db/bot?***",
            "only",
        ),
        (
            "postgresql://u:h@db/bot?sslmode=require&sslmode=disable",
            "postgresql://u:***@db/bot?***",
            "twice",
        ),
        ("postgresql://u:hunter2@db/bot?sslrootcert=", "postgresql://u:***@db/bot?***", "a value"),
        (
            "postgresql://u:hunter2@db/bot?sslrootcert=/no/such/ca.pem",
            "postgresql://u:***@db/bot?***",
            "?sslrootcert= names no file: '/no/such/ca.pem'",
        ),
        ("postgresql://u:hunter2@db/bot#x", "postgresql://u:***@db/bot#***", "#... part"),
        ("postgresql://u:hun ter2@db/bot", "postgresql://u:***@db/bot", "space"),
    ],
)
def test_a_bad_database_url_stops_start_up_naming_it_without_its_password(
    raw: str, shown: str, why: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"TOMORI_DB_URL": raw})
    message = str(raised.value)
    assert message.startswith(f"TOMORI_DB_URL={shown!r} is not allowed: it must be postgresql://")
    assert why in message
    assert "hunter2" not in message
    assert "hun ter2" not in message


def test_a_database_url_set_in_code_is_checked_without_showing_its_password() -> None:
    written = Settings(db_url="postgresql://u:hunter2@db/bot")  # type: ignore[arg-type]
    assert written.db_url == DatabaseUrl.parse("postgresql://u:hunter2@db/bot")
    assert "hunter2" not in repr(written)
    with pytest.raises(ConfigError) as raised:
        Settings(db_url="postgresql://u:hunter2@db/bot?sslmode=no")  # type: ignore[arg-type]
    assert str(raised.value).startswith("Settings(db_url='postgresql://u:***@db/bot?")
    assert "hunter2" not in str(raised.value)
    with pytest.raises(ConfigError, match="host is missing") as raised:
        Settings(db_url=DatabaseUrl(host="", database="bot", password="hunter2"))
    assert "hunter2" not in str(raised.value)
    good = DatabaseUrl(host="db", database="bot", user="u", password="hunter2")
    assert Settings(db_url=good).db_url == good
    with pytest.raises(ConfigError, match="sslmode= must be one of") as raised:
        Settings(db_url=DatabaseUrl(host="db", database="b", options=[("sslmode", "always")]))


def test_a_database_url_in_code_is_parsed_by_the_variables_own_rule() -> None:
    raw = "postgresql://u:hunter2@db:5432/bot?sslmode=require"
    url = DatabaseUrl.parse(raw)
    assert url == Settings.from_env({"TOMORI_DB_URL": raw}).db_url
    assert Settings(db_url=url).db_url == url
    assert url.options == (("sslmode", "require"),)
    with pytest.raises(ConfigError) as raised:
        DatabaseUrl.parse("postgresql://u:hunter2@db/bot?sslmode=maybe")
    assert str(raised.value).startswith("TOMORI_DB_URL='postgresql://u:***@db/bot?***' is not")
    assert "hunter2" not in str(raised.value)


MARKER = "S3cr"
"""Starts every generated password: text no address or message contains by itself."""


@settings(max_examples=300, deadline=None)
@given(password=st.text(max_size=20).map(lambda rest: MARKER + rest))
def test_a_password_of_any_characters_is_never_shown(password: str) -> None:
    encoded = quote(password, safe="")
    url = Settings.from_env({"TOMORI_DB_URL": f"postgresql://u:{encoded}@db:5432/bot"}).db_url
    assert url is not None
    assert unquote(urlsplit(url.dsn()).password or "") == password
    seen = [str(url), repr(url), repr(Settings(db_url=url)), str(asdict(Settings(db_url=url)))]
    for broken in [
        f"postgresql://u:{encoded}@db:5432",
        f"postgres://u:{encoded}@db:70000/bot",
        f"postgresql://u:{encoded}@db/bot?sslmode=require",
        f"postgresql://u:{password}@db/bot",  # not %-encoded: read as it parses, or refused
        f"postgresql://u:{password}",
        f"postgresql://u@db/bot?password={encoded}",
        f"mysql://u:{password}@db/bot",
    ]:
        try:
            seen.append(repr(Settings.from_env({"TOMORI_DB_URL": broken})))
        except ConfigError as error:
            seen.append(str(error))
        try:
            Settings(db_url=broken)  # type: ignore[arg-type]
        except ConfigError as error:
            seen.append(str(error))
    for text in seen:
        assert MARKER not in text, text
        assert quote(MARKER) not in text, text


@settings(max_examples=200, deadline=None)
@given(
    password=st.text(min_size=1, max_size=20).map(lambda rest: MARKER + rest),
    key_password=st.text(min_size=1, max_size=20).map(lambda rest: MARKER + rest),
)
def test_a_drivers_error_echoing_the_secrets_is_masked(password: str, key_password: str) -> None:
    """A driver error is shown through `masked`, whatever form of the secrets it repeats."""
    url = DatabaseUrl(
        host="db",
        database="bot",
        user="u",
        password=password,
        options=[("sslmode", "require"), ("sslpassword", key_password)],
    )
    echoed = " ".join(
        [url.dsn(), password, quote(password, safe=""), key_password, quote(key_password)]
    )
    masked = url.masked(f"could not connect to {echoed}")
    assert MARKER not in masked
    assert str(url) in masked


# -- on a real server: the TLS the address asks for --------------------------------------------


@pytest.mark.parametrize("sslmode", ["disable", "allow", "prefer"])
async def test_an_address_that_allows_plain_connections_reaches_a_server_without_tls(
    pg_url: str, sslmode: str
) -> None:
    database = await open_database(
        Settings(db_url=DatabaseUrl.parse(f"{pg_url}?sslmode={sslmode}"))
    )
    try:
        assert [tuple(row) for row in await database.fetchall("SELECT 1")] == [(1,)]
    finally:
        await database.close()


async def test_requiring_tls_of_a_server_without_it_stops_start_up_naming_the_variable(
    pg_url: str,
) -> None:
    password = urlsplit(pg_url).password
    assert password
    result = await asyncio.to_thread(
        run,
        DISCORD_TOKEN="x",
        TOMORI_MODELS="openai:m",
        OPENAI_API_KEY="k",
        TOMORI_DB_URL=f"{pg_url}?sslmode=require",
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: the database postgresql://tomori:***@")
    assert "?sslmode=require cannot be used" in result.stderr
    assert "SSL" in result.stderr  # the server's refusal, as the driver words it
    assert "TOMORI_DB_URL" in result.stderr
    assert password not in result.stderr + result.stdout
    assert result.stderr.count("\n") == 1  # one line, no traceback
