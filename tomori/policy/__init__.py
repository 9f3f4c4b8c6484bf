"""What protects a server and what its admins set: limits, overrides, interruptions, proxies.

- `limits.py`         the cooldown, daily-token and bot-loop rules, as functions of plain values
- `limit_store.py`    each user's cooldown and tokens per server, in the shared database
- `turn_budget.py`    the daily tokens a running turn may still spend, checked between passes
- `overrides.py`      what admins set: channel beats server beats environment, checked
- `override_store.py` those settings in the database: read per turn, cached for the reply rule
- `interruptions.py`  a user's stop word, and which of their messages is a follow-up
- `proxies.py`        proxied members: the known proxy bots, which repost is which member's
                      message, and the grace a message waits in a proxy's server
- `admin.py`          `/tomori`'s subcommands: checked, stored, answered (cogs and console)
- `cast_admin.py`     `/tomori persona` and `/tomori sprite`, the same way
- `tools_admin.py`    `/tomori tools`, the same way
- `memories.py`       `/memory` (a member's own memories, anywhere) and `/tomori memory`
- `notes.py`          the summaries and memories in force, in words (`--check`, `/tomori show`)
- `retention.py`      how long the tables that grow with use keep their rows, and the sweep
"""

from tomori.config.scope import Scope
from tomori.policy.limit_store import DIRECT_MESSAGES, UserLimitStore
from tomori.policy.limits import BotTurns, Limit, Refusal, UserLimits
from tomori.policy.override_store import OverrideStore
from tomori.policy.overrides import Overrides, Resolved, Source, resolve
from tomori.policy.retention import Retention
from tomori.policy.turn_budget import TurnBudget

__all__ = [
    "DIRECT_MESSAGES",
    "BotTurns",
    "Limit",
    "OverrideStore",
    "Overrides",
    "Refusal",
    "Resolved",
    "Retention",
    "Scope",
    "Source",
    "TurnBudget",
    "UserLimitStore",
    "UserLimits",
    "resolve",
]
