"""Tools from MCP servers, through the cog: real servers written with the SDK, started by the
test (tests/support/mcp_server.py), on stdio and Streamable HTTP, and a model on the local LLM
server that calls them. Each call keeps the contract of every tool call: bounded by its
timeout, stopped at once by /kill (and the server told so), a crashed server restarted."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.bots import ChatBot, OpenBot, only_on
from tests.support.cog_settings import chain_for, settings_for
from tests.support.llm_server import LLMServer
from tests.support.mcp_servers import ROOT, ROOT_VARIABLE, http_server, stdio_config
from tests.support.scripts import answer, tool_call
from tests.support.tomori_commands import said
from tests.support.waiting import until
from tests.support.world import CHANNEL_ID, GUILD_ID

OTHER_CHANNEL = CHANNEL_ID + 1
ON_ONE_LIBRARY = "a tool call is the core's: the library only carries the message"


@pytest.fixture(autouse=True)
def _root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROOT_VARIABLE, str(ROOT))


async def start(
    open_bot: OpenBot,
    llm_server: LLMServer,
    tmp_path: Path,
    config: Path,
    models: str = "openai:test-model",
    *,
    ready: bool = True,
    **overrides: Any,
) -> ChatBot:
    """A bot with the servers of `config`; `ready`: once each has started (a turn right after
    start-up waits for a first start only `FIRST_WAIT_S`, which a busy machine can pass)."""
    settings = settings_for(tmp_path, mcp_config=config, **overrides)
    bot = await open_bot(settings, chain_for(llm_server, models))
    if ready:
        await until(lambda: all(state == "ready" for _, state in servers(bot)), within=60)
    return bot


def servers(bot: ChatBot) -> tuple[tuple[str, str], ...]:
    """Each MCP server's name and state, as `/tomori tools` lists them."""
    return bot.chat.tool_catalog(str(GUILD_ID)).servers


def messages(llm_server: LLMServer, request: int) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = llm_server.requests[request].body["messages"]
    return sent


def tool_result(llm_server: LLMServer, request: int) -> dict[str, Any]:
    """What the model was told of its last tool call, in request `request`."""
    result: dict[str, Any] = json.loads(
        llm_server.requests[request].body["messages"][-1]["content"]
    )
    return result


def listed(bot: ChatBot) -> set[str]:
    """The tools `/tomori tools` would list now."""
    return {tool.name for tool in bot.chat.tool_catalog(str(GUILD_ID)).tools}


def offered(llm_server: LLMServer, request: int) -> set[str]:
    return {tool["function"]["name"] for tool in llm_server.requests[request].body["tools"]}


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_the_model_calls_a_stdio_servers_tool_and_answers_with_its_result(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    config, _ = stdio_config(tmp_path)
    bot = await start(  # asked at once: a turn right after start-up waits for the first start
        open_bot, llm_server, tmp_path, config, models="openai:test-model+vision", ready=False
    )
    llm_server.script(
        tool_call("tests__echo", '{"text": "hi"}'),
        tool_call("tests__picture", "{}", call_id="call_2"),
        answer("It said: echo: hi, and drew a dot."),
    )
    await bot.say(f"{bot.mention()} echo hi")
    await bot.settled()
    first = llm_server.requests[0].body["tools"]
    echo = next(tool["function"] for tool in first if tool["function"]["name"] == "tests__echo")
    assert echo["parameters"]["properties"]["text"]["type"] == "string"  # the server's schema
    assert tool_result(llm_server, 1) == {"result": {"text": "echo: hi"}}
    *_, picture_result, images = messages(llm_server, 2)  # a vision model sees the picture
    assert json.loads(picture_result["content"]) == {"result": {"text": ""}}
    assert images["role"] == "user"
    assert images["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert await bot.contents() == ["It said: echo: hi, and drew a dot."]
    _, text = said(await bot.tomori("status"))
    assert "Tool calls: tests__echo 1; tests__picture 1" in text.splitlines()


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_a_stdio_servers_stderr_goes_to_its_own_logger_line_by_line(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Not the bot's terminal: the log, each line named by its server (tomori.mcp.NAME)."""
    config, _ = stdio_config(tmp_path)
    with caplog.at_level(logging.INFO, logger="tomori.mcp"):
        bot = await start(open_bot, llm_server, tmp_path, config)
        llm_server.script(tool_call("tests__echo", '{"text": "hi"}'), answer("Done."))
        await bot.say(f"{bot.mention()} echo hi")
        await bot.settled()
        await until(lambda: "[tests] tomori-test: echo hi" in caplog.messages)
    assert [
        (r.name, r.levelname, r.message) for r in caplog.records if "tomori-test" in r.message
    ] == [
        ("tomori.mcp.tests", "INFO", "[tests] tomori-test: serving on stdio"),
        ("tomori.mcp.tests", "INFO", "[tests] tomori-test: echo hi"),
    ]


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_a_servers_new_tool_is_offered_once_it_says_its_tools_changed(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    config, _ = stdio_config(tmp_path)
    bot = await start(open_bot, llm_server, tmp_path, config)
    llm_server.script(tool_call("tests__grow", "{}"), answer("Grown."))
    await bot.say(f"{bot.mention()} grow")
    await bot.settled()
    assert "tests__extra" not in offered(llm_server, 0)
    await until(lambda: "tests__extra" in listed(bot))  # the server says it, and is asked again
    llm_server.script(answer("More tools."))
    await bot.say(f"{bot.mention()} again")
    await bot.settled()
    assert "tests__extra" in offered(llm_server, 2)


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_kill_stops_a_hanging_mcp_call_at_once_and_the_server_hears_it(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    config, server = stdio_config(tmp_path)
    bot = await start(open_bot, llm_server, tmp_path, config)
    llm_server.script(tool_call("tests__hang", "{}"))
    await bot.say(f"{bot.mention()} hang")
    await server.wait_for("hanging")
    killed_at = time.monotonic()
    reply = await bot.kill()
    assert reply["data"]["embeds"][0]["title"] == "Stream Stopped"
    await bot.settled()
    await server.wait_for("cancelled", timeout_s=1.0)
    assert time.monotonic() - killed_at < 1.0
    assert len(llm_server.requests) == 1  # no pass after the killed call
    llm_server.script(tool_call("tests__echo", '{"text": "again"}'), answer("Back."))
    await bot.say(f"{bot.mention()} again")
    await bot.settled()
    assert tool_result(llm_server, 2) == {"result": {"text": "echo: again"}}
    _, text = said(await bot.tomori("status"))
    assert "Tool calls: tests__echo 1; tests__hang 1 (1 killed)" in text.splitlines()


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_a_call_past_its_timeout_fails_to_the_model_and_the_turn_goes_on(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    config, server = stdio_config(tmp_path)
    bot = await start(open_bot, llm_server, tmp_path, config, tool_execution_timeout_ms=500)
    llm_server.script(tool_call("tests__hang", "{}"), answer("The tool was too slow."))
    await bot.say(f"{bot.mention()} hang")
    await bot.settled()
    assert "did not finish within 0.5s" in tool_result(llm_server, 1)["reason"]
    assert await bot.contents() == ["The tool was too slow."]
    await server.wait_for("cancelled", timeout_s=1.0)  # the server was told


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_a_server_that_exits_mid_call_is_restarted_and_the_next_turn_works(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    config, server = stdio_config(tmp_path)
    bot = await start(open_bot, llm_server, tmp_path, config)
    llm_server.script(tool_call("tests__crash_once", "{}"), answer("It broke."))
    await bot.say(f"{bot.mention()} crash")
    await bot.settled()
    assert "stopped during the call" in tool_result(llm_server, 1)["reason"]
    llm_server.script(tool_call("tests__crash_once", "{}"), answer("It works."))
    await bot.say(f"{bot.mention()} again")
    await bot.settled()
    assert tool_result(llm_server, 3) == {"result": {"text": "recovered"}}
    assert server.starts == 2
    assert await bot.contents() == ["It broke.", "It works."]


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_the_model_calls_a_streamable_http_servers_tool_and_kill_stops_one(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    async with http_server(tmp_path) as (config, server):
        bot = await start(open_bot, llm_server, tmp_path, config)
        llm_server.script(
            tool_call("tests__echo", '{"text": "web"}'),
            tool_call("tests__picture", "{}", call_id="call_2"),
            answer("Done."),
        )
        await bot.say(f"{bot.mention()} echo web")
        await bot.settled()
        assert tool_result(llm_server, 1) == {"result": {"text": "echo: web"}}
        assert tool_result(llm_server, 2) == {  # a model without vision is told of it
            "result": {"text": ""},
            "images_not_shown": ["an image (image/png) you cannot see"],
        }
        assert await bot.contents() == ["Done."]
        llm_server.script(tool_call("tests__hang", "{}"))  # /kill reaches an HTTP server too
        await bot.say(f"{bot.mention()} hang")
        await server.wait_for("hanging")
        killed_at = time.monotonic()
        await bot.kill()
        await server.wait_for("cancelled", timeout_s=1.0)
        assert time.monotonic() - killed_at < 1.0


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_an_http_servers_url_and_headers_reach_no_log_line(
    open_bot: OpenBot,
    llm_server: LLMServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The HTTP client logs each request's URL at INFO, and its errors name the URL: a token
    in the URL, or in a header, must reach none of them, however the client spells it (a
    key percent-encoded, the host in lower case), nor the server's address its connection's
    DEBUG lines name."""
    async with http_server(tmp_path) as (config, _):
        written = json.loads(config.read_text())
        entry = written["mcpServers"]["tests"]
        address = entry["url"]  # http://127.0.0.1:<port>/mcp
        port = address.split(":")[2].split("/")[0]
        entry["url"] = f"http://LocalHost:{port}/mcp?key=${{MCP_KEY}}"
        entry["headers"]["Authorization"] = "Bearer HEADER-SECRET-5678"
        config.write_text(json.dumps(written))
        monkeypatch.setenv("MCP_KEY", "QUERY SECRET/12+=34&x")
        with caplog.at_level(logging.DEBUG):
            bot = await start(open_bot, llm_server, tmp_path, config)
            llm_server.script(tool_call("tests__echo", '{"text": "web"}'), answer("Done."))
            await bot.say(f"{bot.mention()} echo web")
            await bot.settled()
            assert tool_result(llm_server, 1) == {"result": {"text": "echo: web"}}
            await bot.stop()
    logged = caplog.text
    assert "<mcp server tests>" in logged  # the requests were logged, as the server's name
    spelt = ("QUERY SECRET", "QUERY%20SECRET", "QUERY+SECRET", "HEADER-SECRET-5678")
    for secret in (*spelt, f"localhost:{port}", f"port={port}"):
        assert secret.lower() not in logged.lower(), secret
    assert logging.getLogRecordFactory() is logging.LogRecord  # taken away once closed


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_a_servers_tools_are_offered_only_in_the_servers_its_author_lists(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Anyone can invite a public bot into a server of their own: there, no tool of the
    author's MCP servers is offered, and one the model calls anyway does not run."""
    config, folder = stdio_config(tmp_path, {"guilds": ["111111111111111111"]})
    bot = await start(open_bot, llm_server, tmp_path, config)
    llm_server.script(tool_call("tests__echo", '{"text": "hi"}'), answer("No tools here."))
    await bot.say(f"{bot.mention()} echo hi")
    await bot.settled()
    assert not any(name.startswith("tests__") for name in offered(llm_server, 0))
    assert tool_result(llm_server, 1)["status"] == "tool_execution_failed"
    assert folder.starts == 1  # the server runs, for the servers that list it
    assert not any(name.startswith("tests__") for name in listed(bot))  # /tomori tools too


@only_on("nextcord", ON_ONE_LIBRARY)
async def test_a_tool_that_may_change_things_is_offered_but_never_run_unconfirmed(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """Those its server does not mark read-only, and a read-only one the author's `confirm`
    names: each call waits for its asker, and unanswered is not run (the buttons themselves
    are tests/cog/test_tool_confirmation.py's)."""
    config, folder = stdio_config(tmp_path, {"guilds": [str(GUILD_ID)], "confirm": ["echo"]})
    bot = await start(open_bot, llm_server, tmp_path, config, tool_confirm_timeout_ms=1_000)
    llm_server.script(
        tool_call("tests__write", '{"text": "pwned"}'),
        tool_call("tests__wipe", "{}", call_id="call_2"),
        tool_call("tests__echo", '{"text": "x"}', call_id="call_3"),
        answer("Nothing changed."),
    )
    await bot.say(f"{bot.mention()} write, wipe and echo")
    await bot.settled()
    assert {"tests__hang", "tests__write", "tests__wipe", "tests__echo"} <= offered(llm_server, 0)
    for request in (1, 2, 3):
        result = tool_result(llm_server, request)
        assert result["status"] == "not_run"
        assert result["reason"] == "the member did not confirm this call within 1s"
    assert not (folder.path / "wrote").exists()
    assert not (folder.path / "wiped").exists()


async def test_an_admin_turning_a_server_off_for_a_channel_removes_its_tools_there_only(
    open_bot: OpenBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    config, _ = stdio_config(tmp_path)
    bot = await start(open_bot, llm_server, tmp_path, config)
    llm_server.script(answer("Hello."))
    await bot.say(f"{bot.mention()} hi")
    await bot.settled()
    assert {"tests__echo", "tests__hang", "current_time"} <= offered(llm_server, 0)
    title, text = said(await bot.tomori("tools", name="tests", offered=False))
    assert (title, text) == (
        "Tomori Settings",
        "MCP server tests's tools: turned off in this channel from the next message on.",
    )
    _, listing = said(await bot.tomori("tools"))
    assert "tests__echo (MCP server tests): off, set for channel by its MCP server" in listing
    assert "current_time (built-in): on" in listing
    llm_server.script(answer("Here."), answer("There."))
    await bot.say(f"{bot.mention()} here")
    await bot.settled()
    await bot.say(f"{bot.mention()} there", channel=OTHER_CHANNEL)
    await bot.settled()
    here, there = offered(llm_server, 1), offered(llm_server, 2)
    assert not any(name.startswith("tests__") for name in here)
    assert "current_time" in here
    assert {"tests__echo", "tests__hang"} <= there
    said(await bot.tomori("reset"))  # the channel's every setting, its tools' too
    llm_server.script(answer("Back."))
    await bot.say(f"{bot.mention()} here again")
    await bot.settled()
    assert {"tests__echo", "tests__hang"} <= offered(llm_server, 3)


async def test_a_server_that_cannot_start_never_holds_a_turn_and_tools_says_why(
    open_bot: OpenBot,
    llm_server: LLMServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Admins see that it is down and what failed, never the author's command, paths or
    arguments; the author's log keeps the whole reason."""
    config = tmp_path / "mcp.json"
    command = str(tmp_path / "SECRETCMD")
    entry = {"command": command, "args": ["--key", "ARGSECRET"], "tomori": {"guilds": ["*"]}}
    config.write_text(json.dumps({"mcpServers": {"gone": entry}}))
    bot = await start(open_bot, llm_server, tmp_path, config, ready=False)
    llm_server.script(answer("Still here."), answer("And here."))
    for _ in range(2):  # the second turn comes while the server waits out its backoff
        began = time.monotonic()
        await bot.say(f"{bot.mention()} hi")
        await bot.settled()
        assert time.monotonic() - began < 2.0
    assert await bot.contents() == ["Still here.", "And here."]
    _, listing = said(await bot.tomori("tools"))
    assert "MCP servers: gone down (FileNotFoundError: No such file or directory)" in listing
    for secret in ("SECRETCMD", str(tmp_path), "ARGSECRET"):
        assert secret not in listing
    failed = f"FileNotFoundError: [Errno 2] No such file or directory: '{command}'"
    assert f"MCP server gone: {failed}" in caplog.messages
