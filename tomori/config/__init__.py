"""What the bot author sets: every setting, read once at start-up, refused naming it if bad.

- `settings.py`     `Settings`: every variable, its default and bounds; `Settings.from_env()`
- `parsers.py`      how a variable's text becomes a value within its bounds, or a `ConfigError`
- `database_url.py` `TOMORI_DB_URL` as the driver can use it, its password shown nowhere
- `mcp_servers.py`  `TOMORI_MCP_CONFIG`: the MCP servers, in the file MCP clients read
- `models.py`       `TOMORI_MODELS`: the model chain, its `+vision` flags, the providers it needs
- `allowed_models.py` `TOMORI_ALLOWED_MODELS`: the models a server's admins may choose
- `provider_kinds.py` each provider's variables and key header; a key and a base URL checked
- `scope.py`        `Scope`: where a server admin's setting applies, a channel or the server
"""

from tomori.config.database_url import DatabaseUrl
from tomori.config.models import ModelChain, ModelEntry
from tomori.config.parsers import ConfigError
from tomori.config.scope import Scope
from tomori.config.settings import Delivery, KillPolicy, Settings

__all__ = [
    "ConfigError",
    "DatabaseUrl",
    "Delivery",
    "KillPolicy",
    "ModelChain",
    "ModelEntry",
    "Scope",
    "Settings",
]
