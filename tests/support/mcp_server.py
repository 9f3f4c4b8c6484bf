"""An MCP server written with the SDK, for the tests: `python -m tests.support.mcp_server
stdio DIR` or `... http DIR PORT`. DIR is where it leaves what a test asks of it: a file
`cancelled` when a call of `hang` was cancelled by the client, `started` lines, one per start.

Its tools, each marked read-only but two: `echo` (says its text back), `hang` (never answers),
`crash_once` (the first call ends the process, later ones answer), `picture` (a PNG), `grow`
(adds the tool `extra` and says the list changed), `big` (a result of `size` characters); and
`write` (not marked: it may change things) and `wipe` (marked destructive), which leave a file
`wrote` or `wiped` if they ever run. It says on stderr that it serves, and each text `echo`
says back, as servers write their logs there."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types import ToolAnnotations

PICTURE = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
"""A 1x1 PNG."""
READ_ONLY = ToolAnnotations(read_only_hint=True)


def build(folder: Path) -> MCPServer:
    server = MCPServer("tomori-test")

    @server.tool(description="Say the text back", annotations=READ_ONLY)
    async def echo(text: str) -> str:
        print(f"tomori-test: echo {text}", file=sys.stderr, flush=True)  # as servers log
        return f"echo: {text}"

    @server.tool(description="Never answer", annotations=READ_ONLY)
    async def hang() -> str:
        (folder / "hanging").write_text("hanging")
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            (folder / "cancelled").write_text("cancelled")
            raise
        return "never"

    @server.tool(description="Crash the server the first time", annotations=READ_ONLY)
    async def crash_once() -> str:
        marker = folder / "crashed"
        if not marker.exists():
            marker.write_text("crashed")
            os._exit(3)
        return "recovered"

    @server.tool(description="A picture", annotations=READ_ONLY)
    async def picture() -> Image:
        return Image(data=PICTURE, format="png")

    @server.tool(
        description="Add the tool `extra`, and say the tools changed", annotations=READ_ONLY
    )
    async def grow(ctx: Context) -> str:
        async def extra() -> str:
            return "extra"

        server.add_tool(extra, description="Added by grow", annotations=READ_ONLY)
        await ctx.session.send_tool_list_changed()
        return "grown"

    @server.tool(description="A long answer", annotations=READ_ONLY)
    async def big(size: int) -> str:
        return "x" * size

    @server.tool(description="Write a file")
    async def write(text: str) -> str:
        (folder / "wrote").write_text(text)
        return "written"

    @server.tool(
        description="Wipe everything",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    async def wipe() -> str:
        (folder / "wiped").write_text("wiped")
        return "wiped"

    return server


def main() -> None:
    transport, folder = sys.argv[1], Path(sys.argv[2])
    with (folder / "started").open("a") as started:
        started.write(f"{os.getpid()}\n")
    server = build(folder)
    print(f"tomori-test: serving on {transport}", file=sys.stderr, flush=True)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]))


if __name__ == "__main__":
    main()
