"""`TomoriError`: the one root of the errors tomori-cog raises, so a bot author catches one.

Every error of the core and the cog derives from it; those that also mean something the
standard library names keep that base too (`ConfigError` is a `ValueError`, `StoreError` and
`AlreadyLoaded` are `RuntimeError`s, `UnsupportedBot` is a `TypeError`):

    TomoriError
    ├── ConfigError              a setting is not allowed (a variable, Settings, /tomori)
    ├── StoreError               the database cannot be used
    │   ├── MigrationError       its schema cannot be brought up to date
    │   └── SettingsUnavailable  a server's settings could not be read a moment ago
    ├── GaveUp                   a database write stopped being retried (a deadline, a close)
    ├── ProviderError            a model's provider failed; the model chain acts on its kind
    ├── DeliveryError            a channel did not take a message
    │   ├── DestinationUnreachable   the channel is gone or forbids the bot: the turn ends
    │   ├── DeliveryFailed       this one message was lost; the next may land
    │   │   ├── MaybeDelivered   a 5xx or no answer: it may have landed (tomori_cog)
    │   │   ├── WebhookGone      a persona's webhook no longer exists (tomori_cog)
    │   │   └── WebhookRefused   Discord refused a persona's webhook (tomori_cog)
    │   └── DeliveryRateLimited  Discord answered 429 past the library's own retries
    ├── AnswerCut                the answer reached its ceiling: the pass stops reading
    ├── Stopped                  /kill stopped the work of a turn
    ├── ToolFailure              raised by a tool to tell the model why it could not do the job
    ├── MemoryRefused            a memory the store will not save or forget (a bound, a no)
    ├── TooLarge                 a file was larger than its read bound (tomori_cog)
    ├── AlreadyLoaded            the bot already runs a Tomori cog (tomori_cog)
    └── UnsupportedBot           the bot is not a nextcord or discord.py bot (tomori_cog)

A test holds this tree against the code: every exception class defined in `tomori` and
`tomori_cog` derives from `TomoriError` and is drawn here.
"""

from __future__ import annotations

__all__ = ["TomoriError"]


class TomoriError(Exception):
    """The root of every error tomori-cog raises."""
