"""Driver of scripts/bench: start each server pinned to core 0, measure, load it from core 1.

Servers: ours (order-service, with and without its order cache, with /metrics served, with
its spans and metrics exported over OTLP to a sink here, behind mcp-gateway alone and three of
them, and behind HAProxy alone and plain hyper passing requests on, the floors under any
proxy's figures), a bare
rmcp server, plain hyper answering a canned reply (the ceiling), and the peers in bench/peers/ (the
Python MCP SDK, the TypeScript SDK v2 on Node 22, turbomcp 4 in Rust), all serving the same orders.
Loads: `get_order` at concurrency 1 and 16 (oha); completed 2026-07-28 confirmed cancellations (the
`input_required` round, then the retry with a yes) at 16, driven by examples/load.rs (a Rust
client: the Python one saturated its core below what the servers do); then, for every server on a
fresh process, 10,000 open 2025-11-25 confirmations (a session each, its question unanswered) and
10,000 open 2026-07-28 confirmations (the first round each, never retried), with the RSS they cost.
"""

import argparse
import asyncio
import collections
import copy
import json
import os
import re
import resource
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request

import bench_cluster
import bench_sessions
import kit

METRICS_ON = "order-service --metrics"
EXPORT_ON = "order-service, spans and metrics exported"
GATEWAY = "mcp-gateway in front of order-service"
BEFORE = "order-service, the earlier build"
GATEWAY_BEFORE = "mcp-gateway, the earlier build"
GATEWAY_CLUSTER = "3 mcp-gateways behind HAProxy"
PASSTHROUGH = "HAProxy alone in front of order-service"
HYPER_PASS = "plain hyper passing requests on"


class OtlpSink:
    """An OTLP/HTTP endpoint that takes every batch of spans and throws it away (answering 200,
    as a collector does), counting the batches and bytes: what exporting costs the server, not
    what a collector costs. A thread of this process (the driver's core)."""

    def __init__(self):
        import http.server
        import threading
        sink = self
        self.batches = 0
        self.bytes = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                sink.batches += 1
                sink.bytes += len(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

GET_ORDER = kit.tool_call("get_order", {"orderId": "ORD-10001"}, kit.meta({}))
BODY = json.dumps(GET_ORDER)
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    **kit.stateless_headers(GET_ORDER),
}


def call_once(port):
    """One raw HTTP/1.1 tools/call; returns True when the answer carries Ana Ruiz."""
    request = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(BODY)}\r\nConnection: close\r\n"
    request += "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items()) + "\r\n" + BODY
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(request.encode())
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            return b"200 OK" in data.split(b"\r\n", 1)[0] and b"Ana Ruiz" in data
    except OSError:
        return False


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(field + r":\s+(\d+)", f.read()).group(1))


def reply_body(port):
    """The bytes of our `get_order` answer (the ceiling serves them back)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=BODY.encode(), headers=HEADERS)
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.read()


def rust_cancels(load_client, port, seconds, ids, tmp, revision="2026"):
    """Completed confirmed cancels per second at 16 flows from the Rust client: (flows/s,
    failed, p99 ms)."""
    path = f"{tmp}/ids-{port}-{revision}"
    with open(path, "w") as f:
        f.write("\n".join(ids))
    out = subprocess.run(["taskset", "-c", "1", load_client, revision, str(port), str(seconds), "16", path],
                         check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    if result.get("ran_out_after_s") is not None:
        print(f"warning: the confirmed-cancel run on port {port} ran out of its {len(ids)} orders after "
              f"{result['ran_out_after_s']:.2f} of {seconds} s; its figure measures the start more than the "
              "steady state (raise --cancel-orders)", file=sys.stderr)
    return result["flows_per_s"], result["failed"], result["p99_ms"]


def wait_for_sessions(proc, port, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        async def probe():
            stream, _ = await bench_sessions.open_session(port)
            stream.writer.close()

        try:
            asyncio.run(probe())
            return
        except (OSError, KeyError, ValueError, asyncio.IncompleteReadError):
            time.sleep(0.2)
    raise SystemExit("server never opened a session")


def hold_2025(name, cmd, log, ids):
    """A fresh server holding one open 2025-11-25 confirmation per order (a session each, the
    `elicitation/create` unanswered): (held, RSS before MiB, RSS with them MiB)."""
    proc, port, _ = start(cmd, log)
    try:
        wait_for_sessions(proc, port)
        time.sleep(0.5)
        before = rss_kib(proc.pid) / 1024

        async def hold():
            held, refused = await bench_sessions.hold_confirmations(port, ids, asyncio.Event())
            with_them = rss_kib(proc.pid) / 1024
            for stream, _ in held:
                stream.writer.close()
            return len(held), with_them, refused

        count, with_them, refused = asyncio.run(hold())
        if refused:
            reasons = collections.Counter(refused).most_common(2)
            print(f"{name}: {len(refused)} of {len(ids)} sessions could not be held; the first reasons: {reasons}",
                  file=sys.stderr)
        return count, before, with_them
    finally:
        proc.terminate()
        proc.wait()


def hold_2026(port, pid, ids):
    """The first round of one 2026-07-28 confirmed cancel per order, never retried (an open
    confirmation each, for as long as the client keeps its state): (opened, RSS before MiB,
    RSS after MiB)."""
    before = rss_kib(pid) / 1024

    async def ask_all():
        queue = iter(ids)
        opened = 0

        async def worker():
            nonlocal opened
            connection = kit.Connection(port)
            for order in queue:
                _, answer = await connection.post(bench_cluster.call("cancel_order", {"orderId": order}))
                opened += answer.get("result", {}).get("resultType") == "input_required"

        await asyncio.gather(*(worker() for _ in range(16)))
        return opened

    opened = asyncio.run(ask_all())
    time.sleep(0.5)
    return opened, before, rss_kib(pid) / 1024


def recheck_wall_ms(port):
    """Wall time of one `recheck_shipments` call (every shipped order, the simulated carrier
    answering each in 30 ms), as a 2026-07-28 call without a progress token."""
    message = kit.tool_call("recheck_shipments", {}, kit.meta({}))
    headers = dict(HEADERS, **kit.stateless_headers(message))
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=json.dumps(message).encode(), headers=headers)
    t0 = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as r:
        text = r.read().decode()
    elapsed = (time.perf_counter() - t0) * 1000
    if "87" not in text:
        raise SystemExit(f"recheck_shipments did not recheck 87 orders: {text[:300]}")
    return elapsed


def export_orders(port, path, extra_ids):
    """The orders as our REST API shows them, plus `extra_ids` cancellable copies of ORD-10002,
    for the peers to serve the same data."""
    orders = []
    for status in ("PENDING", "PROCESSING", "SHIPPED", "DELIVERED", "CANCELLED"):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/orders?status={status}") as r:
            orders += json.load(r)
    template = next(o for o in orders if o["orderId"] == "ORD-10002")
    for order_id in extra_ids:
        orders.append(dict(copy.deepcopy(template), orderId=order_id))
    with open(path, "w") as f:
        json.dump(orders, f)


def start(cmd, log):
    """`cmd` (told to listen on port 0) pinned to core 0 with one tokio worker, its output in
    the file `log`: (proc, port, t0), once it says where it listens; t0 is when it was started.
    With one worker our servers (order-service, mcp-gateway) run on tokio's current-thread
    scheduler; the Rust peers and bare-order-server on the multi-thread one `#[tokio::main]`
    builds, with one worker thread."""
    # Logs as shipped but for dependencies at WARN; the order service's start-up lines (where
    # it listens) at INFO.
    env = dict(os.environ, TOKIO_WORKER_THREADS="1", RUST_LOG="warn,orders::app=info")
    t0 = time.perf_counter()
    try:
        proc, port = kit.start_server(["taskset", "-c", "0", *cmd], log, env=env)
    except kit.ServerFailed as failed:
        raise SystemExit(str(failed)) from None
    return proc, port, t0


# How long a server may take from its start to its first answer. A peer loads every order it
# serves before it answers, and the orders grow with the rounds: turbomcp took 9.9 s for
# 3 rounds' orders here, and `scripts/bench 2 5` stopped at a 10 s limit.
FIRST_ANSWER_LIMIT_S = 120


def release_profile(manifest):
    """The `[profile.release]` settings of a Cargo.toml, as `key=value` words."""
    with open(manifest, "rb") as f:
        profile = tomllib.load(f).get("profile", {}).get("release", {})
    return " ".join(f"{key}={value}" for key, value in sorted(profile.items())) or "(cargo's defaults)"


def first_answer(proc, t0, port):
    """Milliseconds from `t0` to the first answered call of `proc` on `port`."""
    deadline = t0 + FIRST_ANSWER_LIMIT_S
    while time.perf_counter() < deadline:
        if call_once(port):
            return (time.perf_counter() - t0) * 1000
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        time.sleep(0.001)
    # `start` runs every server under `taskset -c 0`: name the server, not taskset.
    args = [str(a) for a in proc.args]
    command = args[3] if args[:3] == ["taskset", "-c", "0"] else args[0]
    raise SystemExit(f"{command} (port {port}) never answered within {FIRST_ANSWER_LIMIT_S} s "
                     "of its start")


def load(oha, port, concurrency, seconds):
    cmd = ["taskset", "-c", "1", oha, "-z", f"{seconds}s", "-c", str(concurrency), "--no-tui",
           "--output-format", "json", "-m", "POST", "-d", BODY]
    for k, v in HEADERS.items():
        cmd += ["-H", f"{k}: {v}"]
    cmd.append(f"http://127.0.0.1:{port}/mcp")
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    summary, pct = out["summary"], out["latencyPercentiles"]
    codes = out.get("statusCodeDistribution", {})
    ok = codes.get("200", 0)
    total = sum(codes.values())
    return {
        "rps": summary["requestsPerSec"],
        "p50": pct["p50"] * 1000,
        "p99": pct["p99"] * 1000,
        "ok": f"{ok}/{total}",
    }


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--oha", required=True)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--python", help="the peers' Python (a venv with bench/peers/python's requirements)")
    parser.add_argument("--node", help="Node 22, for the TypeScript peer")
    parser.add_argument("--typescript", help="the TypeScript peer's folder (server.mjs and node_modules)")
    parser.add_argument("--turbomcp", help="the turbomcp peer's binary (bench/peers/turbomcp, release)")
    parser.add_argument("--before", help="the release folder of an earlier build (scripts/bench's BENCH_BEFORE): "
                        "its order-service and mcp-gateway measured beside ours, in the same rounds")
    parser.add_argument("--holds", type=int, default=10000, help="open confirmations per hold load")
    parser.add_argument("--cancel-seconds", type=float, default=2.0,
                        help="length of each confirmed-cancel run (each gets orders enough for it)")
    parser.add_argument("--cancel-orders", type=int, default=40000,
                        help="cancellable orders per confirmed-cancel run of a Rust server (the others get fewer)")
    args = parser.parse_args()
    # A ratio to the Rust peer compares the frameworks' code only if both are built alike.
    ours, peer = release_profile("Cargo.toml"), release_profile("bench/peers/turbomcp/Cargo.toml")
    if args.turbomcp and ours != peer:
        raise SystemExit(f"the turbomcp peer's release profile ({peer}, bench/peers/turbomcp/Cargo.toml) "
                         f"differs from ours ({ours}, Cargo.toml): build both alike")
    # The driver (its clients) and oha share core 1; every server gets core 0.
    os.sched_setaffinity(0, {1})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    load_client = f"{args.target}/examples/load"
    holds = args.holds
    servers = []
    ours_name, turbo_name = "order-service (backchannel + SQLite)", "turbomcp 4.0.0-alpha.5 (Rust)"
    sink = OtlpSink()
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/orders.sqlite"
        db = f"sqlite://{path}"
        subprocess.run([f"{args.target}/order-service", "reset", "--database", db], check=True,
                       stderr=subprocess.DEVNULL)
        # Cancellable copies of ORD-10002, so that no confirmed-cancel run runs out of orders
        # before its time is up (a run that does measures its start-up, and says so): per run
        # `per_run` for a Rust server; ours take [0, R) and the no-cache run [R, 2R) (R =
        # rounds x per_run), our 2025 flows the next `legacy_ids`, then our 2025 hold and our
        # 2026 hold `holds` each. The peers serve copies of the same ids in orders of their own:
        # turbomcp [0, max(R, holds)); the Python and TypeScript peers, which cancel below
        # 1,000 a second, [0, max(slow, holds)).
        per_run = args.cancel_orders
        rounds_ids = args.rounds * per_run
        legacy_ids = 40000
        slow = args.rounds * 5000
        # At the end, from the last: the gateway's, HAProxy alone's and plain hyper's 3 x slow
        # each (5,000 a second or more: 2 x slow ran out at 1.97 s of 2 s at 8d821e8), then the
        # cluster's slow (near 1,500 a second).
        # With --before, the earlier build's order service and gateway take theirs from the end too:
        # R before the gateway's 3 x slow each.
        before_ids = (rounds_ids + 3 * slow) if args.before else 0
        extra = bench_cluster.add_orders(path, tmp, 2 * rounds_ids + legacy_ids + 2 * holds + 10 * slow
                                         + before_ids)
        if args.before:
            before_orders, before_gateway = extra[-rounds_ids:], extra[-(rounds_ids + 3 * slow):-rounds_ids]
            extra = extra[:-before_ids]
        gateway_ids = extra[-3 * slow:]
        cluster_ids = extra[-4 * slow:-3 * slow]
        passthrough_ids = extra[-7 * slow:-4 * slow]
        hyper_pass_ids = extra[-10 * slow:-7 * slow]
        legacy_start = 2 * rounds_ids
        hold_2025_ids = extra[legacy_start + legacy_ids:legacy_start + legacy_ids + holds]
        hold_2026_ids = extra[legacy_start + legacy_ids + holds:legacy_start + legacy_ids + 2 * holds]
        peer_ids = extra[:holds]
        cap = str(holds + 1000)
        commands = [
            (ours_name, [f"{args.target}/order-service", "serve", "--database", db], extra[:rounds_ids]),
            ("order-service, no order cache",
             [f"{args.target}/order-service", "serve", "--database", db, "--no-order-cache"],
             extra[rounds_ids:2 * rounds_ids]),
            ("bare rmcp (in-memory map)", [f"{args.target}/bare-order-server"], None),
            # The same server with /metrics served, so its duration histograms are kept.
            (METRICS_ON, [f"{args.target}/order-service", "serve", "--database", db, "--metrics"], None),
            # The same server exporting a span per request (and its writes') over OTLP, and its
            # metrics (the histograms then kept, and sent every 60 s).
            (EXPORT_ON, ["env", f"OTEL_EXPORTER_OTLP_ENDPOINT={sink.url}",
                         f"{args.target}/order-service", "serve", "--database", db], None),
        ]
        orders_json = f"{tmp}/orders.json"
        slow_json = f"{tmp}/orders-slow-peers.json"
        sessions = {}  # name -> the command serving 2025-11-25 sessions with elicitation
        if args.python:
            commands.append(("Python mcp 2.3 (MCPServer)",
                             [args.python, "bench/peers/python/server.py", "{port}", slow_json], extra[:slow]))
            sessions["Python mcp 2.3 (MCPServer)"] = [args.python, "bench/peers/python/server.py", "{port}",
                                                     slow_json, "sessions"]
        if args.node and args.typescript:
            commands.append(("TypeScript SDK 2.4 on Node 22",
                             [args.node, f"{args.typescript}/server.mjs", "{port}", slow_json], extra[:slow]))
            sessions["TypeScript SDK 2.4 on Node 22"] = [args.node, f"{args.typescript}/server.mjs", "{port}",
                                                        slow_json, "sessions"]
        if args.turbomcp:
            commands.append((turbo_name, [args.turbomcp, "{port}", orders_json], extra[:rounds_ids]))
            # Its cap on requests in flight raised, as ours are, for the held questions.
            sessions[turbo_name] = [args.turbomcp, "{port}", orders_json, cap]
        sessions[ours_name] = [f"{args.target}/order-service", "serve", "--database", db, "--max-sessions", cap,
                               "--max-connections", cap]
        # The peers' copy of the orders, and the bytes of our answer for the ceiling, from a
        # process of its own (so exporting the orders leaves nothing in the measured servers).
        proc, port, t0 = start([f"{args.target}/order-service", "serve", "--database", db, "--listen", "127.0.0.1:0"],
                               f"{tmp}/export.log")
        try:
            first_answer(proc, t0, port)
            export_orders(port, orders_json, extra[:max(rounds_ids, holds)])
            export_orders(port, slow_json, extra[:max(slow, holds)])
            with open(f"{tmp}/reply.json", "wb") as f:
                f.write(reply_body(port))
        finally:
            proc.terminate()
            proc.wait()
        commands.insert(3, ("plain hyper, canned reply (ceiling)",
                            [f"{args.target}/examples/ceiling", "{port}", f"{tmp}/reply.json"], None))

        def on_port_0(cmd):
            if "{port}" in cmd:
                return ["0" if part == "{port}" else part for part in cmd]
            return [*cmd, "--listen", "127.0.0.1:0"]

        def log_of(name, load):
            return f"{tmp}/{re.sub('[^a-z0-9]+', '-', name.lower())}-{load}.log"

        # The gateway's upstream: another order service on the same database and core (so the
        # gateway's row costs what both processes take of core 0).
        upstream, upstream_port, t0 = start([f"{args.target}/order-service", "serve", "--database", db,
                                             "--listen", "127.0.0.1:0"], log_of("gateway upstream", "calls"))
        first_answer(upstream, t0, upstream_port)
        commands.insert(1, (GATEWAY, [f"{args.target}/mcp-gateway", "serve", "--upstream",
                                      f"orders=http://127.0.0.1:{upstream_port}/mcp"], gateway_ids))
        if args.before:
            # The earlier build beside ours: the same database, the same upstream, the same rounds.
            commands.insert(1, (BEFORE, [f"{args.before}/order-service", "serve", "--database", db],
                                before_orders))
            commands.insert(3, (GATEWAY_BEFORE, [f"{args.before}/mcp-gateway", "serve", "--upstream",
                                                 f"orders=http://127.0.0.1:{upstream_port}/mcp"], before_gateway))
        # The same gateway as a cluster (scripts/gateway-cluster's shape): three instances sharing a
        # key ring, HAProxy round robin in front (deploy/haproxy-gateway.cfg), all on core 0 too.
        cluster, balancer_pid, passthrough_pid = [], None, None
        try:
            for name, cmd, ids in commands:
                proc, port, t0 = start(on_port_0(cmd), log_of(name, "calls"))
                servers.append({"name": name, "proc": proc, "port": port, "ids": ids,
                                "first_ms": first_answer(proc, t0, port), "runs": {1: [], 16: []}})
            keys = f"{tmp}/state-keys"
            with open(os.open(keys, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write(f"current k1 {secrets.token_hex(32)}\n")
            lines, started = "", None
            for i in range(3):
                proc, port, t0 = start([f"{args.target}/mcp-gateway", "serve", "--upstream",
                                        f"orders=http://127.0.0.1:{upstream_port}/mcp", "--state-keys", keys,
                                        "--listen", "127.0.0.1:0"], log_of(f"{GATEWAY_CLUSTER} {i + 1}", "calls"))
                cluster.append(proc)
                started = started or t0
                lines += f"    server gateway-{i + 1} 127.0.0.1:{port} check\n"
            port, balancer_pid = bench_cluster.start_balancer("deploy/haproxy-gateway.cfg", lines, tmp,
                                                              "gateway-cluster", cpu=0)
            servers.append({"name": GATEWAY_CLUSTER, "proc": cluster[0], "port": port, "ids": cluster_ids,
                            "pids": [p.pid for p in cluster] + [balancer_pid],
                            "first_ms": first_answer(cluster[0], started, port), "runs": {1: [], 16: []}})
            # The floor under both: HAProxy alone in front of the gateway's upstream, on core 0 too,
            # doing no MCP work (bench/haproxy-passthrough.cfg, backend connections kept).
            started = time.perf_counter()
            port, passthrough_pid = bench_cluster.start_balancer(
                "bench/haproxy-passthrough.cfg", f"    server upstream 127.0.0.1:{upstream_port}\n", tmp,
                "passthrough", cpu=0)
            servers.append({"name": PASSTHROUGH, "proc": upstream, "port": port, "ids": passthrough_ids,
                            "pids": [passthrough_pid], "first_ms": first_answer(upstream, started, port),
                            "runs": {1: [], 16: []}})
            # The same floor on our own stack: plain hyper passing requests on (examples/passthrough.rs).
            proc, port, t0 = start([f"{args.target}/examples/passthrough", "0",
                                    f"http://127.0.0.1:{upstream_port}"], log_of(HYPER_PASS, "calls"))
            servers.append({"name": HYPER_PASS, "proc": proc, "port": port, "ids": hyper_pass_ids,
                            "first_ms": first_answer(proc, t0, port), "runs": {1: [], 16: []}})
            time.sleep(1.0)
            for server in servers:
                server["idle_mib"] = sum(rss_kib(pid) for pid in server.get("pids", [server["proc"].pid])) / 1024
                load(args.oha, server["port"], 16, 2)  # warm-up, discarded
            # Rounds interleave the servers so drift in the machine's speed hits all of them.
            for _ in range(args.rounds):
                for server in servers:
                    for c in (1, 16):
                        server["runs"][c].append(load(args.oha, server["port"], c, args.seconds))
            recheck_ms = recheck_wall_ms(servers[0]["port"])
            legacy = rust_cancels(load_client, servers[0]["port"], args.cancel_seconds,
                                  extra[legacy_start:legacy_start + legacy_ids], tmp, "2025")
            # Cancels interleaved too: each server's ids split across the rounds.
            for server in servers:
                server["cancel_runs"] = []
            for r in range(args.rounds):
                for server in servers:
                    if server["ids"] is not None:
                        share = len(server["ids"]) // args.rounds
                        ids = server["ids"][r * share:(r + 1) * share]
                        server["cancel_runs"].append(
                            rust_cancels(load_client, server["port"], args.cancel_seconds, ids, tmp))
            for server in servers:
                server["peak_mib"] = sum(rss_kib(pid, "VmHWM")
                                         for pid in server.get("pids", [server["proc"].pid])) / 1024
        finally:
            for server in servers:
                server["proc"].terminate()
                server["proc"].wait()
            for proc in cluster:
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait()
            for pid in (balancer_pid, passthrough_pid):
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
            upstream.terminate()
            upstream.wait()
        # Open confirmations, each load on a fresh process.
        held_2025, held_2026 = {}, {}
        for name, cmd in sessions.items():
            ids = hold_2025_ids if name == ours_name else peer_ids
            held_2025[name] = hold_2025(name, on_port_0(cmd), log_of(name, "hold-2025"), ids)
        for name, cmd, ids in commands:
            # (The no-cache run shares our database, and holds nothing different.)
            if ids is None or name in ("order-service, no order cache", GATEWAY, BEFORE, GATEWAY_BEFORE):
                continue
            proc, port, t0 = start(on_port_0(cmd), log_of(name, "hold-2026"))
            try:
                first_answer(proc, t0, port)
                time.sleep(0.5)
                ids = hold_2026_ids if name == ours_name else peer_ids
                held_2026[name] = hold_2026(port, proc.pid, ids)
            finally:
                proc.terminate()
                proc.wait()

    by_name = {server["name"]: server for server in servers}
    print(f"{os.cpu_count()} cores. tools/call over 2026-07-28 HTTP; get_order: median of {args.rounds} "
          f"interleaved runs of {args.seconds} s (oha); confirmed cancels: median of {args.rounds} interleaved "
          f"runs of {args.cancel_seconds} s, 16 flows from examples/load.rs, each a fresh cancellable order. Every "
          "server pinned to core 0 (tokio: 1 worker); the clients on core 1. Default settings (logs as shipped). "
          f"Rust servers built with the release profile {release_profile('Cargo.toml')}, the turbomcp peer "
          "with the same.")
    print(f"{'server':38} {'c':>3} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}  all runs' req/s")
    summary = {}
    for server in servers:
        for c, runs in server["runs"].items():
            rps = median([r["rps"] for r in runs])
            p50 = median([r["p50"] for r in runs])
            p99 = median([r["p99"] for r in runs])
            bad = [r["ok"] for r in runs if r["ok"].split("/")[0] != r["ok"].split("/")[1]]
            summary[(server["name"], c)] = (rps, p50, p99)
            runs_text = " ".join(f"{r['rps']:.0f}" for r in runs)
            print(f"{server['name']:38} {c:>3} {rps:>9.0f} {p50:>8.3f} {p99:>8.3f}  {runs_text}"
                  + (f"  NON-200: {bad}" if bad else ""))
    print(f"{'server':38} {'first call ms':>13} {'idle MiB':>9} {'peak MiB':>9} {'cancels/s':>10} {'p99 ms':>7} {'failed':>6}  all runs")
    cancels = {}
    for server in servers:
        runs = server.get("cancel_runs") or []
        flows = median([r[0] for r in runs]) if runs else float("nan")
        p99 = median([r[2] for r in runs]) if runs else float("nan")
        failed = sum(r[1] for r in runs)
        cancels[server["name"]] = flows
        runs_text = " ".join(f"{r[0]:.0f}" for r in runs)
        print(f"{server['name']:38} {server['first_ms']:>13.1f} {server['idle_mib']:>9.1f} "
              f"{server['peak_mib']:>9.1f} {flows:>10.0f} {p99:>7.2f} {failed:>6}  {runs_text}")
    print(f"{'open confirmations':38} {'2025: held':>10} {'RSS MiB':>17} {'KiB each':>9}   {'2026: opened':>12} {'RSS MiB':>17}")
    for name in [s["name"] for s in servers if s["name"] in held_2025 or s["name"] in held_2026]:
        a = held_2025.get(name)
        b = held_2026.get(name)
        left = (f"{a[0]:>10} {a[1]:>7.1f} -> {a[2]:>7.1f} {1024 * (a[2] - a[1]) / max(a[0], 1):>9.1f}"
                if a else f"{'-':>10} {'':>17} {'':>9}")
        right = f"{b[0]:>12} {b[1]:>7.1f} -> {b[2]:>7.1f} (+{b[2] - b[1]:.1f})" if b else ""
        print(f"{name:38} {left}   {right}")
    print(f"2025-11-25 confirmed cancels over sessions (elicitation answered by a POST), ours, 16 flows: "
          f"{legacy[0]:.0f}/s, p99 {legacy[2]:.2f} ms, {legacy[1]} failed")
    print(f"recheck_shipments over the 87 shipped orders, carrier latency 30 ms each: {recheck_ms:.0f} ms wall")
    if turbo_name in by_name:
        ours_c1, ours_c16 = summary[(ours_name, 1)], summary[(ours_name, 16)]
        turbo_c1, turbo_c16 = summary[(turbo_name, 1)], summary[(turbo_name, 16)]
        print(f"get_order ours / turbomcp: c=1 {ours_c1[0] / turbo_c1[0]:.2f}x, c=16 {ours_c16[0] / turbo_c16[0]:.2f}x "
              f"(target >= 1.25x); p99 at c=16 {ours_c16[2]:.2f} vs {turbo_c16[2]:.2f} ms (target: no higher)")
        ours_p99 = median([r[2] for r in by_name[ours_name]["cancel_runs"]])
        turbo_p99 = median([r[2] for r in by_name[turbo_name]["cancel_runs"]])
        print(f"confirmed cancels ours / turbomcp: {cancels[ours_name] / max(cancels[turbo_name], 1e-9):.2f}x "
              f"(target >= 1.5x; ours sealed and on disk), ours / our get_order at c=16: "
              f"{cancels[ours_name] / ours_c16[0]:.2f} (target >= 0.25); p99 {ours_p99:.2f} vs {turbo_p99:.2f} ms "
              "(target: no higher)")
    peers_2025 = {n: v for n, v in held_2025.items() if n != ours_name and v[0] > 0}
    if ours_name in held_2025 and peers_2025:
        best = min(peers_2025, key=lambda n: peers_2025[n][2] - peers_2025[n][1])
        ours = held_2025[ours_name]
        print(f"{holds} open 2025 confirmations, extra RSS: ours {ours[2] - ours[1]:.0f} MiB, best peer ({best}) "
              f"{peers_2025[best][2] - peers_2025[best][1]:.0f} MiB (target: ours no more)")
    if ours_name in held_2026:
        ours = held_2026[ours_name]
        print(f"{holds} open 2026 confirmations, extra RSS: ours {ours[2] - ours[1]:.1f} MiB (target < 5)")
    if METRICS_ON in by_name:
        on = [summary[(METRICS_ON, c)][0] / summary[(ours_name, c)][0] for c in (1, 16)]
        print(f"get_order with --metrics / without: c=1 {on[0]:.2f}, c=16 {on[1]:.2f} "
              "(the cost of keeping the duration histograms)")
    if EXPORT_ON in by_name:
        on = [summary[(EXPORT_ON, c)][0] / summary[(ours_name, c)][0] for c in (1, 16)]
        print(f"get_order with spans and metrics exported / without: c=1 {on[0]:.2f}, c=16 {on[1]:.2f} "
              f"(OTLP/HTTP to a sink that discards them: {sink.batches} batches, {sink.bytes / 1e6:.1f} MB)")
    gateways = [
        (GATEWAY, "through mcp-gateway / direct (a 2026-07-28 client, the gateway and its upstream order "
         "service sharing core 0)", "one upstream request per round: the upstream's round passed through, its "
         "state sealed inside the gateway's"),
        (GATEWAY_CLUSTER, f"through {GATEWAY_CLUSTER} / direct (round robin, every process on core 0; RSS the "
         "instances' and HAProxy's)", "a round's retry may reach another instance: the state is sealed under "
         "the shared ring"),
        (PASSTHROUGH, f"through {PASSTHROUGH} / direct (sharing core 0 with it, backend connections kept)",
         "no MCP work at all: the floor under any proxy's ratio here"),
        (HYPER_PASS, f"through {HYPER_PASS} / direct (sharing core 0 with it, pooled connections)",
         "no MCP work at all, on the gateway's own stack"),
    ]
    for name, what, why in gateways:
        if name in by_name:
            ratio = [summary[(name, c)][0] / summary[(ours_name, c)][0] for c in (1, 16)]
            print(f"{what}: get_order c=1 {ratio[0]:.2f}, c=16 {ratio[1]:.2f}; confirmed cancels "
                  f"{cancels[name] / max(cancels[ours_name], 1e-9):.2f} ({why})")
    for floor in (PASSTHROUGH, HYPER_PASS):
        if GATEWAY in by_name and floor in by_name:
            ratio = [summary[(GATEWAY, c)][0] / summary[(floor, c)][0] for c in (1, 16)]
            print(f"through mcp-gateway / through {floor}: get_order c=1 {ratio[0]:.2f}, c=16 {ratio[1]:.2f}; "
                  f"confirmed cancels {cancels[GATEWAY] / max(cancels[floor], 1e-9):.2f}")
    for now, then in ((ours_name, BEFORE), (GATEWAY, GATEWAY_BEFORE)):
        if then in by_name:
            ratio = [summary[(now, c)][0] / summary[(then, c)][0] for c in (1, 16)]
            p99 = [summary[(now, c)][2] / summary[(then, c)][2] for c in (1, 16)]
            print(f"{now} / {then}: get_order c=1 {ratio[0]:.2f}, c=16 {ratio[1]:.2f} (p99 {p99[0]:.2f}, "
                  f"{p99[1]:.2f}); confirmed cancels {cancels[now] / max(cancels[then], 1e-9):.2f}; idle MiB "
                  f"{by_name[now]['idle_mib']:.1f} vs {by_name[then]['idle_mib']:.1f}")
    if "bare rmcp (in-memory map)" in by_name:
        print(f"get_order at c=16: ours / bare rmcp = {summary[(ours_name, 16)][0] / summary[('bare rmcp (in-memory map)', 16)][0]:.2f}, "
              f"ours / ceiling = {summary[(ours_name, 16)][0] / summary[('plain hyper, canned reply (ceiling)', 16)][0]:.2f}")


if __name__ == "__main__":
    main()
