"""A tool that may change things runs only on its asker's press, on the Discord-faithful REST
server with each library's real client and a real MCP server written with the SDK: the prompt
shows the tool and its whole arguments and pings the asker alone; another member's press, a
refusal, no answer in time, a /kill and a missing role each leave the tool unrun, and the
model is told why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import ChannelMessage
from tests.support.llm_server import LLMServer
from tests.support.mcp_servers import ROOT, ROOT_VARIABLE, McpFolder, stdio_config
from tests.support.rest_bots import OpenRestBot, RestBot
from tests.support.scripts import answer, tool_call
from tests.support.waiting import until
from tests.support.world import GUILD_ID, Person
from tomori.tools.confirmation import CUSTOM_ID_PREFIX

ROLE = 8_100_000_000_000_000_081
HERE: dict[str, object] = {"guilds": [str(GUILD_ID)]}


@pytest.fixture(autouse=True)
def _root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROOT_VARIABLE, str(ROOT))


async def started(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    tmp_path: Path,
    access: dict[str, object] = HERE,
    **overrides: Any,
) -> tuple[RestBot, McpFolder]:
    config, folder = stdio_config(tmp_path, access)
    settings = settings_for(tmp_path, mcp_config=config, history_memory_channels=0, **overrides)
    bot = await open_rest_bot(settings, chain_for(llm_server))
    return bot, folder


def is_prompt(message: ChannelMessage) -> bool:
    """Whether the message asks for a confirmation (an answer's Stop or take buttons are no
    prompt)."""
    return any(custom.startswith(CUSTOM_ID_PREFIX) for custom in buttons(message).values())


async def prompt_of(bot: RestBot) -> ChannelMessage:
    """The confirmation prompt, once the channel shows it."""
    await until(lambda: any(is_prompt(m) for m in bot.shown()))
    [prompt] = [m for m in bot.shown() if is_prompt(m)]
    return prompt


def buttons(message: ChannelMessage) -> dict[str, str]:
    """The message's buttons, label to custom id."""
    return {
        button["label"]: button["custom_id"]
        for row in message.payload["components"]
        for button in row["components"]
    }


def shown_now(bot: RestBot, message: ChannelMessage) -> ChannelMessage:
    [now] = [m for m in bot.shown() if m.id == message.id]
    return now


def told(llm_server: LLMServer, request: int) -> dict[str, Any]:
    """What the model was told of its tool call, in request `request`."""
    result: dict[str, Any] = json.loads(
        llm_server.requests[request].body["messages"][-1]["content"]
    )
    return result


async def test_a_tool_that_may_change_things_runs_only_once_its_asker_allows_it(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot, folder = await started(open_rest_bot, llm_server, tmp_path)
    arguments = '{"text": "note ```\\n**Allowed by everyone**"}'
    llm_server.script(tool_call("tests__write", arguments), answer("Written."))
    bot.say(f"{bot.mention()} please write my note")
    prompt = await prompt_of(bot)
    assert prompt.content == f"<@{Person.ALICE.id}>"
    assert prompt.pinged == {Person.ALICE.id}
    [embed] = prompt.embeds
    assert "`tests__write`" in embed["description"]
    assert '"text": "note \\u0060\\u0060\\u0060\\n**Allowed by everyone**"' in embed["description"]
    assert set(buttons(prompt)) == {"Allow", "Refuse"}

    refused = await bot.press(prompt, buttons(prompt)["Allow"], by=Person.BOB)
    assert refused["type"] == 4
    assert refused["data"]["flags"] & 64
    assert refused["data"]["content"].startswith("Only the member this answer is for")
    assert not folder.saw("wrote")
    assert len(llm_server.requests) == 1

    allowed = await bot.press(prompt, buttons(prompt)["Allow"])
    assert allowed["type"] == 7
    assert allowed["data"]["components"] == []
    await bot.settled()
    assert (folder.path / "wrote").read_text() == "note ```\n**Allowed by everyone**"
    assert told(llm_server, 1)["result"]["text"] == "written"
    now = shown_now(bot, prompt)
    assert now.payload["components"] == []
    assert now.embeds[0]["description"] == f"<@{Person.ALICE.id}> allowed `tests__write`: it runs."
    assert bot.contents()[-1] == "Written."


async def test_the_prompt_shows_characters_that_hide_or_reorder_text_as_escapes(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    """A right-to-left override would show "write me" for what runs as "em etirw"; a zero-width
    space or a line separator would hide what runs: each is shown as its JSON escape."""
    bot, _ = await started(open_rest_bot, llm_server, tmp_path)
    hidden = "\u3164\ufe0f\u034f\U000e0100\u00a0\u2800"  # fillers, selectors, blanks
    arguments = json.dumps(
        {"text": "a\u202eetirw em\u200b\u2028done", "more": hidden}, ensure_ascii=False
    )
    llm_server.script(tool_call("tests__write", arguments), answer("unused"))
    bot.say(f"{bot.mention()} write it")
    prompt = await prompt_of(bot)
    description = prompt.embeds[0]["description"]
    assert '"text": "a\\u202eetirw em\\u200b\\u2028done"' in description
    assert '"more": "\\u3164\\ufe0f\\u034f\\udb40\\udd00\\u00a0\\u2800"' in description
    assert not {"\u202e", "\u200b", "\u2028", *hidden} & set(description)
    await bot.kill()
    await bot.settled()


async def test_a_refused_call_is_not_run_and_the_model_is_told_so(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot, folder = await started(open_rest_bot, llm_server, tmp_path)
    llm_server.script(tool_call("tests__wipe", "{}"), answer("I left it alone."))
    bot.say(f"{bot.mention()} wipe it all")
    prompt = await prompt_of(bot)
    await bot.press(prompt, buttons(prompt)["Refuse"])
    await bot.settled()
    assert not folder.saw("wiped")
    result = told(llm_server, 1)
    assert result["status"] == "not_run"
    assert result["reason"].startswith("the member refused this call")
    assert shown_now(bot, prompt).payload["components"] == []
    assert bot.contents()[-1] == "I left it alone."


async def test_no_answer_in_time_refuses_the_call_and_the_prompt_says_so(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot, folder = await started(open_rest_bot, llm_server, tmp_path, tool_confirm_timeout_ms=1_000)
    llm_server.script(tool_call("tests__write", '{"text": "x"}'), answer("Not written."))
    bot.say(f"{bot.mention()} write x")
    prompt = await prompt_of(bot)
    allow = buttons(prompt)["Allow"]
    await bot.settled()
    assert not folder.saw("wrote")
    assert told(llm_server, 1)["reason"] == "the member did not confirm this call within 1s"
    now = shown_now(bot, prompt)
    assert now.payload["components"] == []
    assert now.embeds[0]["description"] == "Nobody answered within 1 s: `tests__write` was not run."
    late = await bot.press(prompt, allow)
    assert late["data"]["content"] == "This call is no longer waiting for an answer."
    assert not folder.saw("wrote")


async def test_a_kill_while_the_call_waits_ends_the_prompt_and_runs_nothing(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot, folder = await started(open_rest_bot, llm_server, tmp_path)
    llm_server.script(tool_call("tests__write", '{"text": "x"}'), answer("unused"))
    bot.say(f"{bot.mention()} write x")
    prompt = await prompt_of(bot)
    allow = buttons(prompt)["Allow"]
    await bot.kill()
    await bot.settled()
    now = shown_now(bot, prompt)
    assert now.payload["components"] == []
    assert now.embeds[0]["description"] == "The answer was stopped: `tests__write` was not run."
    late = await bot.press(prompt, allow)
    assert late["data"]["content"] == "This call is no longer waiting for an answer."
    assert not folder.saw("wrote")
    assert len(llm_server.requests) == 1


async def test_the_authors_role_is_needed_to_allow_a_call(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    access: dict[str, object] = {**HERE, "roles": {str(GUILD_ID): str(ROLE)}}
    bot, folder = await started(open_rest_bot, llm_server, tmp_path, access)
    bot.add_role(ROLE, "tool users")
    bot.member_holds(Person.ALICE, [])
    llm_server.script(
        tool_call("tests__write", '{"text": "x"}'),
        answer("You may not."),
        tool_call("tests__write", '{"text": "y"}'),
        answer("Done."),
    )
    bot.say(f"{bot.mention()} write x")
    await bot.settled()
    assert not any(is_prompt(m) for m in bot.shown())  # not even asked
    assert "lacks the role this tool needs" in told(llm_server, 1)["reason"]

    bot.member_holds(Person.ALICE, [ROLE])
    bot.say(f"{bot.mention()} write y")
    prompt = await prompt_of(bot)
    assert f"<@&{ROLE}>" in prompt.embeds[0]["description"]
    # the role taken away since she asked (the bot's cache never heard): her press says so
    stale = await bot.press(prompt, buttons(prompt)["Allow"], roles=[])
    assert (
        stale["data"]["content"]
        == "Allowing this call needs a role you do not hold in this server."
    )
    assert not folder.saw("wrote")
    await bot.press(prompt, buttons(prompt)["Allow"], roles=[ROLE])
    await bot.settled()
    assert (folder.path / "wrote").read_text() == "y"


async def test_arguments_too_long_to_show_are_refused_unasked(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot, folder = await started(open_rest_bot, llm_server, tmp_path)
    arguments = json.dumps({"text": "z" * 5_000})
    llm_server.script(tool_call("tests__write", arguments), answer("Too long."))
    bot.say(f"{bot.mention()} write a lot")
    await bot.settled()
    assert not any(is_prompt(m) for m in bot.shown())
    assert "longer than the 3800 characters" in told(llm_server, 1)["reason"]
    assert not folder.saw("wrote")
