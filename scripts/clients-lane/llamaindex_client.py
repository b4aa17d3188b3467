"""The clients lane's driver for LlamaIndex's MCP tools (tools/clients/llamaindex.txt:
llama-index-tools-mcp 0.6.0): BasicMCPClient, the tools listed as an agent gets them
(McpToolSpec), each called as BasicMCPClient.call_tool with its progress callback. It speaks
2025-11-25 (its session is mcp 2.3.0's ClientSession, whose handshake is the 2025 one) and takes
a sampling callback; it offers no elicitation, roots or log-message callback (0.6.0)."""

import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lane  # noqa: E402

import mcp_types as types  # noqa: E402
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec  # noqa: E402

WHY = "BasicMCPClient (0.6.0) takes no {} callback"
FEATURES = {
    "sampling": True,
    "progress": True,
    "why-no-elicitation": WHY.format("elicitation"),
    "why-no-url-elicitation": WHY.format("elicitation"),
    "why-no-roots": WHY.format("roots"),
    "why-no-logging": "BasicMCPClient (0.6.0) has no callback for log messages (its "
                      "tool_call_logs_callback gathers Python's own logging)",
    "why-no-tasks": "BasicMCPClient (0.6.0) has no way to run a call as a task",
}


class Session:
    def __init__(self, client, handlers):
        self.client, self.handlers = client, handlers

    async def list_tools(self):
        return [tool.metadata.name for tool in await McpToolSpec(client=self.client).to_tool_list_async()]

    async def call(self, name, arguments):
        async def progress(value, total, message):
            self.handlers.on_progress(value, total)

        result = await self.client.call_tool(name, arguments, progress_callback=progress)
        text = lane.content_text(result.content)
        return result.is_error, text


@contextlib.asynccontextmanager
async def open_session(url, handlers, headers):
    async def sample(context, params):
        text = handlers.sample(" ".join(str(m.content) for m in params.messages))
        return types.CreateMessageResult(role="assistant", model="clients-lane",
                                         content=types.TextContent(type="text", text=text))

    yield Session(BasicMCPClient(url, headers=headers, timeout=60, sampling_callback=sample), handlers)


if __name__ == "__main__":
    lane.run(open_session, FEATURES)
