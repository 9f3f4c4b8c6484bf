"""TOMORI_MCP_CONFIG: the ecosystem's file pasted in as it is; a bad one refused naming the
server and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tomori.config.mcp_servers import McpServerConfig, load_servers
from tomori.config.parsers import ConfigError
from tomori.config.settings import Settings
from tomori.tools.mcp import mcp_tools_for


def written(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


def test_a_readme_snippet_of_each_transport_reads_with_its_secrets_from_the_environment(
    tmp_path: Path,
) -> None:
    path = written(
        tmp_path,
        {
            "mcpServers": {
                "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]},
                "search": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-brave-search"],
                    "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"},
                },
                "wiki": {
                    "type": "http",
                    "url": "https://wiki.example/mcp",
                    "headers": {"Authorization": "Bearer ${WIKI_TOKEN}"},
                },
                "old": {"command": "old-server", "disabled": True},
            }
        },
    )
    environ = {"BRAVE_API_KEY": "brave-secret", "WIKI_TOKEN": "t0k"}
    assert load_servers(path, environ) == (
        McpServerConfig("fetch", command="uvx", args=("mcp-server-fetch",)),
        McpServerConfig(
            "search",
            command="npx",
            args=("-y", "@modelcontextprotocol/server-brave-search"),
            env={"BRAVE_API_KEY": "brave-secret"},
            filled=frozenset({"brave-secret"}),  # each value a ${VAR} was filled with
        ),
        McpServerConfig(
            "wiki",
            url="https://wiki.example/mcp",
            headers={"Authorization": "Bearer t0k"},
            filled=frozenset({"t0k"}),
        ),
    )


def test_a_servers_tools_are_offered_where_its_entry_says_and_nowhere_by_default(
    tmp_path: Path,
) -> None:
    document = {
        "mcpServers": {
            "quiet": {"command": "x"},
            "listed": {"command": "x", "tomori": {"guilds": ["123"], "tools": ["read"]}},
            "open": {"command": "x", "tomori": {"guilds": ["*"], "dms": True}},
        }
    }
    quiet, listed, everywhere = (s.access for s in load_servers(written(tmp_path, document), {}))
    assert [quiet.admits(where) for where in ("123", "456", None)] == [False, False, False]
    assert [listed.admits(where) for where in ("123", "456", None)] == [True, False, False]
    assert [everywhere.admits(where) for where in ("123", "456", None)] == [True, True, True]
    assert listed.tools == frozenset({"read"})
    assert quiet.described() == "no server, not in direct messages"


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ("{not json", "not JSON"),
        ({"servers": {}}, '"mcpServers"'),
        ({"mcpServers": {"a": "npx"}}, "server 'a': it must be an object"),
        ({"mcpServers": {"a": {}}}, "server 'a': give either command"),
        ({"mcpServers": {"a": {"command": "x", "url": "http://y"}}}, "server 'a': give either"),
        ({"mcpServers": {"a": {"command": ""}}}, "server 'a': field 'command' must be a non-empty"),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "server 'a': field 'args' must"),
        ({"mcpServers": {"a": {"command": "x", "args": [1]}}}, "field 'args[0]' must be"),
        ({"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE}"}}}}, "'env.K' names ${NOPE}"),
        ({"mcpServers": {"a": {"command": "x", "headers": {}}}}, "field 'headers' is for url"),
        ({"mcpServers": {"a": {"url": "ftp://x"}}}, "field 'url' must start with http"),
        ({"mcpServers": {"a": {"url": "http://x", "env": {}}}}, "field 'env' is for command"),
        ({"mcpServers": {"a": {"command": "x", "cmd": "y"}}}, "field 'cmd' is not known"),
        ({"mcpServers": {"a": {"command": "x", "tomori": []}}}, "field 'tomori' must be an"),
        ({"mcpServers": {"a": {"command": "x", "tomori": {"guild": []}}}}, "'tomori.guild' is"),
        ({"mcpServers": {"a": {"command": "x", "tomori": {"guilds": "*"}}}}, "a list of names"),
        ({"mcpServers": {"a": {"command": "x", "tomori": {"dms": "yes"}}}}, "true or false"),
    ],
)
def test_a_bad_file_is_refused_naming_the_server_and_the_field(
    tmp_path: Path, document: Any, said: str
) -> None:
    path = written(tmp_path, document)
    with pytest.raises(ConfigError) as refused:
        load_servers(path, {})
    assert str(refused.value).startswith(f"TOMORI_MCP_CONFIG ({path}): ")
    assert said in str(refused.value)


def test_the_variable_must_name_a_file_and_a_file_with_no_server_runs_none(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"TOMORI_MCP_CONFIG": "missing.json"})
    assert str(refused.value) == "TOMORI_MCP_CONFIG='missing.json' is not allowed: no such file"
    empty = written(tmp_path, {"mcpServers": {}})
    settings = Settings.from_env({"TOMORI_MCP_CONFIG": str(empty)})
    assert mcp_tools_for(settings, {}) is None
    assert mcp_tools_for(Settings(), {}) is None
