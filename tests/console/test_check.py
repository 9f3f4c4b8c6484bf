"""`python bot.py --check`: every model asked for a tiny answer, one line each, exit code 0 or 1."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.command import OTHER_LIBRARY, command_without
from tests.support.console_process import SECRET_KEY, bot_environment, finished, start_bot
from tests.support.llm_server import LLMServer, Reply, SeenRequest, drop, sse
from tests.support.mcp_servers import (
    DYING_CODE,
    DYING_WORDS,
    ROOT,
    ROOT_VARIABLE,
    exits_at_once,
    stdio_config,
)
from tests.support.openai_wire import chunk
from tests.support.scripts import answer, silent
from tomori.config.settings import DatabaseUrl

pytestmark = pytest.mark.slow  # bot.py --check run as a process

GEMINI_SECRET = "gemini-SECRET-abcdef0123456789"


def closed_port() -> int:
    """A port nothing listens on: a connection to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def by_model(request: SeenRequest) -> Reply:
    """Each model of the chain fails its own way, whatever order the probes come in."""
    model = request.body["model"]
    if model == "missing":
        return Reply(404, json_body={"error": {"message": "The model `missing` does not exist"}})
    if model == "locked":
        message = f"Incorrect API key provided: {SECRET_KEY}"  # as OpenAI echoes a bad key
        return Reply(401, json_body={"error": {"message": message}})
    if model == "no-tools":
        return Reply(400, json_body={"error": {"message": "this model does not support tools"}})
    if model == "stuck":
        return silent()
    return answer("ready")


async def test_a_working_model_answers_and_the_check_passes(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("ready"))
    env = bot_environment(llm_server, tmp_path, TOMORI_TEMPERATURE="0.5")
    process = await start_bot("--check", env=env)
    out, err = await finished(process)
    assert process.returncode == 0, out + err
    lines = out.splitlines()
    assert lines[0] == "ok      settings (1 model: openai:test-model)"
    assert lines[1] == f"ok      database: SQLite at {tmp_path / 'tomori.db'}, opened and migrated"
    assert lines[2] == (
        "ok      ceilings: models a server may choose: openai:test-model; no cooldown; "
        "no member limit; no server budget; 3 messages waiting per member and channel; "
        "/kill: requester"
    )
    assert lines[3].startswith("ok      openai:test-model: first token ")
    assert lines[3].endswith(" s")
    assert lines[4] == (  # a server of OPENAI_BASE_URL: a local model's context, by default
        "        context: 4096 tokens (the default for a server of OPENAI_BASE_URL), 1024 of "
        "them kept for the answer"
    )
    assert lines[5] == (  # what a turn is shown beyond its messages, and its bounds
        "ok      summaries: on, written by openai:test-model (the chain's first model) in at "
        "most 300 tokens (its note at most 1/8 of each model's room), kept 365 days after last "
        "written"
    )
    assert lines[6] == (
        "ok      memories: on, at most 10 shown a turn (its note at most 1/8 of each model's "
        "room), 100 kept per scope, 300 characters each, kept 365 days after saved"
    )
    assert lines[7] == "skipped discord: DISCORD_TOKEN is not set"
    assert (tmp_path / "tomori.db").exists()
    sent = llm_server.requests[0].body
    assert sent["stream"] is True
    assert sent["temperature"] == 0.5  # asked as a channel's turn asks it
    offered = [tool["function"]["name"] for tool in sent["tools"]]
    assert offered == ["current_time", "read_message", "remember", "forget"]  # as a turn offers


async def test_the_check_says_each_models_context_budget_in_force(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("ready"), answer("ready"))
    env = bot_environment(
        llm_server,
        tmp_path,
        TOMORI_MODELS="openai:small+context=2k, openai:big",
        TOMORI_CONTEXT_TOKENS="16000",
        TOMORI_MAX_OUTPUT_TOKENS="500",
    )
    process = await start_bot("--check", env=env)
    out, err = await finished(process)
    assert process.returncode == 0, out + err
    contexts = [line.strip() for line in out.splitlines() if "context:" in line]
    assert contexts == [
        "context: 2048 tokens (its +context), 500 of them kept for the answer",
        "context: 16000 tokens (TOMORI_CONTEXT_TOKENS), 500 of them kept for the answer",
    ]


async def test_the_check_says_the_summaries_and_memories_in_force_and_a_summary_model_unserved(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("ready"))
    env = bot_environment(
        llm_server,
        tmp_path,
        TOMORI_SUMMARY_MODEL="gemini:gemini-2.0-flash",  # no provider of the chain serves it
        TOMORI_MEMORIES="0",
    )
    process = await start_bot("--check", env=env)
    out, err = await finished(process)
    assert process.returncode == 0, out + err  # a warning: the check still passes
    lines = out.splitlines()
    assert (
        "warning summaries: on, written by openai:test-model (the chain's first model: no "
        "provider of the chain serves TOMORI_SUMMARY_MODEL) in at most 300 tokens"
    ) in out
    assert "ok      memories: off (TOMORI_MEMORIES=0)" in lines


async def test_the_check_prints_the_authors_ceilings_in_force(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("ready"))
    env = bot_environment(
        llm_server,
        tmp_path,
        TOMORI_ALLOWED_MODELS="openai:gpt-4o-*+vision, gemini:*",
        TOMORI_USER_COOLDOWN_MS="5000",
        TOMORI_USER_DAILY_TOKENS="20000",
        TOMORI_SERVER_DAILY_TOKENS="500000",
        TOMORI_QUEUE_PER_MEMBER="2",
        TOMORI_KILL_POLICY="anyone",
    )
    process = await start_bot("--check", env=env)
    out, err = await finished(process)
    assert process.returncode == 0, out + err
    assert out.splitlines()[2] == (
        "ok      ceilings: models a server may choose: openai:gpt-4o-*+vision, gemini:*; "
        "cooldown per member 5 s at least; 20000 tokens a day per member at most; "
        "500000 tokens a day per server; 2 messages waiting per member and channel; "
        "/kill: anyone"
    )


async def test_each_dead_model_says_why_and_the_check_fails_without_a_secret(
    tmp_path: Path,
) -> None:
    server = LLMServer(default=by_model)
    await server.start()
    try:
        env = bot_environment(
            server,
            tmp_path,
            TOMORI_MODELS=(
                "openai:good,openai:missing,openai:locked,openai:no-tools,openai:stuck,gemini:g"
            ),
            GEMINI_API_KEY=GEMINI_SECRET,
            GEMINI_BASE_URL=f"http://127.0.0.1:{closed_port()}",
        )
        process = await start_bot("--check", env=env)
        out, err = await finished(process)
    finally:
        await server.close()
    assert process.returncode == 1, out + err
    assert out.splitlines()[3].startswith("ok      openai:good: first token ")
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert failed[0] == (
        "FAILED  openai:missing: model not found: 'missing' (TOMORI_MODELS): "
        "the provider said: The model `missing` does not exist"
    )
    assert failed[1] == (
        "FAILED  openai:locked: 401: the provider refused the key (OPENAI_API_KEY): "
        "the provider said: Incorrect API key provided: ***"
    )
    assert failed[2] == (
        "FAILED  openai:no-tools: tools refused: the model takes no tools, and a turn offers it "
        "4 tools (current_time, read_message, remember, forget), so every turn would fail on it: "
        "offer none "
        "(TOMORI_TOOLS names the built-in ones, the entries of TOMORI_MCP_CONFIG the MCP "
        "servers'), or choose a model that takes them: the provider said: this model does not "
        "support tools"
    )
    assert failed[3] == (
        "FAILED  openai:stuck: timed out before the first token (waited 1 s: "
        "STREAM_FIRST_TOKEN_TIMEOUT_MS)"
    )
    assert failed[4].startswith("FAILED  gemini:g: connection refused: nothing listens at ")
    assert failed[4].endswith("(GEMINI_BASE_URL)")
    assert len(failed) == 5
    for secret in (SECRET_KEY, GEMINI_SECRET):
        assert secret not in out + err


async def test_a_server_whose_streams_end_unfinished_fails_the_check_saying_so(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """A proxy that closes every stream politely: the answer comes, but never its finish
    reason or [DONE], so every answer in a channel would be taken as cut off."""
    llm_server.script(Reply(body=[sse(chunk("ready"))]))
    process = await start_bot("--check", env=bot_environment(llm_server, tmp_path))
    out, err = await finished(process)
    assert process.returncode == 1, out + err
    [failed] = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert failed == (
        "FAILED  openai:test-model: its stream ended with no finish reason and no [DONE] after "
        "5 characters: a proxy between may be cutting its streams short, and every answer "
        "would be taken as cut off"
    )


def dies_its_own_way(request: SeenRequest) -> Reply:
    """A stream cut mid-answer, a stall, and a Gemini endpoint behind a wrong address."""
    if "model" not in request.body:  # Gemini names the model in the path
        return Reply(404, json_body={"error": {"code": 404, "message": "Not Found"}})
    if request.body["model"] == "cut":
        return Reply(body=[sse(chunk("Hel")), drop()])
    if request.body["model"] == "closed":
        return Reply(body=[drop()])
    return silent()


async def test_the_check_says_what_failed_as_it_failed_and_nothing_but_its_report(
    tmp_path: Path,
) -> None:
    server = LLMServer(default=dies_its_own_way)
    await server.start()
    try:
        env = bot_environment(
            server,
            tmp_path,
            TOMORI_MODELS="openai:cut,openai:closed,openai:stuck,gemini:g",
            GEMINI_API_KEY=GEMINI_SECRET,
            GEMINI_BASE_URL=f"{server.base_url}/v1",
            STREAM_FIRST_TOKEN_TIMEOUT_MS="100",
            STREAM_SDK_CALL_TIMEOUT_MS="1000",
        )
        process = await start_bot("--check", env=env)
        out, err = await finished(process)
    finally:
        await server.close()
    assert process.returncode == 1, out + err
    lines = out.splitlines()
    assert lines[1] == (
        "warning STREAM_FIRST_TOKEN_TIMEOUT_MS=100 is below STREAM_SDK_CALL_TIMEOUT_MS=1000: "
        "the first token is waited for 1 s, the idle budget"
    )
    failed = [line for line in lines if line.startswith("FAILED")]
    assert failed[0].startswith(
        "FAILED  openai:cut: the connection dropped after it began answering (3 characters in): "
    )
    assert failed[1].startswith(
        f"FAILED  openai:closed: the connection to {server.base_url}/v1 closed before any answer: "
    )
    assert failed[2] == (
        "FAILED  openai:stuck: timed out before the first token (waited 1 s: "
        "STREAM_SDK_CALL_TIMEOUT_MS, since STREAM_FIRST_TOKEN_TIMEOUT_MS=100 is below it and "
        "never waits less)"
    )
    assert failed[3].startswith(f"FAILED  gemini:g: 404: nothing found at {server.base_url}/v1 ")
    assert "GEMINI_BASE_URL (the endpoint's root, without /v1 or /v1beta" in failed[3]
    assert "OpenAI" not in failed[3]
    assert err == ""  # no log line beside the report


async def test_a_misspelled_variable_fails_the_check_naming_the_one_meant(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("ready"))
    env = bot_environment(
        llm_server,
        tmp_path,
        TOMORI_MODEL="openai:other",
        TOMORI_HISTORY_LIMT="5",
        TOMORI_SOMETHING="1",
        DISCORD_SHARDS_IDS="0",
        DISCORD_GUILD_ID="1",  # the bot's own, and another library's: not ours to question
        OPENAI_ORG_ID="org",
    )
    process = await start_bot("--check", env=env)
    out, err = await finished(process)
    assert process.returncode == 1, out + err
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert failed == [
        "FAILED  DISCORD_SHARDS_IDS is set, but tomori-cog reads no such variable: did you mean "
        "DISCORD_SHARD_IDS?",
        "FAILED  TOMORI_HISTORY_LIMT is set, but tomori-cog reads no such variable: did you mean "
        "TOMORI_HISTORY_LIMIT?",
        "FAILED  TOMORI_MODEL is set, but tomori-cog reads no such variable: did you mean "
        "TOMORI_MODELS?",
        "FAILED  TOMORI_SOMETHING is set, but tomori-cog reads no such variable (tomori --help "
        "lists them)",
    ]
    assert "ok      openai:test-model: first token " in out


async def test_shards_on_sqlite_are_a_warning_and_postgresql_is_named_by_its_host(
    llm_server: LLMServer, tmp_path: Path, pg_url: str
) -> None:
    llm_server.script(answer("ready"), answer("ready"))
    shards = {"DISCORD_SHARD_COUNT": "2", "DISCORD_SHARD_IDS": "1"}
    on_sqlite = await start_bot(
        "--check", env=bot_environment(llm_server, tmp_path, TOMORI_DB_URL="", **shards)
    )
    out, err = await finished(on_sqlite)
    assert on_sqlite.returncode == 0, out + err
    assert out.splitlines()[1] == (
        f"warning DISCORD_SHARD_IDS runs some of the bot's shards here on SQLite "
        f"({tmp_path / 'tomori.db'}): the processes running the others share the channels' "
        f"locks only if they run on this machine with the same TOMORI_DB_PATH; on several "
        f"machines set TOMORI_DB_URL to one PostgreSQL"
    )
    url = DatabaseUrl.parse(pg_url)
    on_postgres = await start_bot(
        "--check", env=bot_environment(llm_server, tmp_path, TOMORI_DB_URL=pg_url, **shards)
    )
    out, err = await finished(on_postgres)
    assert on_postgres.returncode == 0, out + err
    assert out.splitlines()[1] == (
        f"ok      database: PostgreSQL at {url.host}:{url.port}/{url.database} (TOMORI_DB_URL), "
        f"opened and migrated"
    )


async def test_the_tls_variables_the_driver_reads_are_checked_and_named_like_the_address(
    llm_server: LLMServer, tmp_path: Path, pg_url: str
) -> None:
    """PGSSLMODE and PGSSLROOTCERT rule the TLS of an address without ?sslmode=: a bad one is
    refused before connecting, and a TLS the server does not offer names the variable too."""
    url = DatabaseUrl.parse(pg_url)
    bogus = await start_bot(
        "--check", env=bot_environment(llm_server, tmp_path, TOMORI_DB_URL=pg_url, PGSSLMODE="on")
    )
    out, err = await finished(bogus)
    assert bogus.returncode == 2, out + err
    assert out.splitlines()[-1] == (
        f"FAILED  database: the database {url} cannot be used: PGSSLMODE='on' is not allowed: "
        f"it must be one of allow, disable, prefer, require, verify-ca, verify-full"
    )
    missing = tmp_path / "ca.pem"
    no_file = await start_bot(
        "--check",
        env=bot_environment(llm_server, tmp_path, TOMORI_DB_URL=pg_url, PGSSLROOTCERT=str(missing)),
    )
    out, err = await finished(no_file)
    assert no_file.returncode == 2, out + err
    assert out.splitlines()[-1].endswith(
        f"PGSSLROOTCERT={str(missing)!r} is not allowed: it names no file"
    )
    no_tls = await start_bot(
        "--check",
        env=bot_environment(llm_server, tmp_path, TOMORI_DB_URL=pg_url, PGSSLMODE="require"),
    )
    out, err = await finished(no_tls)
    assert no_tls.returncode == 2, out + err
    assert "check TOMORI_DB_URL (and PGSSLMODE='require', read too)" in out.splitlines()[-1]
    assert llm_server.requests == []


async def test_a_chain_set_under_a_misspelled_name_is_pointed_at(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    env = bot_environment(llm_server, tmp_path, TOMORI_MODEL="openai:test-model")
    del env["TOMORI_MODELS"]
    process = await start_bot("--check", env=env)
    _, err = await finished(process)
    assert process.returncode == 2
    assert err.splitlines() == [
        "error: TOMORI_MODELS is not set: list the models to use as provider:model, primary "
        "first, comma separated (for example openai:gpt-4o-mini,gemini:gemini-2.5-flash)",
        "note: TOMORI_MODEL is set, but tomori-cog reads no such variable: did you mean "
        "TOMORI_MODELS?",
    ]


async def test_a_bad_setting_stops_the_check_naming_it(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    env = bot_environment(llm_server, tmp_path, STREAM_SDK_CALL_TIMEOUT_MS="soon")
    process = await start_bot("--check", env=env)
    _, err = await finished(process)
    assert process.returncode == 2
    assert err.startswith("error: STREAM_SDK_CALL_TIMEOUT_MS='soon' is not allowed")
    assert err.count("\n") == 1
    assert llm_server.requests == []


QUICK_DISCORD_CHECK = """
import tomori_cog.discord_check
tomori_cog.discord_check.DISCORD_CHECK_WITHIN_S = 1.0
"""
"""The check's bound on Discord's answers, shortened for the test's Discord that never answers."""


def fake_discord(
    application_flags: int, token_status: int = 200, *, answers: bool = True
) -> LLMServer:
    """Discord's REST API as the check reads it: the bot's user and its application; one that
    never `answers` accepts each request and sends nothing."""

    def reply(request: SeenRequest) -> Reply:
        if not answers:
            return Reply(header_delay=60)
        if request.path.endswith("/users/@me"):
            if token_status != 200:
                return Reply(token_status, json_body={"message": "401: Unauthorized", "code": 0})
            user = {"id": "1001", "username": "tomori", "discriminator": "0", "avatar": None}
            return Reply(json_body=user)
        if request.path.endswith("/oauth2/applications/@me"):
            application = {
                "id": "4242",
                "name": "tomori",
                "description": "",
                "icon": None,
                "bot_public": True,
                "bot_require_code_grant": False,
                "verify_key": "k",
                "flags": application_flags,
                "owner": {"id": "7", "username": "author", "discriminator": "0", "avatar": None},
            }
            return Reply(json_body=application)
        return Reply(404, json_body={"message": "Unknown", "code": 0})

    return LLMServer(default=reply)


async def check_on_fake_discord(
    llm_server: LLMServer,
    tmp_path: Path,
    discord: LLMServer,
    token: str,
    library: str = "nextcord",
) -> tuple[int | None, str, str, list[SeenRequest]]:
    """`tomori --check` with DISCORD_API_URL at the test's Discord, on an install that has
    `library` alone."""
    llm_server.script(answer("ready"))
    await discord.start()
    try:
        process = await asyncio.create_subprocess_exec(
            *command_without(OTHER_LIBRARY[library], QUICK_DISCORD_CHECK),
            "--check",
            env=bot_environment(
                llm_server,
                tmp_path,
                DISCORD_TOKEN=token,
                DISCORD_API_URL=f"{discord.base_url}/api/v10",
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await finished(process)
    finally:
        await discord.close()
    return process.returncode, out, err, discord.requests


async def test_with_a_token_it_logs_in_reads_the_intent_and_prints_the_invite(
    llm_server: LLMServer, tmp_path: Path, library: str
) -> None:
    """On either library, whichever the install has: the login needs no nextcord."""
    token = "discord-TOKEN-SECRET.0123456789"
    code, out, err, requests = await check_on_fake_discord(
        llm_server, tmp_path, fake_discord(application_flags=1 << 19), token, library
    )
    assert code == 0, out + err
    assert out.splitlines()[-3:] == [
        "ok      discord: logged in as tomori",
        "ok      discord: the Message Content intent is granted",
        "invite  https://discord.com/oauth2/authorize?client_id=4242&permissions=275414862848"
        "&scope=bot+applications.commands",
    ]
    assert requests[0].headers["authorization"] == f"Bot {token}"
    assert token not in out + err


async def test_a_missing_message_content_intent_fails_the_check(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    code, out, _, _ = await check_on_fake_discord(
        llm_server, tmp_path, fake_discord(application_flags=0), "discord-token"
    )
    assert code == 1
    assert "FAILED  discord: the Message Content intent is not granted" in out
    assert "invite  https://discord.com/oauth2/authorize?client_id=4242" in out


async def test_a_refused_token_fails_the_check_in_one_line(
    llm_server: LLMServer, tmp_path: Path, library: str
) -> None:
    token = "discord-TOKEN-SECRET.0123456789"
    code, out, err, _ = await check_on_fake_discord(
        llm_server, tmp_path, fake_discord(application_flags=0, token_status=401), token, library
    )
    assert code == 1
    assert out.splitlines()[-1] == (
        "FAILED  discord: the token was refused (401): check DISCORD_TOKEN"
    )
    assert token not in out + err
    assert "Traceback" not in err


async def test_a_discord_that_does_not_answer_fails_the_check_in_bounded_time(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    started = time.monotonic()
    code, out, err, requests = await check_on_fake_discord(
        llm_server, tmp_path, fake_discord(application_flags=0, answers=False), "discord-token"
    )
    assert code == 1, out + err
    assert out.splitlines()[-1] == "FAILED  discord: no answer within 1 s"
    assert len(requests) == 1
    assert time.monotonic() - started < 15  # the bound, not the 60 s Discord would take


async def test_a_bad_shard_setting_stops_the_check_too(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    env = bot_environment(llm_server, tmp_path, DISCORD_SHARD_IDS="0")
    process = await start_bot("--check", env=env)
    _, err = await finished(process)
    assert process.returncode == 2
    assert err.startswith("error: DISCORD_SHARD_IDS='0' is not allowed")
    assert err.count("\n") == 1


async def test_a_404_naming_no_model_points_at_the_address(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    """The base URL without its /v1: the server's 404 names no model, so the address is blamed."""
    llm_server.script(Reply(404, json_body={"detail": "Not Found"}))
    env = bot_environment(llm_server, tmp_path, STREAM_FIRST_TOKEN_TIMEOUT_MS="20000")
    process = await start_bot("--check", env=env)
    out, err = await finished(process)
    assert err.startswith(  # a long wait is said before it starts
        "asking 1 model at once; one that never answers is waited for up to 20 s"
    )
    assert process.returncode == 1, out + err
    [failed] = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert failed.startswith("FAILED  openai:test-model: 404: nothing found at http://127.0.0.1:")
    assert "check OPENAI_BASE_URL (an OpenAI-compatible server's usually ends in /v1)" in failed


async def test_each_mcp_server_lists_its_tools_or_says_in_one_line_what_failed(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("ready"))
    named = ["echo", "hang", "crash_once", "picture", "grow", "write", "wipe"]  # not big
    roles = {"2000000000000000002": "3000000000000000003"}
    access = {"guilds": ["*"], "dms": True, "tools": named, "confirm": ["echo"], "roles": roles}
    config, _ = stdio_config(tmp_path, access)
    servers = json.loads(config.read_text())
    servers["mcpServers"]["gone"] = {"command": str(tmp_path / "no-such-server")}
    config.write_text(json.dumps(servers))
    env = bot_environment(
        llm_server, tmp_path, TOMORI_MCP_CONFIG=str(config), **{ROOT_VARIABLE: str(ROOT)}
    )
    process = await start_bot("--check", env=env)
    out, err = await finished(process)
    assert process.returncode == 1, out + err
    lines = out.splitlines()
    unmarked = "each call confirmed: its server does not mark it read-only"
    tools = (
        "echo (each call confirmed: its entry names it in confirm), hang, crash_once, "
        f"picture, grow, write ({unmarked}), wipe ({unmarked})"
    )
    where = (
        "every server, and in direct messages; a call is allowed only by a member holding "
        "role 3000000000000000003 in server 2000000000000000002"
    )
    assert f"ok      MCP server tests: 7 tools offered in {where}: {tools}" in lines
    assert "        not offered (its entry leaves them out): big" in lines
    [gone] = [line for line in lines if "MCP server gone" in line]
    assert gone.startswith("FAILED  MCP server gone: FileNotFoundError")
    assert "no-such-server" in gone  # in full: only the author runs --check


def takes_few_tools(request: SeenRequest) -> Reply:
    """A server that takes no tools for one model, and at most three for another."""
    offered = len(request.body.get("tools", []))
    if request.body["model"] == "none" and offered:
        return Reply(400, json_body={"error": {"message": "tools are not supported"}})
    if offered > 3:
        message = f"Invalid 'tools': array too long. Expected at most 3, got {offered}"
        return Reply(400, json_body={"error": {"message": message}})
    return answer("ready")


async def test_each_model_is_asked_with_the_tools_a_turn_offers_mcp_servers_included(
    tmp_path: Path,
) -> None:
    """No built-in tool (TOMORI_TOOLS=), and an MCP server's tools offered: a model that takes
    none, or fewer, would fail every turn, so it fails the check, saying so."""
    config, _ = stdio_config(tmp_path, {"guilds": ["*"], "tools": ["echo", "hang", "big", "grow"]})
    server = LLMServer(default=takes_few_tools)
    await server.start()
    try:
        env = bot_environment(
            server,
            tmp_path,
            TOMORI_MODELS="openai:none,openai:small",
            TOMORI_TOOLS="",
            TOMORI_MCP_CONFIG=str(config),
            **{ROOT_VARIABLE: str(ROOT)},
        )
        process = await start_bot("--check", env=env)
        out, err = await finished(process)
    finally:
        await server.close()
    assert process.returncode == 1, out + err
    names = "tests__echo, tests__hang, tests__grow, tests__big"
    fix = (
        "(TOMORI_TOOLS names the built-in ones, the entries of TOMORI_MCP_CONFIG the MCP "
        "servers'), or choose a model that takes them"
    )
    assert [line for line in out.splitlines() if line.startswith("FAILED")] == [
        f"FAILED  openai:none: tools refused: the model takes no tools, and a turn offers it 4 "
        f"tools ({names}), so every turn would fail on it: offer none {fix}: the provider said: "
        f"tools are not supported",
        f"FAILED  openai:small: tools refused: the model refused the 4 tools a turn offers "
        f"({names}), so every turn would fail on it: offer fewer {fix}: the provider said: "
        f"Invalid 'tools': array too long. Expected at most 3, got 4",
    ]
    sent = {tool["function"]["name"] for tool in server.requests[0].body["tools"]}
    assert sent == {"tests__echo", "tests__hang", "tests__grow", "tests__big"}


async def test_a_bad_mcp_config_stops_the_check_naming_the_server_and_the_field(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"search": {"url": "https://x/${SEARCH_KEY}"}}}))
    env = bot_environment(llm_server, tmp_path, TOMORI_MCP_CONFIG=str(config))
    process = await start_bot("--check", env=env)
    _, err = await finished(process)
    assert process.returncode == 2
    assert "server 'search': field 'url' names ${SEARCH_KEY}, which is not set" in err
    assert err.count("\n") == 1


async def test_an_mcp_server_that_exits_at_once_is_said_once_with_its_code_and_last_words(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    llm_server.script(answer("ready"))
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"dies": exits_at_once(tmp_path / "dies")}}))
    env = bot_environment(llm_server, tmp_path, TOMORI_MCP_CONFIG=str(config))
    process = await start_bot("--check", env=env)
    out, err = await finished(process)
    assert process.returncode == 1, out + err
    lines = out.splitlines()
    at = lines.index(
        f"FAILED  MCP server dies: it exited with code {DYING_CODE} as it started; its last "
        f"lines on stderr:"
    )
    assert lines[at + 1 : at + 3] == [f"        {line}" for line in DYING_WORDS]
    assert out.count(DYING_WORDS[0]) == 1
    assert DYING_WORDS[0] not in err  # the server's stderr is not the check's
