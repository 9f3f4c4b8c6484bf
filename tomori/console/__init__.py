"""`tomori --console` and `tomori --check`: the core at work in a terminal, without Discord.

- `session.py`  `run_console`: the terminal read, Ctrl+C, the end of input, what closes when
- `dispatch.py` what each message typed does: a turn queued in the channel's lock, a stop
                word, a command; which messages still wait for their answer
- `channel.py`  a simulated channel: messages marked as Discord would cut them, notices as text
- `history.py`  its messages, and what of them a model is shown (as the cog reads a channel)
- `text.py`     text as the terminal prints it: no control a model writes moves the cursor
- `surface.py`  that channel as the core's turn sees it (`tomori.turns.Surface`), a persona's port
- `input.py`   standard input's lines (a pasted code block as one), read in a thread
- `terminal.py` in a terminal: keys to a draft and messages, a paste as one message
- `commands.py` `/help`, `/exit`, `/kill`, `/tomori ...`: what a line starting with / runs
- `server.py`  the console's own server: what `/tomori` sets there, its limits, its metrics
- `check.py`   `run_check`: the database, then every model of the chain, one line each
- `probe.py`   one model asked for a tiny streamed answer; why it failed, in one line
"""

from tomori.console.check import run_check
from tomori.console.probe import ProbeResult, probe
from tomori.console.session import run_console

__all__ = ["ProbeResult", "probe", "run_check", "run_console"]
