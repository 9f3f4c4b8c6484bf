"""The bot speaks its reader's language, on both libraries against the Discord-faithful REST
server: an answer to an interaction in the language of whoever ran it (else the server's,
else English), "Why no answer?" and what an admin is told of sources and permissions included,
a notice in a channel in the server's preferred language, and every command registered with
its Japanese description and choice names, under its English name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.cog_settings import chain_for, settings_for
from tests.support.discord_rest import new_snowflake
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import MANAGE_GUILD, OpenRestBot, RestBot
from tests.support.scripts import http_error
from tests.support.waiting import until
from tests.support.world import Person
from tomori.commands import COMMANDS, localized
from tomori.commands.table import WHY, SlashCommand
from tomori.config.settings import DEFAULT_SYSTEM_PROMPT
from tomori.delivery.notices import KILL_NOTHING_TO_STOP, RATE_LIMITED
from tomori.words import catalog

JAPANESE = catalog("ja")
SEND_MESSAGES = 1 << 11
SECRET = "pineapple"
"""A word each member's message holds, which no account may show."""


def embed_of(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply["data"]["flags"] & 64  # ephemeral
    [embed] = reply["data"]["embeds"]
    return embed  # type: ignore[no-any-return]


async def tomori(bot: RestBot, subcommand: str, locale: str, **options: int | bool) -> str:
    """An admin whose Discord is set to `locale` runs `/tomori <subcommand>` with `options`;
    returns the answer's description."""
    given = [
        {"name": name, "type": 5 if isinstance(value, bool) else 4, "value": value}
        for name, value in options.items()
    ]
    data = {
        "id": str(new_snowflake()),
        "name": "tomori",
        "type": 1,
        "options": [{"name": subcommand, "type": 1, "options": given}],
    }
    reply = await bot.command(data, permissions=MANAGE_GUILD, locale=locale)
    return str(embed_of(reply)["description"])


async def test_an_answer_to_a_command_is_in_its_users_language_then_the_servers_then_english(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    nothing = KILL_NOTHING_TO_STOP
    in_japanese = embed_of(await bot.kill(locale="ja"))
    assert in_japanese["title"] == JAPANESE["title.nothing_to_stop"] == "停止するものはありません"
    assert in_japanese["description"] == JAPANESE["notice.kill_nothing_to_stop"]
    in_french = embed_of(await bot.kill(locale="fr"))  # a language the bot does not speak
    assert (in_french["title"], in_french["description"]) == (nothing.title, nothing.description)

    bot.prefers_locale("ja")
    assert embed_of(await bot.kill(locale="fr"))["title"] == "停止するものはありません"
    in_english = embed_of(await bot.kill(locale="en-GB"))  # the user's language comes first
    assert in_english["title"] == "Nothing to Stop"


async def test_a_japanese_members_why_no_answer_is_told_in_japanese_with_no_message_text(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    llm_server.script(http_error(429))
    failed = bot.say(f"{bot.mention()} {SECRET} one")
    unaddressed = bot.say(f"{SECRET}, to no one")
    await bot.settled()

    async def why(message_id: int, locale: str, by: Person = Person.ALICE) -> dict[str, Any]:
        told = embed_of(
            await bot.on_message(WHY.name, bot.payload_of(message_id), by=by, locale=locale)
        )
        for kept_out in (SECRET, "sk-test", DEFAULT_SYSTEM_PROMPT[:30]):
            assert kept_out not in str(told)
        return told

    account = await why(failed, "ja")
    assert account["title"] == "返事がないのはなぜ？"  # noqa: RUF001
    assert account["description"] == (
        "- 受け取り、すぐに回答を始めました。\n"
        "- モデル `openai:test-model`: 429（レート制限）。\n"  # noqa: RUF001
        "- どのモデルも回答しませんでした。\n\n"
        "記録は1日保存されます。メッセージの本文は保存していません。"
    )
    not_for_the_bot = await why(unaddressed, "ja")
    assert not_for_the_bot["description"].startswith(
        "回答していません。ボット宛てではありませんでした。"
    )
    in_english = await why(failed, "en-GB")
    assert in_english["title"] == "Why no answer?"
    assert in_english["description"] == (
        "- Seen, and taken up at once.\n"
        "- Model `openai:test-model`: 429 (rate limited).\n"
        "- No model answered it.\n\n"
        "Kept for a day; no message text is kept."
    )

    bot.prefers_locale("ja")
    refused = await why(failed, "fr", by=Person.BOB)  # French, which the bot does not speak
    assert refused["description"].startswith("このメッセージがどうなったかを見られるのは")
    assert refused["description"] == JAPANESE["why.not_yours"]


async def test_an_admin_is_told_where_limits_came_from_and_what_the_bot_lacks_in_their_language(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    assert await tomori(bot, "limits", "ja", cooldown_ms=60_000) == (
        "このサーバーの制限: クールダウン 60000 ms、1ユーザーあたりの1日のトークン数 オフ"
        "（このサーバー、ボットの設定）"  # noqa: RUF001
    )
    assert await tomori(bot, "limits", "en-US", cooldown_ms=60_000) == (
        "Limits for this server: cooldown 60000 ms, daily tokens per user off"
        " (this server; the bot's settings)"
    )
    bot.deny(SEND_MESSAGES)
    assert await tomori(bot, "autoreply", "ja", enabled=True) == (
        "このチャンネルでは、すべてのメッセージに回答するようになりましたが、ボットはまだここに"
        "投稿できません（「メッセージを送信」権限なし、「埋め込みリンク」権限なし）。"  # noqa: RUF001
    )
    assert await tomori(bot, "autoreply", "en-US", enabled=True) == (
        "This channel now answers every message, but the bot cannot post here yet"
        " (no send_messages permission; no embed_links permission)."
    )


async def test_a_notice_in_a_channel_is_in_the_servers_preferred_language(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    bot.prefers_locale("ja")
    llm_server.script(http_error(429))
    bot.say(f"{bot.mention()} hello")
    await bot.settled()
    await until(lambda: any(m.embeds for m in bot.shown()))
    [notice] = [embed for message in bot.shown() for embed in message.embeds]
    assert notice["title"] == "レート制限中"
    assert notice["description"] == RATE_LIMITED.in_locale("ja").description
    assert "AIプロバイダー" in notice["description"]


def registered_under(command: SlashCommand, payload: dict[str, Any]) -> None:
    """`payload` (a command, group or subcommand as Discord holds it) carries the table's
    English and the Japanese catalog's words for it, its options and their choices."""
    assert payload["name"] == command.path[-1]
    assert not payload.get("name_localizations")  # names stay as declared
    assert payload["description"] == command.description
    wanted = JAPANESE[localized.command_key(command)]
    assert payload["description_localizations"] == {"ja": wanted}, command.name
    below = {c.path[-1]: c for c in COMMANDS if c.path[:-1] == command.path}
    for option in payload.get("options") or []:
        if option["type"] in (1, 2):
            registered_under(below[option["name"]], option)
            continue
        declared = command.option(option["name"])
        key = localized.option_key(command, declared)
        assert option["description_localizations"] == {"ja": JAPANESE[key]}, key
        for choice in option.get("choices") or []:
            name = JAPANESE[localized.choice_key(declared, choice["value"])]
            assert choice["name"] == choice["value"]
            assert choice["name_localizations"] == {"ja": name}


async def test_every_command_is_registered_with_its_japanese_words(
    open_rest_bot: OpenRestBot, llm_server: LLMServer, tmp_path: Path
) -> None:
    bot = await open_rest_bot(settings_for(tmp_path), chain_for(llm_server))
    registered = {command["name"]: command for command in await bot.sync_commands()}
    top = [command for command in COMMANDS if len(command.path) == 1]
    assert set(registered) == {command.name for command in top} | {WHY.name}
    why = registered.pop(WHY.name)  # Apps → its name, said in the reader's language
    assert why["type"] == 3
    assert why["name_localizations"] == {"ja": JAPANESE[localized.menu_key(WHY)]}
    for command in top:
        registered_under(command, registered[command.name])
    scope = registered["tomori"]["options"][0]["options"][1]
    assert [c["name_localizations"] for c in scope["choices"]] == [
        {"ja": "チャンネル"},
        {"ja": "サーバー"},
    ]
