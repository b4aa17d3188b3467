"""The clients lane's driver for Pydantic AI's MCPToolset (tools/clients/pydantic-ai.txt), as an
agent's tools would be called, without a model: `direct_call_tool`. Pydantic AI picks the
revision itself (its FastMCP client's 'auto'); its hooks are given: elicitation, sampling, logs,
progress, roots."""

import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lane  # noqa: E402

import fastmcp_client  # noqa: E402 (the same handlers: Pydantic AI's client is FastMCP's)
from pydantic_ai.mcp import MCPToolset  # noqa: E402

FEATURES = {"elicitation", "url-elicitation", "sampling", "logging", "progress", "roots"}


class Session:
    def __init__(self, toolset):
        self.toolset = toolset

    async def list_tools(self):
        return [tool.name for tool in await self.toolset.list_tools()]

    async def call(self, name, arguments):
        try:
            result = await self.toolset.direct_call_tool(name, arguments)
        except Exception as error:  # a tool's isError result, as Pydantic AI raises it
            return True, str(error)
        return False, result if isinstance(result, str) else json.dumps(result, default=str)


@contextlib.asynccontextmanager
async def open_session(url, handlers, headers):
    toolset = MCPToolset(url, log_level="info", headers=headers or None, tool_error_behavior="error",
                         read_timeout=60, **fastmcp_client.hooks(handlers))
    async with toolset:
        yield Session(toolset)


if __name__ == "__main__":
    lane.run(open_session, {**dict.fromkeys(FEATURES, True),
                            "why-no-tasks": "its client is FastMCP 4.2.3's, which runs tasks only with "
                                            "fastmcp-tasks (pinned to fastmcp 4.1.4)"})
