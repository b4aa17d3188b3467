"""The clients lane's driver for Vercel's AI SDK MCP client (@ai-sdk/mcp, tools/clients/ai-sdk):
its client runs in Node (ai_sdk_client.mjs beside this file), driven by JSON lines; the lane's
handlers answer the questions it passes on. On '2025-11-25' it starts with initialize; on
'2026-07-28' it discovers the revision (server/discover). It offers elicitation, forms only (2.0.99);
no sampling, roots, progress or log-message hook.

Environment: $LANE_NODE (Node 22), $LANE_AI_SDK (the folder holding its node_modules)."""

import asyncio
import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lane  # noqa: E402

WHY = "@ai-sdk/mcp 2.0.99's client has no {}"
FEATURES = {
    "elicitation": True,
    "why-no-url-elicitation": "@ai-sdk/mcp 2.0.99 answers forms only (tried: its request schema drops "
                              "a URL question's url on 2025-11-25; on 2026-07-28 it refuses one, "
                              "'Only form elicitation is supported')",
    "why-no-sampling": WHY.format("sampling handler"),
    "why-no-roots": WHY.format("roots handler"),
    "why-no-progress": WHY.format("progress callback on callTool"),
    "why-no-logging": WHY.format("log-message handler"),
    "why-no-tasks": WHY.format("way to run a call as a task"),
}


class Session:
    """The Node process, one request at a time; questions answered while a call waits."""

    def __init__(self, proc, handlers):
        self.proc, self.handlers, self.next_id = proc, handlers, 0

    async def request(self, op, **fields):
        self.next_id += 1
        await self.write({"id": self.next_id, "op": op, **fields})
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the AI SDK's process ended")
            message = json.loads(line)
            if "ask" in message:
                await self.write({"op": "answer", "ask": message["ask"], "result": self.answer(message)})
            elif message.get("reply") == self.next_id:
                if "error" in message:
                    raise RuntimeError(message["error"])
                return message["result"]

    def answer(self, question):
        action, content = self.handlers.answer(question["message"], question.get("url"),
                                               question.get("schema"))
        return {"action": action} if content is None else {"action": action, "content": content}

    async def write(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        await self.proc.stdin.drain()

    async def list_tools(self):
        return await self.request("list")

    async def call(self, name, arguments):
        result = await self.request("call", name=name, arguments=arguments)
        text = " ".join(part.get("text", "") for part in result.get("content", []))
        return bool(result.get("isError")), text


@contextlib.asynccontextmanager
async def open_session(url, handlers, headers):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ai_sdk_client.mjs")
    proc = await asyncio.create_subprocess_exec(os.environ["LANE_NODE"], script,
                                                stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE)
    session = Session(proc, handlers)
    try:
        await session.request("open", url=url, headers=headers, revision=os.environ["LANE_REVISION"])
        yield session
        await session.request("close")
    finally:
        proc.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        await proc.wait()


if __name__ == "__main__":
    lane.run(open_session, FEATURES)
