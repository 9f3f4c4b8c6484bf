"""`tomori --check` with a `DISCORD_TOKEN`: the token logs in, and the application can serve.

It logs in with the Discord library the bot runs on (nextcord, else discord.py), over HTTP
only (no gateway connection), reads the application's flags for the Message Content intent,
and builds the invite URL with the permissions the cog needs, all within
`DISCORD_CHECK_WITHIN_S`: a Discord that does not answer fails the check, never hangs it.

The permissions asked for, and why, are `INVITE_PERMISSIONS`: nothing the cog never does.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Mapping
from typing import Any, TextIO
from urllib.parse import urlencode

from tomori.config.parsers import install_extra
from tomori_cog.library import installed_library

DISCORD_CHECK_WITHIN_S = 15.0

MESSAGE_CONTENT_FLAGS = (1 << 18) | (1 << 19)
"""`GATEWAY_MESSAGE_CONTENT` (a verified bot, approved) or `..._LIMITED` (the toggle in the
developer portal, for a bot in under 100 servers): either lets the bot read what people write."""

INVITE_PERMISSIONS = {
    "View Channel": 1 << 10,  # see the channels it answers in
    "Send Messages": 1 << 11,  # the answers
    "Embed Links": 1 << 14,  # the notices are embeds (timeout, fallback, /kill)
    "Read Message History": 1 << 16,  # the history, the reply chain; replies to a message
    "Send Messages in Threads": 1 << 38,  # answering in threads and forum posts
    "Manage Webhooks": 1 << 29,  # personas speak through a webhook of the channel's
}
"""What the cog does and nothing more. No Attach Files: it posts no file. No Use Application
Commands: that permission is for members using commands; /kill reaches the bot through the
`applications.commands` scope of the invite."""

INVITE_SCOPES = ("bot", "applications.commands")


def invite_url(application_id: int) -> str:
    """The URL that adds the bot to a server with `INVITE_PERMISSIONS` and its slash commands."""
    permissions = sum(INVITE_PERMISSIONS.values())
    query = urlencode(
        {"client_id": application_id, "permissions": permissions, "scope": " ".join(INVITE_SCOPES)}
    )
    return f"https://discord.com/oauth2/authorize?{query}"


def message_content_granted(application_flags: int) -> bool:
    return bool(application_flags & MESSAGE_CONTENT_FLAGS)


async def check_discord(token: str, out: TextIO) -> bool:
    """Log in with the installed Discord library and print what a newcomer must know; True
    when all is in place (or when there is no token: the bot cannot start without one, which
    it says itself)."""
    if not token:
        print("skipped discord: DISCORD_TOKEN is not set", file=out)
        return True
    library = installed_library()
    if library is None:
        print(
            f"FAILED  discord: the login is checked with the bot's Discord library, and neither "
            f"nextcord nor discord.py is installed: {install_extra('nextcord')}",
            file=out,
        )
        return False
    discord: Any = importlib.import_module(library)
    client = discord.Client(intents=discord.Intents.none())
    try:
        async with asyncio.timeout(DISCORD_CHECK_WITHIN_S):
            await client.login(token)
            application = await client.http.application_info()
    except TimeoutError:
        print(f"FAILED  discord: no answer within {DISCORD_CHECK_WITHIN_S:g} s", file=out)
        return False
    except discord.LoginFailure:
        print("FAILED  discord: the token was refused (401): check DISCORD_TOKEN", file=out)
        return False
    except discord.HTTPException as error:
        print(f"FAILED  discord: HTTP {error.status} while logging in", file=out)
        return False
    except OSError as error:  # aiohttp's connection errors, a failed DNS lookup among them
        print(f"FAILED  discord: could not reach Discord ({type(error).__name__})", file=out)
        return False
    finally:
        await client.close()
    return _report(client.user, application, out)


def _report(user: Any, application: Mapping[str, Any], out: TextIO) -> bool:
    print(f"ok      discord: logged in as {user}", file=out)
    granted = message_content_granted(int(application.get("flags") or 0))
    if granted:
        print("ok      discord: the Message Content intent is granted", file=out)
    else:
        print(
            "FAILED  discord: the Message Content intent is not granted: turn it on in the "
            "developer portal (Bot > Privileged Gateway Intents), or the bot sees no text",
            file=out,
        )
    print(f"invite  {invite_url(int(application['id']))}", file=out)
    return granted
