"""What protects a server and what its admins set: limits, overrides, metrics, status.

- `limits.py`         the cooldown, daily-token and bot-loop rules, as functions of plain values
- `limit_store.py`    each user's cooldown and tokens per server, in the shared database
- `overrides.py`      what admins set: channel beats server beats environment, checked
- `override_store.py` those settings in the database: read per turn, cached for the reply rule
- `metrics.py`        stalls, tool failures, each turn's tokens and outcome, kept in the database
- `server_status.py`  `/tomori status`: a server's last day, counted from the metrics
- `model_health.py`   the models turns skip for now, in the shared database, and their probes
- `personas.py`       characters that answer under their own name: who a message calls,
                      the personas, who posted what and each channel's webhook, in the database
- `sprites.py`        a persona's labelled alternate avatars: checked, stored, told to its model
- `scenes.py`         `/scene`: a scripted exchange of 2-3 personas, checked, carried in the
                      lock's trigger, and what each persona is told before its line
- `interruptions.py`  a user's stop word, and which of their messages is a follow-up
- `proxies.py`        proxied members: the known proxy bots, which repost is which member's
                      message, and the grace a message waits in a proxy's server
- `tool_switches.py`  which tools an admin turned off or on, per channel or server (the rule)
- `admin.py`          `/tomori`'s subcommands: checked, stored, answered (cogs and console)
"""

from tomori.policy.limit_store import DIRECT_MESSAGES, UserLimitStore
from tomori.policy.limits import BotTurns, Limit, Refusal, UserLimits
from tomori.policy.metrics import Metrics
from tomori.policy.model_health import ModelHealthStore
from tomori.policy.override_store import OverrideStore
from tomori.policy.overrides import Overrides, Resolved, Scope, Source, resolve
from tomori.policy.personas import Persona, PersonaStore, WebhookStore
from tomori.policy.server_status import ServerStatus, server_status

__all__ = [
    "DIRECT_MESSAGES",
    "BotTurns",
    "Limit",
    "Metrics",
    "ModelHealthStore",
    "OverrideStore",
    "Overrides",
    "Persona",
    "PersonaStore",
    "Refusal",
    "Resolved",
    "Scope",
    "ServerStatus",
    "Source",
    "UserLimitStore",
    "UserLimits",
    "WebhookStore",
    "resolve",
    "server_status",
]
