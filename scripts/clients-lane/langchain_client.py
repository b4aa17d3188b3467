"""The clients lane's driver for LangChain's MCP adapters (tools/clients/langchain.txt):
MultiServerMCPClient's tools, invoked as an agent's would be, without a model. It speaks
2025-11-25 (its MCP SDK is 1.x) and offers elicitation, progress and logging callbacks, no sampling
or roots (0.3.2)."""

import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lane  # noqa: E402

from langchain_core.tools import ToolException  # noqa: E402
from langchain_mcp_adapters.callbacks import Callbacks  # noqa: E402
from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402
from mcp.types import ElicitResult  # noqa: E402

FEATURES = {
    "elicitation": True,
    "url-elicitation": True,
    "progress": True,
    "logging": True,
    "why-no-sampling": "MultiServerMCPClient (0.3.2) takes no sampling callback",
    "why-no-roots": "MultiServerMCPClient (0.3.2) takes no roots callback",
    "why-no-tasks": "MultiServerMCPClient (0.3.2, on mcp 1.30) has no way to run a call as a task",
}


def text_of(result):
    if isinstance(result, str):
        return result
    if isinstance(result, tuple):
        result = result[0]
    if isinstance(result, list):
        return " ".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in result)
    return json.dumps(result, default=str)


class Session:
    def __init__(self, tools):
        self.tools = {tool.name: tool for tool in tools}

    async def list_tools(self):
        return list(self.tools)

    async def call(self, name, arguments):
        try:
            return False, text_of(await self.tools[name].ainvoke(arguments))
        except ToolException as error:
            return True, str(error)


@contextlib.asynccontextmanager
async def open_session(url, handlers, headers):
    async def elicit(mcp_context, params, context):
        action, content = handlers.answer(params.message, getattr(params, "url", None),
                                          getattr(params, "requestedSchema", None))
        return ElicitResult(action=action, content=content)

    async def progress(value, total, message, context):
        handlers.on_progress(value, total)

    async def log(params, context):
        handlers.log(params.level, params.data)

    connection = {"transport": "streamable_http", "url": url, "headers": headers}
    client = MultiServerMCPClient({"lane": connection}, handle_tool_errors=False,
                                  callbacks=Callbacks(on_elicitation=elicit, on_progress=progress,
                                                      on_logging_message=log))
    yield Session(await client.get_tools())


if __name__ == "__main__":
    lane.run(open_session, FEATURES)
