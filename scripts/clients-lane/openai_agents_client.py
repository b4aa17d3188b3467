"""The clients lane's driver for the OpenAI Agents SDK's MCPServerStreamableHttp
(tools/clients/openai-agents.txt), as an agent's tools would be called, without a model. It
offers no elicitation, sampling, roots, progress or logging hook (0.24.0)."""

import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lane  # noqa: E402

from agents.mcp import MCPServerStreamableHttp  # noqa: E402

WHY = "MCPServerStreamableHttp (0.24.0) takes no {} callback"
FEATURES = {
    # Tried: 0.24.0 (on mcp 2.3.0) never called a message_handler for the log messages the
    # order service sent (other clients got them).
    "why-no-logging": "no logging callback, and its message_handler was not called for the log "
                      "messages sent (0.24.0 on mcp 2.3.0)",
    "why-no-elicitation": WHY.format("elicitation"),
    "why-no-url-elicitation": WHY.format("elicitation"),
    "why-no-tasks": "MCPServerStreamableHttp (0.24.0) has no way to run a call as a task",
    "why-no-sampling": WHY.format("sampling"),
    "why-no-roots": WHY.format("roots"),
    "why-no-progress": "call_tool (0.24.0) takes no progress callback",
}


class Session:
    def __init__(self, server):
        self.server = server

    async def list_tools(self):
        return [tool.name for tool in await self.server.list_tools()]

    async def call(self, name, arguments):
        result = await self.server.call_tool(name, arguments)
        text = lane.content_text(result.content)
        return bool(result.is_error), text


@contextlib.asynccontextmanager
async def open_session(url, handlers, headers):
    server = MCPServerStreamableHttp({"url": url, "headers": headers, "timeout": 60,
                                      "sse_read_timeout": 60}, client_session_timeout_seconds=60)
    async with server:
        yield Session(server)


if __name__ == "__main__":
    lane.run(open_session, FEATURES)
