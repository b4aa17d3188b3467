"""The clients lane's driver for fast-agent (tools/clients/fast-agent.txt: fast-agent-mcp 0.10.48,
on Python 3.13): a FastAgent application with one agent on the lane's server, its tools listed
and called as the agent's own (McpAgent.list_tools / call_tool), without a model ('passthrough').
Its server settings give roots; the agent takes an elicitation handler. It speaks 2025-11-25."""

import contextlib
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lane  # noqa: E402

import yaml  # noqa: E402
from fast_agent import FastAgent  # noqa: E402
from mcp_types import ElicitResult  # noqa: E402

FEATURES = {
    "elicitation": True,
    "url-elicitation": True,
    "roots": True,
    "why-no-sampling": "fast-agent (0.10.48) answers sampling with a model provider it is configured "
                       "with, not a callback; the lane gives it none",
    "why-no-progress": "McpAgent.call_tool (0.10.48) takes no progress callback (progress goes to "
                       "its own display)",
    "why-no-logging": "fast-agent (0.10.48) takes no log-message callback (they go to its own logger)",
    "why-no-tasks": "McpAgent (0.10.48, on mcp 2.3.0's ClientSession) has no way to run a call as a task",
}


class Session:
    def __init__(self, agent):
        self.agent = agent

    async def list_tools(self):
        return [tool.name.split("__", 1)[-1] for tool in (await self.agent.list_tools()).tools]

    async def call(self, name, arguments):
        result = await self.agent.call_tool(f"lane__{name}", arguments)
        text = lane.content_text(result.content)
        return result.is_error, text


@contextlib.asynccontextmanager
async def open_session(url, handlers, headers):
    async def elicit(context, params):
        action, content = handlers.answer(params.message, getattr(params, "url", None),
                                          getattr(params, "requested_schema", None))
        return ElicitResult(action=action, content=content)

    with tempfile.TemporaryDirectory(prefix="fast-agent-lane-") as home:
        config = os.path.join(home, "fastagent.config.yaml")
        with open(config, "w") as out:
            yaml.safe_dump({"default_model": "passthrough", "logger": {"level": "error", "show_tools": False,
                                                                     "progress_display": False},
                            "mcp": {"servers": {"lane": {
                                "transport": "http", "url": url, "headers": headers,
                                "roots": [{"uri": lane.ROOT, "name": "the lane's root"}]}}}}, out)
        fast = FastAgent("lane", config_path=config, parse_cli_args=False, quiet=True, no_home=True,
                         workspace=home)

        @fast.agent(name="lane", servers=["lane"], model="passthrough", elicitation_handler=elicit)
        async def agent():
            pass

        async with fast.run() as app:
            yield Session(app.lane)


if __name__ == "__main__":
    lane.run(open_session, FEATURES)
