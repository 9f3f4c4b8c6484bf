"""Tools a model may call: what one is, where they come from, and which a channel is offered.

- `registry.py`   `Tool`, `ToolOutput`, `ToolFailure`, `ToolRegistry`, the built-in `current_time`
- `mcp.py`        `McpTools`: the MCP servers' tools as the model sees them, results bounded
- `mcp_server.py` `McpServer`: one server's connection owned by a task, restarted after backoff
- `log_redaction.py` secrets kept out of every log line: MCP servers' URLs, headers and
                  filled `${VAR}`s, and the patterns the cog gives (Discord's tokens)
- `confirmation.py` a call that may change things waits for its asker's yes: who may answer,
                  what they are shown, what the model is told
- `switches.py`   which tools an admin turned off or on, per channel or server (the rule),
                  and `BotTools`: the tools one turn is offered

The loop that runs them between model passes is the generation's (`tool_loop.py`).
"""

from tomori.tools.registry import (
    CURRENT_TIME,
    Tool,
    ToolContext,
    ToolFailure,
    ToolOutput,
    ToolRegistry,
)

__all__ = ["CURRENT_TIME", "Tool", "ToolContext", "ToolFailure", "ToolOutput", "ToolRegistry"]
