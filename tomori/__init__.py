"""tomori-cog's core: an LLM chat for Discord bots that never hangs. It imports no Discord
library; `tomori_cog` adapts nextcord or discord.py to it.

Packages, from the bottom up (each imports only those above it in this list):
- `words/`      the words a Discord user reads, in English and Japanese, as data
- `providers/`  OpenAI-compatible and Gemini streams as events
- `config/`     the settings, their parsers, the database URL, the model chain
- `store/`      the database: SQLite or PostgreSQL behind one interface, retries
- `locks/`      one turn per channel across every process, the queue, /kill
- `delivery/`   text into Discord-shaped messages through a port; notices
- `prompt/`     what the model is sent
- `tools/`      tools a model may call: built in, from MCP servers, switched off by admins
- `summary/`    each channel's summary of what fell out of its window, as stored
- `memory/`     memories in scopes the store enforces: `remember`, `forget`, each turn's note
- `generation/` answering a turn: the model chain, the tool loop, `stream_once`
- `cast/`       personas, their sprites, and the scenes they play
- `monitoring/` metrics, `/tomori status`, and the models' health
- `policy/`     limits, admins' overrides, stop words and proxies, `/tomori`
- `turns/`      the turn, written once against a `Surface`: its request, its configuration,
                the bot's, the personas' or a scene's answers
- `commands/`   every slash command declared once, for both libraries and the console
- `console/`    `tomori --console` and `--check`
And `errors.py`: `TomoriError`, the root of every error raised; `turn_log.py`: the fields of
the turn a log line is about, which any layer may note; `log_lines.py`: the log's lines, text
or JSON (`TOMORI_LOG_FORMAT`); `health_check.py`: the container's health check.
"""
