"""The clients lane's driver for FastMCP's Client (tools/clients/fastmcp.txt): on
$LANE_REVISION ('2025-11-25': its handshake mode 'legacy'; '2026-07-28': that revision, stateless).
Every hook FastMCP offers is given: elicitation, sampling, logs, progress, roots."""

import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lane  # noqa: E402

from fastmcp import Client  # noqa: E402
from mcp_types import ElicitResult  # noqa: E402

FEATURES = {"elicitation", "url-elicitation", "sampling", "logging", "progress", "roots"}


class Session:
    def __init__(self, client):
        self.client = client

    async def list_tools(self):
        return [tool.name for tool in await self.client.list_tools()]

    async def call(self, name, arguments):
        result = await self.client.call_tool(name, arguments, raise_on_error=False)
        text = lane.content_text(result.content)
        return result.is_error, text


def hooks(handlers):
    """FastMCP's handlers (Pydantic AI takes the same), answering as `handlers` says."""

    async def elicit(message, response_type, params, context):
        action, content = handlers.answer(message, getattr(params, "url", None), params)
        return ElicitResult(action=action, content=content)

    async def sample(messages, params, context):
        return handlers.sample(" ".join(str(m.content) for m in messages))

    async def log(message):
        handlers.log(message.level, message.data)

    async def progress(value, total, message):
        handlers.on_progress(value, total)

    return dict(elicitation_handler=elicit, sampling_handler=sample, log_handler=log,
                progress_handler=progress, roots=[lane.ROOT])


@contextlib.asynccontextmanager
async def open_session(url, handlers, headers):
    revision = os.environ["LANE_REVISION"]
    mode = "legacy" if revision == "2025-11-25" else revision
    token = headers.get("Authorization", "").removeprefix("Bearer ") or None
    client = Client(url, mode=mode, auth=token, timeout=60, **hooks(handlers))
    async with client:
        yield Session(client)


if __name__ == "__main__":
    lane.run(open_session, {**dict.fromkeys(FEATURES, True),
                            "why-no-tasks": "FastMCP 4.2.3 runs tasks only with fastmcp-tasks, which "
                                            "requires fastmcp 4.1.4 (the fastmcp-tasks rows)"})
