"""Driver of scripts/gateway-chaos: the gateway cluster (scripts/gateway-cluster: three
mcp-gateway instances sharing a key ring behind HAProxy, in front of an order service limited
to 2025-11-25 and one limited to 2026-07-28) under mixed load while one instance is killed
(`kill -9`) and restarted every minute.

The load, all through the balancer: `get_order` readers (2026-07-28), and people cancelling
orders on both client revisions through both upstreams (a 2026-07-28 client answers by
retrying with the round's state; a 2025-11-25 client answers the `elicitation/create` on its
session), who answer yes, no, yes twice (the same answer sent again), or never.

Judged at the end, from what the clients saw and from the order services themselves:
- cancels without a yes: an order CANCELLED that no one said yes for (must be 0);
- double cancels: an order two calls reported cancelled (must be 0);
- errors not explained by a kill: an error is explained when the instance that answered the
  call's earlier request (the one holding its upstream call, or its session) was killed since,
  or a kill happened while the request was in flight (must be 0);
- back after a kill: from the kill to the end of the first read that started after it, and
  that succeeded (must be under 1 s).
"""

import argparse
import asyncio
import collections
import json
import random
import subprocess
import sys
import time
import urllib.request

import kit

META = kit.meta({"elicitation": {"form": {}}}, "gateway-chaos")
EXPIRED = "expired with the gateway instance"
# A quarter of the people say yes (once or twice), so the orders last the run.
DECISIONS = ["yes", "twice", "no", "no", "no", "no", "never", "never"]


def text_of(answer):
    result = answer.get("result") or {}
    parts = [c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)]
    if "error" in answer:
        parts.append(json.dumps(answer["error"]))
    return " ".join(parts)



# What a connection broken under the load raises (a reset, a cut-off body, a garbled answer).
BROKEN = (OSError, asyncio.IncompleteReadError, ValueError, KeyError, IndexError)


def close_session(session):
    """Close a 2025 session's listening stream and its connection for posts."""
    session[0].close()
    session[4].close()

class Chaos:
    def __init__(self, port, upstreams):
        self.port, self.upstreams = port, upstreams
        self.running = True
        self.kills = []  # (name, monotonic time)
        self.busy = set()
        self.pool = {}  # tool prefix -> cancellable order ids
        self.yes = collections.Counter()  # (upstream, order) -> yes answers sent
        self.reported = collections.Counter()  # (upstream, order) -> "is cancelled" seen
        self.flows = collections.Counter()  # (revision, decision, outcome)
        self.explained, self.unexplained = [], []
        self.reads, self.read_errors, self.read_log = 0, 0, []  # (start, end, ok)

    # -- what the order services say --------------------------------------------------------

    def orders(self, upstream, status):
        url = f"{self.upstreams[upstream]}/api/orders?status={status}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return [order["orderId"] for order in json.load(answer)]

    def status(self, upstream, order):
        with urllib.request.urlopen(f"{self.upstreams[upstream]}/api/orders/{order}", timeout=10) as answer:
            return json.load(answer)["status"]

    # -- judging errors ---------------------------------------------------------------------

    def killed_since(self, instance, since):
        return any(name == instance and at >= since for name, at in self.kills)

    def killed_during(self, start, end):
        return any(start <= at <= end for _, at in self.kills)

    def judge(self, what, instance, since, start, end):
        if (instance and self.killed_since(instance, since)) or self.killed_during(start, end):
            self.explained.append(what)
        else:
            self.unexplained.append(what)

    def take(self, upstream):
        free = [o for o in self.pool[upstream] if (upstream, o) not in self.busy and self.reported[(upstream, o)] == 0]
        if not free:
            return None
        order = random.choice(free)
        self.busy.add((upstream, order))
        return order

    async def next_person(self):
        """A person's upstream, a free order there and what they will answer; None (after a
        pause) while every order is taken."""
        upstream = random.choice(list(self.upstreams))
        order = self.take(upstream)
        if order is None:
            await asyncio.sleep(0.5)
            return None
        return upstream, order, random.choice(DECISIONS)

    # -- the load ---------------------------------------------------------------------------

    async def reader(self):
        connection = kit.Connection(self.port)
        while self.running:
            upstream = random.choice(list(self.upstreams))
            start = time.monotonic()
            why = ""
            try:
                status, answer = await connection.post(
                    kit.tool_call(f"{upstream}_get_order", {"orderId": "ORD-10001"}, META))
                ok = status == 200 and "Ana Ruiz" in text_of(answer)
                why = f"HTTP {status} {connection.headers.get('x-gateway-instance')}: {text_of(answer)[:160]}"
            except BROKEN as error:
                connection.close()
                ok = False
                why = f"{type(error).__name__}: {error}"
            end = time.monotonic()
            self.reads += 1
            self.read_log.append((start, end, ok))
            if not ok:
                self.read_errors += 1
                since = [round(start - at, 2) for _, at in self.kills]
                self.judge(("read", upstream, why, f"s since kills {since}"), None, start, start, end)
            await asyncio.sleep(0.02)
        connection.close()

    async def person_2026(self):
        connection = kit.Connection(self.port)
        while self.running:
            person = await self.next_person()
            if person is None:
                continue
            upstream, order, decision = person
            try:
                await self.cancel_2026(connection, upstream, order, decision)
            except BROKEN as error:
                connection.close()
                self.flows[("2026-07-28", decision, f"broken: {type(error).__name__}")] += 1
            finally:
                self.busy.discard((upstream, order))
            await asyncio.sleep(random.uniform(1.0, 4.0))  # the next person
        connection.close()

    async def cancel_2026(self, connection, upstream, order, decision):
        tool = f"{upstream}_cancel_order"
        first = time.monotonic()
        status, answer = await connection.post(kit.tool_call(tool, {"orderId": order}, META))
        asked_at = connection.headers.get("x-gateway-instance")
        result = answer.get("result") or {}
        if result.get("resultType") != "input_required":
            self.flows[("2026-07-28", decision, "not asked")] += 1
            self.judge(("2026 ask", upstream, order, status, text_of(answer)[:120]), asked_at, first, first, time.monotonic())
            return
        if decision == "never":
            self.flows[("2026-07-28", decision, "left")] += 1
            return
        await asyncio.sleep(random.uniform(0, 1.5))  # the person decides
        confirmed = decision in ("yes", "twice")
        answers = {key: {"action": "accept", "content": {"confirmed": confirmed}} for key in result["inputRequests"]}
        if confirmed:
            self.yes[(upstream, order)] += 1
        retry = kit.tool_call(tool, {"orderId": order}, META,
                              {"inputResponses": answers, "requestState": result["requestState"]})
        for attempt in range(2 if decision == "twice" else 1):
            start = time.monotonic()
            try:
                status, answer = await connection.post(retry)
            except BROKEN:
                connection.close()
                self.judge(("2026 answer broken", upstream, order), asked_at, first, start, time.monotonic())
                self.flows[("2026-07-28", decision, "broken")] += 1
                return
            text = text_of(answer)
            if "is cancelled" in text:
                self.reported[(upstream, order)] += 1
                outcome = "cancelled" if attempt == 0 else "cancelled again"
            elif attempt == 1:
                outcome = "replay refused"
            elif "was not cancelled" in text:
                outcome = "not cancelled"
            else:
                outcome = "expired with its instance" if EXPIRED in text else "error"
                self.judge(("2026 answer", upstream, order, status, text[:160]), asked_at, first, start, time.monotonic())
            self.flows[("2026-07-28", decision, outcome)] += 1

    async def person_2025(self):
        session = None
        while self.running:
            person = await self.next_person()
            if person is None:
                continue
            upstream, order, decision = person
            try:
                if session is None:
                    opened = time.monotonic()
                    stream, sid = await open_session(self.port)
                    session = (stream, sid, stream.headers.get("x-gateway-instance"), opened, kit.Connection(self.port))
                keep = await self.cancel_2025(session, upstream, order, decision)
                if not keep:
                    close_session(session)
                    session = None
            except BROKEN as error:
                if session is not None:
                    close_session(session)
                    self.judge(("2025 session", upstream, order, type(error).__name__), session[2], session[3], session[3], time.monotonic())
                else:
                    self.judge(("2025 open", type(error).__name__), None, time.monotonic(), time.monotonic() - 5, time.monotonic())
                self.flows[("2025-11-25", decision, "broken")] += 1
                session = None
            finally:
                self.busy.discard((upstream, order))
            await asyncio.sleep(random.uniform(1.0, 4.0))  # the next person
        if session is not None:
            close_session(session)

    async def cancel_2025(self, session, upstream, order, decision):
        """One confirmed cancel on the session; whether the session can be used again."""
        _, sid, instance, opened, _ = session
        # A connection per request, as a client whose idle connection the balancer closed
        # would open one: the session is the header, not the connection.
        stream, answers = kit.Connection(self.port), kit.Connection(self.port)
        call_id = random.randrange(1, 1 << 30)
        await stream.send(kit.tool_call(f"{upstream}_cancel_order", {"orderId": order}, id=call_id), kit.session_headers(sid))
        if stream.status != 200:
            raise ValueError(f"HTTP {stream.status}")
        events = stream.events()
        asked = None
        async for message in events:
            if message.get("method") == "elicitation/create":
                asked = message
                break
            if message.get("id") == call_id:
                self.flows[("2025-11-25", decision, "not asked")] += 1
                return True
        if asked is None:
            raise ValueError("the call ended without asking")
        if decision == "never":
            self.flows[("2025-11-25", decision, "left")] += 1
            stream.close()
            return False  # the connection is dropped with its question
        await asyncio.sleep(random.uniform(0, 1.5))
        confirmed = decision in ("yes", "twice")
        if confirmed:
            self.yes[(upstream, order)] += 1
        reply = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirmed": confirmed}}}
        for _ in range(2 if decision == "twice" else 1):
            await answers.send(reply, kit.session_headers(sid))
            await answers.body()
        async for message in events:
            if message.get("id") == call_id:
                text = text_of(message)
                if "is cancelled" in text:
                    self.reported[(upstream, order)] += 1
                    outcome = "cancelled"
                elif "was not cancelled" in text:
                    outcome = "not cancelled"
                else:
                    outcome = "error"
                    self.judge(("2025 answer", upstream, order, text[:160]), instance, opened, opened, time.monotonic())
                self.flows[("2025-11-25", decision, outcome)] += 1
                stream.close(); answers.close()
                return True
        raise ValueError("the stream ended without the result")

    # -- the chaos --------------------------------------------------------------------------

    def kill_and_restart(self, name):
        subprocess.run(["scripts/gateway-cluster", "kill", name], check=True)
        self.kills.append((name, time.monotonic()))
        time.sleep(1)
        subprocess.run(["scripts/gateway-cluster", "restart", name], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    async def chaos(self, seconds, every):
        loop = asyncio.get_running_loop()
        names = ["gateway-1", "gateway-2", "gateway-3"]
        deadline = loop.time() + seconds
        n = 0
        while loop.time() + every < deadline:
            await asyncio.sleep(every)
            await loop.run_in_executor(None, self.kill_and_restart, names[n % 3])
            n += 1
        await asyncio.sleep(max(0.0, deadline - loop.time()))
        self.running = False

    def recovery(self):
        """Per kill: from the kill to the end of the first successful read started after it."""
        back = []
        for name, at in self.kills:
            after = [end for start, end, ok in self.read_log if ok and start >= at]
            back.append((name, min(after) - at if after else None))
        return back


async def open_session(port):
    stream = kit.Connection(port)
    await stream.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": kit.SESSIONS, "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "gateway-chaos", "version": "0"}}})
    sid = stream.headers.get("mcp-session-id")
    if sid is None:
        raise ValueError(f"initialize answered HTTP {stream.status} without a session")
    instance = stream.headers.get("x-gateway-instance")
    if stream.length is not None or "text/event-stream" not in stream.headers.get("content-type", ""):
        await stream.body()
    else:
        async for _ in stream.events():
            pass
    await stream.send({"jsonrpc": "2.0", "method": "notifications/initialized"}, kit.session_headers(sid))
    await stream.body()
    stream.headers["x-gateway-instance"] = instance
    return stream, sid


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--every", type=int, default=60)
    parser.add_argument("--endpoints", required=True)
    args = parser.parse_args()
    endpoints = dict(line.split() for line in open(args.endpoints) if line.strip())
    port = int(endpoints["balancer"].split(":")[2].split("/")[0])
    upstreams = {name: endpoints[name].removesuffix("/mcp") for name in ("orders25", "orders26")}
    chaos = Chaos(port, upstreams)
    for upstream in upstreams:
        chaos.pool[upstream] = chaos.orders(upstream, "PENDING") + chaos.orders(upstream, "PROCESSING")
    before = {(u, o): chaos.status(u, o) for u in upstreams for o in chaos.pool[u]}
    started = time.monotonic()
    await asyncio.gather(
        chaos.chaos(args.seconds, args.every),
        *(chaos.reader() for _ in range(2)),
        *(chaos.person_2026() for _ in range(3)),
        *(chaos.person_2025() for _ in range(3)),
    )
    took = time.monotonic() - started
    without_yes, double = [], []
    cancelled = 0
    for (upstream, order), was in before.items():
        now = chaos.status(upstream, order)
        if now == "CANCELLED":
            cancelled += 1
            if chaos.yes[(upstream, order)] == 0:
                without_yes.append((upstream, order, was))
        if chaos.reported[(upstream, order)] > 1:
            double.append((upstream, order))
    back = chaos.recovery()
    print(f"gateway chaos: {took:.0f} s, {len(chaos.kills)} kills ({', '.join(n for n, _ in chaos.kills)})")
    for key in sorted(chaos.flows):
        print(f"  {key[0]} {key[1]:6} {key[2]:28} {chaos.flows[key]}")
    print(f"  reads: {chaos.reads} ({chaos.read_errors} failed)")
    print(f"  orders cancelled: {cancelled}; without a yes: {len(without_yes)}; reported cancelled twice: {len(double)}")
    print(f"  errors explained by a kill: {len(chaos.explained)}; not explained: {len(chaos.unexplained)}")
    for what in chaos.unexplained[:10]:
        print(f"    unexplained: {what}")
    print("  back after each kill (s): " + ", ".join(f"{n} {b:.3f}" if b is not None else f"{n} never" for n, b in back))
    bad = without_yes or double or chaos.unexplained or any(b is None or b >= 1.0 for _, b in back)
    for item in without_yes + double:
        print(f"    {item}")
    print("gateway chaos: " + ("FAILED" if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
