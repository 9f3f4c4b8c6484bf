"""Which messages become turns, and what they must pass first.

- `reply_rule.py`     which messages are answered, and whether they are told of failures
- `gate.py`           the limits, in order, before any model is asked
- `deliverability.py` whether the bot can post in a channel; channels that refused a send
- `live_messages.py`  trigger messages kept from their admission until their turn reads them
- `proxies.py`        proxied members (PluralKit, Tupperbox): their reposts, where proxies are
                      present, the originals waiting out their grace
"""

__all__: list[str] = []
