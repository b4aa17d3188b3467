"""The order service's two benchmark tools on the Python MCP SDK (mcp 2.3), for scripts/bench.

python server.py PORT ORDERS_JSON [sessions] serves `get_order` and a confirmed `cancel_order`
over Streamable HTTP on 127.0.0.1:PORT (0: a port of its own; it prints `listening on
http://ADDR/mcp` once bound), from the orders in ORDERS_JSON (the order service's own
seed, exported by the benchmark). The confirmation is the SDK's own idiom: a resolver returns
`Elicit`, which becomes an `input_required` round on 2026-07-28 and an elicitation request on
2025-11-25. Stateless and JSON by default; with `sessions`, 2025-11-25 sessions answered on SSE
streams, where the elicitation request can travel.
"""

import json
import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    RequestStateSecurity,
    Resolve,
)

ORDERS = {order["orderId"]: order for order in json.load(open(sys.argv[2]))}
CANCELLABLE = {"PENDING", "PROCESSING"}

server = MCPServer("orders-python", request_state_security=RequestStateSecurity.ephemeral())


class Confirmation(BaseModel):
    confirmed: bool


@server.tool()
def get_order(orderId: str) -> str:
    """One order by ID, as JSON."""
    order = ORDERS.get(orderId)
    if order is None:
        return f"No order with ID '{orderId}'. Check the ID and try again."
    return json.dumps(order)


def ask(orderId: str) -> Elicit[Confirmation]:
    return Elicit(f"Cancel order {orderId}?", Confirmation)


@server.tool()
def cancel_order(
    orderId: str, answer: Annotated[ElicitationResult[Confirmation], Resolve(ask)]
) -> str:
    """Cancel an order once the customer confirms."""
    order = ORDERS.get(orderId)
    if order is None:
        return f"No order with ID '{orderId}'. Check the ID and try again."
    if not (isinstance(answer, AcceptedElicitation) and answer.data.confirmed):
        return f"Order {orderId} was not cancelled."
    if order["status"] not in CANCELLABLE:
        return f"Order {orderId} can no longer be cancelled: it is {order['status']}."
    order["status"] = "CANCELLED"
    return f"Order {orderId} is cancelled."


if __name__ == "__main__":
    # `server.run` binds the port it is given and does not say which one it got, so the socket
    # is bound here (port 0 allowed), announced, and handed to uvicorn with the app `run` would
    # build (`run_streamable_http_async`: the same app, the same uvicorn settings).
    import anyio
    import socket
    import uvicorn

    sessions = len(sys.argv) > 3 and sys.argv[3] == "sessions"
    app = server.streamable_http_app(stateless_http=not sessions, json_response=not sessions)
    # IPPROTO_TCP named, as uvicorn's own bind has it: asyncio sets TCP_NODELAY on accepted
    # sockets only when their protocol says TCP (with 0, Nagle and delayed ACKs cost 40 ms a call).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", int(sys.argv[1])))
    sock.listen(2048)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level=server.settings.log_level.lower())
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))
