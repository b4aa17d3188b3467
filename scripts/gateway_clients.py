"""An independent client through mcp-gateway: the Python MCP SDK (bench/peers/python's pin)
talks to the order service across revisions, each way:

- a 2025-11-25 client (initialize handshake) through the gateway in front of an order service
  limited to 2026-07-28, and
- a 2026-07-28 client (stateless, input_required rounds) in front of one limited to 2025-11-25.

Each way: `cancel_order` confirmed with yes cancels the order once (status CANCELLED, the note
the person gave written, one "cancelled" log message relayed, no error), with no leaves it as it
was; `recheck_shipments`'s progress arrives, strictly increasing; the tools list is the order
service's. Checks the database itself (SQLite), not only what the tools say.

Usage: python gateway_clients.py --target DIR   (DIR holds order-service and mcp-gateway)
Prints one line per check and a last line "gateway clients: N passed, M failed"; exits 1 if any
check failed.
"""

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kit import start_server  # noqa: E402

import mcp_types as types  # noqa: E402
from mcp.client import Client  # noqa: E402

NOTE = "asked through the gateway"


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except Exception:
        proc.kill()
        proc.wait()


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")


def status_and_note(db, order_id):
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT status, cancellation_note FROM orders WHERE order_id = ?", (order_id,)
        ).fetchone()
    return row


async def one_way(checks, target, tmp, client_rev, upstream_rev):
    label = f"{client_rev} client, {upstream_rev}-only order service"
    db = os.path.join(tmp, f"orders-{upstream_rev}.sqlite")
    service, service_port = start_server(
        [f"{target}/order-service", "serve", "--listen", "127.0.0.1:0",
         "--only-revision", upstream_rev, "--database", f"sqlite://{db}",
         "--carrier-latency-ms", "1"],
        os.path.join(tmp, f"order-service-{upstream_rev}.log"))
    gateway = None
    try:
        gateway, gateway_port = start_server(
            [f"{target}/mcp-gateway", "serve", "--listen", "127.0.0.1:0",
             "--upstream", f"orders=http://127.0.0.1:{service_port}/mcp"],
            os.path.join(tmp, f"gateway-{upstream_rev}.log"))
        url = f"http://127.0.0.1:{gateway_port}/mcp"
        answers = {}
        logs = []

        async def elicit(context, params):
            order_id = next((o for o in answers if o in params.message), None)
            if order_id is None:
                return types.ElicitResult(action="decline")
            if answers[order_id]:
                return types.ElicitResult(action="accept", content={"confirmed": True, "note": NOTE})
            return types.ElicitResult(action="accept", content={"confirmed": False})

        async def log(params):
            logs.append(params)

        mode = "legacy" if client_rev == "2025-11-25" else client_rev
        async with Client(url, mode=mode, elicitation_callback=elicit, logging_callback=log,
                          log_level="info", read_timeout_seconds=60) as client:
            tools = sorted(tool.name for tool in (await client.list_tools()).tools)
            checks.check(f"{label}: the order service's tools are listed",
                         {"cancel_order", "get_order", "recheck_shipments"} <= set(tools), tools)

            pending = await client.call_tool("get_orders_by_status", {"status": "PENDING"})
            ids = [order["orderId"] for order in json.loads(pending.content[0].text)]
            if len(ids) < 2:
                checks.check(f"{label}: two PENDING orders to cancel", False, pending)
                return
            yes_id, no_id = ids[0], ids[1]
            answers[yes_id] = True
            answers[no_id] = False

            result = await client.call_tool("cancel_order", {"orderId": yes_id})
            text = " ".join(c.text for c in result.content if c.type == "text")
            checks.check(f"{label}: yes is a successful result", not result.is_error, text)
            row = status_and_note(db, yes_id)
            checks.check(f"{label}: yes cancels the order, with the note given",
                         row == ("CANCELLED", NOTE), row)
            cancelled_logs = [entry for entry in logs if yes_id in str(entry.data)]
            checks.check(f"{label}: one log message of the cancellation is relayed",
                         len(cancelled_logs) == 1, [str(entry.data) for entry in logs])

            result = await client.call_tool("cancel_order", {"orderId": no_id})
            text = " ".join(c.text for c in result.content if c.type == "text")
            row = status_and_note(db, no_id)
            checks.check(f"{label}: no leaves the order as it was",
                         not result.is_error and row == ("PENDING", None), (row, text))

            seen = []

            async def progress(value, total, message):
                seen.append(value)

            result = await client.call_tool("recheck_shipments", {}, progress_callback=progress)
            checks.check(f"{label}: recheck_shipments ends in a successful result",
                         not result.is_error, result)
            checks.check(f"{label}: its progress arrives, strictly increasing",
                         len(seen) >= 2 and all(a < b for a, b in zip(seen, seen[1:])), seen)
    finally:
        if gateway is not None:
            stop(gateway)
        stop(service)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True, help="the folder holding the built binaries")
    args = parser.parse_args()
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="gateway-clients-") as tmp:
        for client_rev, upstream_rev in (("2025-11-25", "2026-07-28"), ("2026-07-28", "2025-11-25")):
            try:
                await one_way(checks, args.target, tmp, client_rev, upstream_rev)
            except Exception as error:  # a client or server that failed is a failed check
                checks.check(f"{client_rev} client, {upstream_rev}-only order service: runs",
                             False, repr(error))
    print(f"gateway clients: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
