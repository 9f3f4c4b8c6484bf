"""What the model is shown of Discord: a channel's history, attachments, a linked message.

- `history.py`      which messages a turn is shown: the history, reply chains, a thread's starter
- `model_view.py`   the one place a message becomes a context item (embeds, personas, the bot)
- `memory.py`       each channel's recent messages as the gateway showed them, so a turn's
                    history is read over REST only when memory may miss something
- `gateway.py`      the edits, deletes and reconnects that keep that memory honest
- `attachments.py`  images, text files, other files, stickers, within their bounds
- `message_files.py` which files a message carries, and what each is (image, text, other)
- `fetch.py`        a file read from Discord's CDN, never past its bound or deadline
- `file_cache.py`   the files read lately, kept so the next turns do not download them again
- `image_bytes.py`  the image bytes all turns hold at once, within their bound
- `unreadable.py`   the files whose read failed or hung lately, which turns do not try again
- `fallen_out.py`  the messages that fell out of a channel's window since its summary, read
                    for the next fold (`tomori.turns.summaries`)
- `message_tool.py` the built-in `read_message` tool (a message by link or ID)
- `audience.py`     whether everyone in a server can read a channel (what may leave it)
"""

__all__: list[str] = []
