"""What the model calls an MCP tool: within OpenAI's and Gemini's function-name rules, and never
one name for two tools; what it reads of a result: bounded, text kept, the rest named; and
what a failure says: never a secret of the config."""

from __future__ import annotations

import re

import mcp.types as types
from hypothesis import example, given
from hypothesis import strategies as st

from tomori.config.mcp_servers import McpServerConfig
from tomori.providers.base import Image
from tomori.tools.mcp import exposed_name, result_output
from tomori.tools.mcp_server import McpServer

PROVIDERS_ALLOW = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,62}$")
"""OpenAI's `^[a-zA-Z0-9_-]{1,64}$`, and Gemini's first character (a letter or an underscore)
and length (63 in some of its documentation)."""

names = st.text(min_size=1, max_size=150)


@given(names, names, names, names)
@example("fetch", "fetch", "fetch_", "_fetch")  # the separator's own characters
@example("a.b", "c", "a_b", "c")  # a character each changes alike
@example("9lives", "x" * 200, "9lives", "x" * 201)  # a digit first; cut to 63 alike
@example("a__b", "c", "a", "b__c")  # the separator inside a name
@example("a_", "b", "a", "_b")
def test_every_name_is_allowed_by_both_providers_and_names_one_tool(
    server: str, tool: str, other_server: str, other_tool: str
) -> None:
    name = exposed_name(server, tool)
    assert PROVIDERS_ALLOW.match(name), name
    if (server, tool) != (other_server, other_tool):
        assert name != exposed_name(other_server, other_tool)


def test_a_plain_name_is_the_server_and_the_tool() -> None:
    assert exposed_name("brave-search", "brave_web_search") == "brave-search__brave_web_search"


def test_a_result_is_cut_at_its_bound_and_what_is_not_text_is_named() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(text="a" * 30),
            types.ImageContent(data="aGk=", mime_type="image/png"),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(
                    uri="file:///x.bin", blob="aGk=", mime_type="application/zip"
                )
            ),
        ]
    )
    output = result_output(result, 20, image_bytes=1)
    assert output.result == {
        "text": "a" * 20 + "\n[cut: 10 more characters]",
        "not_shown": [
            "an image (image/png) larger than 1 byte",
            "a file (application/zip, file:///x.bin)",
        ],
    }
    assert output.images == ()
    assert result_output(result, 20, image_bytes=2).images == (Image(b"hi", "image/png"),)


def test_structured_content_is_read_when_there_is_no_text() -> None:
    result = types.CallToolResult(content=[], structured_content={"temperature": 21})
    assert result_output(result, 100, 10).result == {"text": '{"temperature": 21}'}


def test_what_a_failure_says_holds_no_secret_of_the_config() -> None:
    url = "https://user:pw@search.example/mcp?key=query-secret"
    config = McpServerConfig("search", url=url, headers={"Authorization": "Bearer header-secret"})
    server = McpServer(config, call_timeout_s=1)
    error = RuntimeError(f"Client error '401 Unauthorized' for url '{url}' (Bearer header-secret)")
    said = server._described(error)
    assert said == (
        "RuntimeError: Client error '401 Unauthorized' for url 'https://search.example/mcp' (…)"
    )
