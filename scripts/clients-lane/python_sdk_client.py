"""The clients lane's driver for the official Python MCP SDK's Client (the pin of
bench/peers/python): on $LANE_REVISION ('2025-11-25': mode 'legacy'; '2026-07-28' itself).
Every callback the SDK offers is given: elicitation, sampling, logs, progress, roots. With
$LANE_STDIO (a command as a JSON list) it reaches the server through that bridge over stdio."""

import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lane  # noqa: E402

import httpx2  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

FEATURES = {"elicitation", "url-elicitation", "sampling", "logging", "progress", "roots"}


class Session:
    def __init__(self, client, handlers):
        self.client, self.handlers = client, handlers

    async def list_tools(self):
        return [tool.name for tool in (await self.client.list_tools()).tools]

    async def call(self, name, arguments):
        async def progress(value, total, message):
            self.handlers.on_progress(value, total)

        result = await self.client.call_tool(name, arguments, progress_callback=progress)
        text = lane.content_text(result.content)
        return result.is_error, text


@contextlib.asynccontextmanager
async def open_session(url, handlers, headers):
    async def elicit(context, params):
        action, content = handlers.answer(params.message, getattr(params, "url", None),
                                          getattr(params, "requested_schema", None))
        return types.ElicitResult(action=action, content=content)

    async def sample(context, params):
        text = handlers.sample(" ".join(str(m.content) for m in params.messages))
        return types.CreateMessageResult(role="assistant", model="clients-lane",
                                         content=types.TextContent(type="text", text=text))

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=lane.ROOT, name="the lane's root")])

    async def log(params):
        handlers.log(params.level, params.data)

    revision = os.environ["LANE_REVISION"]
    mode = "legacy" if revision == "2025-11-25" else revision
    hooks = dict(mode=mode, elicitation_callback=elicit, sampling_callback=sample,
                 list_roots_callback=roots, logging_callback=log, log_level="info",
                 read_timeout_seconds=60)
    if "LANE_STDIO" in os.environ:
        # A bridge run as this client's stdio server (mcp-remote).
        command, *args = json.loads(os.environ["LANE_STDIO"])
        async with Client(StdioServerParameters(command=command, args=args, env=dict(os.environ)),
                          **hooks) as client:
            yield Session(client, handlers)
        return
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, **hooks) as client:
            yield Session(client, handlers)


if __name__ == "__main__":
    lane.run(open_session, {**dict.fromkeys(FEATURES, True),
                            "why-no-tasks": "Client (mcp 2.3.0) has no call that runs a tool as a task"})
