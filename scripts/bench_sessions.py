"""2025-11-25 loads for scripts/bench: confirmed cancels over sessions (the server asks with
`elicitation/create` on the call's SSE stream; the client answers with a POST), and many
sessions each holding an open confirmation."""

import asyncio

import kit


def send(stream, message, session=None):
    """Send `message` on `stream` (a kit.Connection), on `session` once there is one."""
    return stream.send(message, kit.session_headers(session))


async def open_session(port):
    """initialize + notifications/initialized; returns (stream, session id)."""
    stream = kit.Connection(port)
    await send(stream, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": kit.SESSIONS, "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "bench", "version": "0"}}})
    session = stream.headers.get("mcp-session-id")
    if session is None:
        raise ValueError(f"initialize answered HTTP {stream.status} without a session")
    if stream.length is not None or "text/event-stream" not in stream.headers.get("content-type", ""):
        await stream.body()
    else:
        async for _ in stream.events():
            pass
    await send(stream, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    await stream.body()
    return stream, session


async def ask_cancel(stream, session, order, call_id):
    """Start a confirmed cancel; returns the event iterator and the elicitation request."""
    await send(stream, kit.tool_call("cancel_order", {"orderId": order}, id=call_id), session)
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
        answers = kit.Connection(port)
        call_id = 1
        while loop.time() < deadline and (order := next(pool, None)) is not None:
            call_id += 1
            try:
                events, asked = await ask_cancel(stream, session, order, call_id)
                await send(answers, {"jsonrpc": "2.0", "id": asked["id"],
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
