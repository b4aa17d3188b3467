"""The clients lane's driver for FastMCP with its tasks extension (tools/clients/fastmcp-tasks.txt:
fastmcp and fastmcp-tasks 4.1.4, whose client half drives a server's tasks on 2026-07-28 only).
The hooks are FastMCP's (fastmcp_client.hooks); a task is started with fastmcp_tasks'
call_tool_task and driven to its result through the handle, a question inside it answered by
the elicitation hook.

Local patch (this lane only): fastmcp-tasks 4.1.4 sends tasks/get, tasks/update and tasks/cancel
without the Mcp-Name header SEP-2243 asks of them (the task's id), which our servers refuse; an
httpx event hook adds it when it is missing. With $LANE_STDIO (a command as a JSON list) it
reaches the server through that bridge over stdio."""

import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fastmcp_client  # noqa: E402
import lane  # noqa: E402

import fastmcp_tasks  # noqa: E402  (importing it gives every FastMCP Client the tasks extension)
import httpx2  # noqa: E402
from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport  # noqa: E402

FEATURES = {"elicitation": True, "url-elicitation": True, "sampling": True, "logging": True,
            "progress": True, "roots": True, "tasks": True}
if os.environ.get("LANE_REVISION") != "2026-07-28":
    del FEATURES["tasks"]
    FEATURES["why-no-tasks"] = "fastmcp-tasks 4.1.4 drives tasks on 2026-07-28 only"


async def name_task_requests(request):
    """The lane's patch: Mcp-Name = the task's id on tasks/* (fastmcp-tasks 4.1.4 omits it)."""
    if request.method != "POST" or "mcp-name" in request.headers:
        return
    try:
        body = json.loads(request.content or b"{}")
    except ValueError:
        return
    method = body.get("method", "") if isinstance(body, dict) else ""
    task = (body.get("params") or {}).get("taskId") if method.startswith("tasks/") else None
    if isinstance(task, str):
        request.headers["Mcp-Name"] = task


def http_client(headers=None, timeout=None, auth=None, **_):
    return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, follow_redirects=True,
                              event_hooks={"request": [name_task_requests]})


class Session(fastmcp_client.Session):
    async def call_task(self, name, arguments):
        task = await fastmcp_tasks.call_tool_task(self.client, name, arguments, raise_on_error=False)
        result = await task.result()
        text = lane.content_text(result.content)
        return result.is_error, text


@contextlib.asynccontextmanager
async def open_session(url, handlers, headers):
    revision = os.environ["LANE_REVISION"]
    mode = "legacy" if revision == "2025-11-25" else revision
    token = headers.get("Authorization", "").removeprefix("Bearer ") or None
    if "LANE_STDIO" in os.environ:
        # A bridge run as this client's stdio server (mcp-remote).
        command, *args = json.loads(os.environ["LANE_STDIO"])
        transport = StdioTransport(command, args, env=dict(os.environ))
    else:
        transport = StreamableHttpTransport(url, auth=token, httpx_client_factory=http_client)
    client = Client(transport, mode=mode, timeout=60, **fastmcp_client.hooks(handlers))
    async with client:
        yield Session(client)


if __name__ == "__main__":
    lane.run(open_session, FEATURES)
