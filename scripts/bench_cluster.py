"""Driver of scripts/bench-cluster: order services behind HAProxy, measured from one asyncio
client with keep-alive connections.

For each set-up (1, 2 and 3 instances on one PostgreSQL database, then 1 instance on a SQLite
file), all behind HAProxy: `get_order` at concurrency 16 (throughput, p50, p99), then the
2026-07-28 confirmed cancel (a round and its retry with the answer, each POST to whichever
instance the balancer picks) as completed flows per second at concurrency 16, each flow on an
order of its own (the benchmark adds cancellable orders to the database first).
"""

import argparse
import asyncio
import os
import re
import resource
import signal
import socket
import subprocess
import tempfile
import time

import kit

META = kit.meta({"elicitation": {"form": {}}})
EXTRA_ORDERS = 20000


def call(name, arguments, extra=None):
    return kit.tool_call(name, arguments, META, extra)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


async def get_order_load(port, seconds, concurrency):
    latencies, errors = [], 0
    deadline = time.perf_counter() + seconds

    async def worker():
        nonlocal errors
        connection = kit.Connection(port)
        message = call("get_order", {"orderId": "ORD-10001"})
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            try:
                status, answer = await connection.post(message)
                ok = status == 200 and answer.get("result", {}).get("isError") is False
            except (OSError, asyncio.IncompleteReadError, ValueError):
                ok, connection = False, kit.Connection(port)
            latencies.append(time.perf_counter() - t0) if ok else None
            errors += 0 if ok else 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - start
    return len(latencies) / elapsed, percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000, errors


async def cancel_load(port, seconds, concurrency, orders):
    done, failed = 0, 0
    deadline = time.perf_counter() + seconds
    pool = iter(orders)

    async def worker():
        nonlocal done, failed
        connection = kit.Connection(port)
        while time.perf_counter() < deadline:
            order = next(pool, None)
            if order is None:
                return
            try:
                _, round_ = await connection.post(call("cancel_order", {"orderId": order}))
                # Yes to every question the round asks, under whatever key the server chose.
                asked = round_["result"]["inputRequests"]
                yes = {key: {"action": "accept", "content": {"confirmed": True}} for key in asked}
                retry = {"inputResponses": yes}
                if "requestState" in round_["result"]:
                    retry["requestState"] = round_["result"]["requestState"]
                _, final = await connection.post(call("cancel_order", {"orderId": order}, retry))
                ok = "is cancelled" in final["result"]["content"][0]["text"]
            except (OSError, KeyError, IndexError, asyncio.IncompleteReadError, ValueError):
                ok, connection = False, kit.Connection(port)
            done += 1 if ok else 0
            failed += 0 if ok else 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / (time.perf_counter() - start), failed


def client_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def wait_healthy(port, timeout=60):
    """Wait until 127.0.0.1:`port` answers /healthz with 200 (kit.ServerFailed when the time is up)."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
                if b"200" in s.recv(100).split(b"\r\n")[0]:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise kit.ServerFailed(f"port {port} did not become healthy")


def add_orders(database, work, count=EXTRA_ORDERS):
    """`count` cancellable copies of ORD-10002 (with its lines), ids ORD-9000001 on."""
    numbers = (f"WITH RECURSIVE numbers(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers "
               f"WHERE n < {count}) ")
    statements = (
        numbers + "INSERT INTO orders (order_id, status, customer_id, total_cents, created_at, last_updated) "
        "SELECT 'ORD-' || (9000000 + n), 'PENDING', customer_id, total_cents, created_at, last_updated "
        "FROM orders, numbers WHERE order_id = 'ORD-10002';\n"
        + numbers + "INSERT INTO order_items (order_id, line, product_id, product_name, quantity, unit_price_cents) "
        "SELECT 'ORD-' || (9000000 + n), line, product_id, product_name, quantity, unit_price_cents "
        "FROM order_items, numbers WHERE order_id = 'ORD-10002';\n")
    if database.startswith("postgres"):
        subprocess.run(["psql", "-q", database], input=statements, text=True, check=True)
    else:
        import sqlite3
        connection = sqlite3.connect(database.removeprefix("sqlite://"))
        connection.executescript(statements)
        connection.commit()
        connection.close()
    return [f"ORD-{9000000 + n}" for n in range(1, count + 1)]


def start_balancer(template, servers, work, label, cpu=None):
    """HAProxy from `template` (its @PORT@, @STATS@, @SERVERS@ and @ROUTES@ filled in; `servers`
    the `server` lines) as a daemon on a free port, stats on the next, pinned to `cpu` when
    given: (port, pid), once it answers /healthz."""
    pids = []

    def on(port):
        # It exits non-zero once it cannot bind, and zero once it listens.
        config = open(template).read()
        config = config.replace("@PORT@", str(port)).replace("@STATS@", str(port + 1))
        config = config.replace("@SERVERS@\n", servers).replace("@ROUTES@\n", "")
        cfg = os.path.join(work, f"{label}.cfg")
        open(cfg, "w").write(config)
        pidfile = os.path.join(work, f"{label}-haproxy.pid")
        pinned = ["taskset", "-c", str(cpu)] if cpu is not None else []
        done = subprocess.run([*pinned, "haproxy", "-f", cfg, "-D", "-p", pidfile], capture_output=True, text=True)
        if done.returncode != 0:
            if re.search("cannot bind|Address already in use", done.stdout + done.stderr):
                raise kit.PortTaken()
            raise kit.ServerFailed(f"haproxy exited with {done.returncode}:\n{done.stderr}")
        pid = int(open(pidfile).read().split()[0])
        try:
            wait_healthy(port)
        except kit.ServerFailed:
            # Not left running behind the caller's back.
            os.kill(pid, signal.SIGKILL)
            raise
        pids.append(pid)
        return port

    port = kit.on_a_port(on)
    return port, pids[-1]


def run_setup(label, binary, database, instances, keys, work, seconds):
    procs = []
    daemons = []
    servers = ""
    try:
        for i in range(instances):
            proc, port = kit.start_server(
                [binary, "serve", "--listen", "127.0.0.1:0", "--database", database,
                 "--state-keys", keys, "--carrier-latency-ms", "0"],
                os.path.join(work, f"{label}-{i}.log"), env=dict(os.environ, RUST_LOG="warn,orders::app=info"))
            procs.append(proc)
            wait_healthy(port)
            servers += f"    server order-{i + 1} 127.0.0.1:{port} check\n"

        balancer, pid = start_balancer("deploy/haproxy.cfg", servers, work, label)
        daemons.append(pid)
        orders = add_orders(database, work)
        asyncio.run(get_order_load(balancer, 1, 16))  # warm up
        cpu0 = client_cpu()
        rps, p50, p99, errors = asyncio.run(get_order_load(balancer, seconds, 16))
        # The share of one core the client itself used: near 1.0, the client is the limit.
        client = (client_cpu() - cpu0) / seconds
        flows, failed = asyncio.run(cancel_load(balancer, seconds, 16, orders))
        return rps, p50, p99, errors, client, flows, failed
    finally:
        for pid in daemons:
            os.kill(pid, signal.SIGKILL)
        for proc in procs:
            proc.kill()
            proc.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--postgres", required=True, help="server URL, postgres://user@host:port")
    parser.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-cluster.")
    keys = os.path.join(work, "state-keys")
    open(keys, "w").write("current k1 " + os.urandom(32).hex() + "\n")
    rows = []
    for n in (1, 2, 3):
        name = f"bench_{n}_{os.getpid()}"
        subprocess.run(["psql", "-q", f"{args.postgres}/postgres", "-c", f"CREATE DATABASE {name}"], check=True)
        rows.append((f"PostgreSQL, {n} instance{'s' if n > 1 else ''}",
                     run_setup(f"pg{n}", args.binary, f"{args.postgres}/{name}", n, keys, work, args.seconds)))
    sqlite = f"sqlite://{os.path.join(work, 'orders.sqlite')}"
    rows.append(("SQLite, 1 instance", run_setup("sqlite", args.binary, sqlite, 1, keys, work, args.seconds)))
    print(f"order-service behind HAProxy, {os.cpu_count()} cores, one asyncio client process, "
          f"concurrency 16, {args.seconds:g} s per load, release build, no pinning")
    print(f"{'set-up':<26} {'get_order req/s':>15} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} "
          f"{'client CPU':>10} {'2026 cancels/s':>15} {'failed':>6}")
    for label, (rps, p50, p99, errors, client, flows, failed) in rows:
        print(f"{label:<26} {rps:>15.0f} {p50:>7.2f} {p99:>7.2f} {errors:>6} {client:>10.2f} "
              f"{flows:>15.0f} {failed:>6}")


if __name__ == "__main__":
    main()
