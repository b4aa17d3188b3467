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

from mcp_types import ElicitResult  # noqa: E402
from pydantic_ai.mcp import MCPToolset  # noqa: E402

FEATURES = {"elicitation", "sampling", "logging", "progress", "roots"}


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
    async def elicit(message, response_type, params, context):
        answer = handlers.elicit(message, params)
        return answer if answer is not None else ElicitResult(action="decline")

    async def sample(messages, params, context):
        return handlers.sample(" ".join(str(m.content) for m in messages))

    async def log(message):
        handlers.log(message.level, message.data)

    async def progress(value, total, message):
        handlers.on_progress(value, total)

    toolset = MCPToolset(url, elicitation_handler=elicit, sampling_handler=sample, log_handler=log,
                         log_level="info", progress_handler=progress, roots=[lane.ROOT],
                         headers=headers or None, tool_error_behavior="error", read_timeout=60)
    async with toolset:
        yield Session(toolset)


if __name__ == "__main__":
    lane.run(open_session, dict.fromkeys(FEATURES, True))
