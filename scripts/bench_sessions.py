"""2025-11-25 loads for scripts/bench: confirmed cancels over sessions (the server asks with
`elicitation/create` on the call's SSE stream; the client answers with a POST), and many
sessions each holding an open confirmation."""

import asyncio
import json

VERSION = "2025-11-25"


class Stream:
    """One keep-alive HTTP/1.1 connection that can read a response's SSE events one by one."""

    def __init__(self, port):
        self.port = port
        self.reader = self.writer = None

    async def send(self, message, session=None):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        body = json.dumps(message).encode()
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n")
        if session:
            head += f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: {VERSION}\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)
        await self.writer.drain()
        status = int((await self.reader.readuntil(b"\r\n")).split()[1])
        headers = {}
        while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
            key, _, value = line.decode().partition(":")
            headers[key.strip().lower()] = value.strip()
        self.headers, self.status, self.buffer = headers, status, b""
        self.length = int(headers["content-length"]) if "content-length" in headers else None
        return status, headers

    async def body(self):
        """The whole body of a response: with a length, chunked, or none."""
        if self.length is not None or "chunked" not in self.headers.get("transfer-encoding", ""):
            return await self.reader.readexactly(self.length or 0)
        data = b""
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
            chunk = await self.reader.readexactly(size + 2)
            if size == 0:
                return data
            data += chunk[:-2]

    async def events(self):
        """JSON-RPC messages of a chunked SSE body, as they arrive; ends with the body."""
        while True:
            while b"\n\n" in self.buffer:
                event, self.buffer = self.buffer.split(b"\n\n", 1)
                for line in event.split(b"\n"):
                    if line.startswith(b"data:") and line[5:].strip():
                        yield json.loads(line[5:])
            size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
            chunk = await self.reader.readexactly(size + 2)
            if size == 0:
                return
            self.buffer += chunk[:-2].replace(b"\r\n", b"\n")


async def open_session(port):
    """initialize + notifications/initialized; returns (stream, session id)."""
    stream = Stream(port)
    await stream.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "bench", "version": "0"}}})
    session = stream.headers.get("mcp-session-id")
    if session is None:
        raise ValueError(f"initialize answered HTTP {stream.status} without a session")
    if stream.length is not None or "text/event-stream" not in stream.headers.get("content-type", ""):
        await stream.body()
    else:
        async for _ in stream.events():
            pass
    await stream.send({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    await stream.body()
    return stream, session


async def ask_cancel(stream, session, order, call_id):
    """Start a confirmed cancel; returns the event iterator and the elicitation request."""
    await stream.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                       "params": {"name": "cancel_order", "arguments": {"orderId": order}}}, session)
    events = stream.events()
    async for message in events:
        if message.get("method") == "elicitation/create":
            return events, message
    raise ValueError("the call ended without asking")


async def cancel_flows(port, seconds, concurrency, orders):
    """Completed 2025 confirmed cancels per second: each worker holds one session."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    pool = iter(orders)
    done = failed = 0

    async def worker():
        nonlocal done, failed
        stream, session = await open_session(port)
        answers = Stream(port)
        call_id = 1
        while loop.time() < deadline and (order := next(pool, None)) is not None:
            call_id += 1
            try:
                events, asked = await ask_cancel(stream, session, order, call_id)
                await answers.send({"jsonrpc": "2.0", "id": asked["id"],
                                    "result": {"action": "accept", "content": {"confirmed": True}}}, session)
                await answers.body()
                ok = False
                async for message in events:
                    if message.get("id") == call_id:
                        ok = "is cancelled" in message["result"]["content"][0]["text"]
                done += ok
                failed += not ok
            except (OSError, KeyError, ValueError, asyncio.IncompleteReadError):
                failed += 1
                return

    start = loop.time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / (loop.time() - start), failed


async def hold_confirmations(port, orders, opened):
    """Open one session per order and leave its confirmation unanswered; `opened` is set once
    all are asking. Returns the held (stream, events) pairs (keep them to keep them open) and
    the refusals (why each session that could not be held was not)."""
    held, refused = [], []
    semaphore = asyncio.Semaphore(64)

    async def one(order):
        async with semaphore:
            try:
                stream, session = await open_session(port)
                events, _ = await ask_cancel(stream, session, order, 1)
                held.append((stream, events))
            except (OSError, KeyError, ValueError, asyncio.IncompleteReadError) as error:
                refused.append(str(error) or type(error).__name__)

    await asyncio.gather(*(one(order) for order in orders))
    opened.set()
    return held, refused
