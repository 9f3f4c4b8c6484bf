"""The PostgreSQL address in `TOMORI_DB_URL`: read once, its password shown nowhere.

What is read is what the driver (asyncpg) can use: a host, a database, and the TLS options
libpq's addresses carry after `?` (`sslmode=require` for a managed server). Anything else is
refused at start-up naming the variable and why, with whatever could be a password masked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from tomori.config.parsers import ConfigError, refused

POSTGRES_SCHEMES = ("postgresql", "postgres")
DATABASE_URL_SHAPE = (
    "postgresql://user:password@host:port/dbname?sslmode=... (port and ?... optional; "
    "@ : / ? # in the user or password %-encoded)"
)
TLS_VERSIONS = frozenset({"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"})
TLS_OPTIONS: dict[str, frozenset[str] | None] = {
    "sslmode": frozenset({"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}),
    "sslrootcert": None,
    "sslcert": None,
    "sslkey": None,
    "sslpassword": None,
    "sslcrl": None,
    "ssl_min_protocol_version": TLS_VERSIONS,
    "ssl_max_protocol_version": TLS_VERSIONS,
    "sslnegotiation": frozenset({"postgres", "direct"}),
}
"""The options after `?` that the driver (asyncpg) reads as libpq does, with the values it
takes (None: a file path or a password). Any other name asyncpg would send to the server as a
setting, which refuses libpq's other options (`connect_timeout`, `channel_binding`...) at the
first connection: refused here instead, at start-up, with what is read."""
SECRET_OPTIONS = frozenset({"sslpassword"})
FILE_OPTIONS = frozenset({"sslrootcert", "sslcert", "sslkey", "sslcrl"})
TLS_ENVIRONMENT = {"PGSSLMODE": "sslmode", "PGSSLROOTCERT": "sslrootcert"}
"""The variables the driver (asyncpg) reads for the TLS options the address leaves out."""
OPTION_NAME = re.compile(r"[a-z_]{1,40}")
"""An option name shown in an error: one that could not be a password's text."""


class DatabaseUrl:
    """A PostgreSQL address whose password shows nowhere but in `dsn()`.

    The settings are printed, logged and put in error messages; a password held as a plain
    string would go with them. `str` and `repr` show `postgresql://user:***@host:port/dbname`,
    and only the driver's connect call asks for `dsn()`. Not a dataclass, so that
    `dataclasses.asdict(settings)` keeps it whole (and masked) instead of spelling out its parts.
    """

    __slots__ = ("_password", "database", "host", "options", "port", "user")

    def __init__(
        self,
        *,
        host: str,
        database: str,
        port: int | None = None,
        user: str = "",
        password: str = "",
        options: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.host = host
        self.database = database
        self.port = port
        self.user = user
        self._password = password
        self.options = tuple(options)
        """The TLS options after `?`, in their order: `(("sslmode", "require"),)`."""

    @classmethod
    def parse(cls, text: str) -> DatabaseUrl:
        """Read an address as `TOMORI_DB_URL` is read (the same rule, and the same errors), for
        a `Settings(db_url=...)` built in code."""
        return database_url("TOMORI_DB_URL", text)

    def dsn(self) -> str:
        """The address with the real password, for the database driver and nothing else."""
        return self._written(masked=False)

    def masked(self, text: str) -> str:
        """`text` (a driver's error, say) with this address's secrets replaced by `***`, should
        it ever echo them, as given or %-encoded (longest form first)."""
        text = text.replace(self.dsn(), str(self))
        secrets = [self._password, *(v for k, v in self.options if k in SECRET_OPTIONS)]
        for secret in filter(None, secrets):
            for form in sorted({secret, quote(secret), quote(secret, safe="")}, key=len)[::-1]:
                text = text.replace(form, "***")
        return text

    def _written(self, *, masked: bool) -> str:
        def hidden(secret: str) -> str:
            return "***" if masked and secret else quote(secret, safe="")

        user = quote(self.user, safe="")
        password = hidden(self._password)
        userinfo = f"{user}:{password}@" if password else f"{user}@" if user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port is None else f":{self.port}"
        query = "&".join(
            f"{name}={hidden(value) if name in SECRET_OPTIONS else quote(value, safe='')}"
            for name, value in self.options
        )
        tail = f"?{query}" if query else ""
        return f"postgresql://{userinfo}{host}{port}/{quote(self.database, safe='')}{tail}"

    def __str__(self) -> str:
        return self._written(masked=True)

    def __repr__(self) -> str:
        return f"DatabaseUrl({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatabaseUrl) and self.dsn() == other.dsn()

    def __hash__(self) -> int:
        return hash(self.dsn())


HOST_AND_PORT = re.compile(r"(\[[0-9a-f:.]*\]|[^:\[\]]*)(:[0-9]+)?", re.ASCII | re.IGNORECASE)
"""A host part that holds nothing but a host (a name, an address, an IPv6 one in brackets) and
maybe a port number: what is shown of it in an error; anything else may be a password."""


def masked_url(raw: str) -> str:
    """`raw` as an error may show it: whatever could be a password replaced by `***`.

    The text is refused, so where its password lies is a guess, and the guess masks too much
    rather than too little: after the user name up to the last `@`, after a `:` in the host
    part unless a host and a port number are all it holds, and any `?` or `#` part (where a
    `?password=` would be). Text that is no URL at all is masked whole.
    """
    scheme, separator, rest = raw.partition("://")
    if not separator:  # not a URL at all: a keyword string (`password=...`) shows nothing
        return "***"
    userinfo, at, hostpart = rest.rpartition("@")
    if ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    cut = min([i for i in map(hostpart.find, "/?#") if i >= 0], default=len(hostpart))
    authority, tail = hostpart[:cut], hostpart[cut:]
    if not HOST_AND_PORT.fullmatch(authority):
        authority = authority.split(":", 1)[0] + ":***"
    cut = min([i for i in map(tail.find, "?#") if i >= 0], default=len(tail))
    tail = tail[: cut + 1] + "***" if cut < len(tail) else tail
    return f"{scheme}{separator}{userinfo}{at}{authority}{tail}"


def database_url(name: str, raw: str) -> DatabaseUrl:
    """Accept `postgresql://` (or `postgres://`) with a host and a database name; refuse the
    rest naming the variable, its value shown with the password masked."""

    def no(problem: str) -> ConfigError:
        return refused(name, masked_url(raw), f"it must be {DATABASE_URL_SHAPE}: {problem}")

    text = raw.strip()
    if any(character.isspace() or not character.isprintable() for character in text):
        raise no("it has a space or a control character")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise no("its host or port cannot be read") from None
    if parts.scheme not in POSTGRES_SCHEMES:
        raise no("it is not a postgresql:// address (unset it for SQLite at TOMORI_DB_PATH)")
    if not parts.hostname:
        raise no("the host is missing")
    if "," in parts.hostname:
        raise no("it names more than one host")
    if port == 0:
        raise no("the port is 0")
    database = unquote(parts.path.removeprefix("/"))
    if not database or "/" in parts.path[1:]:
        raise no("the database name is missing, or has a /")
    if "#" in text:
        raise no("a #... part is not read here; leave it out")
    return DatabaseUrl(
        host=parts.hostname,
        database=database,
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        options=_tls_options(parts.query, no),
    )


def _tls_options(query: str, no: Callable[[str], ConfigError]) -> list[tuple[str, str]]:
    """The options after `?`: each one of `TLS_OPTIONS`, once, with a value it takes."""
    read = ", ".join(TLS_OPTIONS)
    try:
        options = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise no(f"its ?... part cannot be read; it may hold {read}") from None
    seen: set[str] = set()
    for name, value in options:
        shown = f"?{name}=" if OPTION_NAME.fullmatch(name) else "an option"
        if name not in TLS_OPTIONS:
            raise no(
                f"{shown} is not read here (the user and password go before the @); "
                f"after ? only {read} are"
            )
        if name in seen:
            raise no(f"{shown} is given twice")
        seen.add(name)
        values = TLS_OPTIONS[name]
        if not value or (values is not None and value not in values):
            allowed = "a value" if values is None else "one of " + ", ".join(sorted(values))
            raise no(f"{shown} must be {allowed}")
        if name in FILE_OPTIONS and not Path(value).is_file():
            # The driver would fail at the first connection with a bare "No such file".
            where = "" if Path(value).is_absolute() else f" in {str(Path.cwd())!r}"
            raise no(f"{shown} names no file: {value!r}{where}")
    return options


def tls_from_environment(url: DatabaseUrl, environ: Mapping[str, str]) -> dict[str, str]:
    """The TLS variables (`PGSSLMODE`, `PGSSLROOTCERT`) the driver will read for `url`: those
    set whose option the address leaves out (the address wins)."""
    given = {name for name, _ in url.options}
    return {
        variable: environ[variable]
        for variable, option in TLS_ENVIRONMENT.items()
        if environ.get(variable, "").strip() and option not in given
    }


def tls_environment_problem(url: DatabaseUrl, environ: Mapping[str, str]) -> str | None:
    """What is wrong with a TLS variable the driver would read for `url`, refused before the
    first connection as the address's own options are: the driver would fail at it with words
    that name neither the variable nor what it may be."""
    for variable, value in tls_from_environment(url, environ).items():
        allowed = TLS_OPTIONS[TLS_ENVIRONMENT[variable]]
        if allowed is not None and value not in allowed:
            return f"{variable}={value!r} is not allowed: it must be one of " + ", ".join(
                sorted(allowed)
            )
        if allowed is None and not Path(value).is_file():
            return f"{variable}={value!r} is not allowed: it names no file"
    return None
