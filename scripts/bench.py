"""Driver of scripts/bench: start each server pinned to core 0, measure, load it from core 1."""

import argparse
import json
import os
import re
import socket
import subprocess
import tempfile
import time

BODY = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "tools/call",
    "params": {
        "name": "get_order", "arguments": {"orderId": "ORD-10001"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
        },
    },
})
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "get_order",
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def start(cmd):
    env = dict(os.environ, TOKIO_WORKER_THREADS="1", RUST_LOG="warn")
    t0 = time.perf_counter()
    proc = subprocess.Popen(["taskset", "-c", "0", *cmd], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, t0


def first_answer(proc, t0, port):
    deadline = t0 + 10
    while time.perf_counter() < deadline:
        if call_once(port):
            return (time.perf_counter() - t0) * 1000
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        time.sleep(0.001)
    raise SystemExit("server never answered")


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
    args = parser.parse_args()
    servers = []
    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite://{tmp}/orders.sqlite"
        subprocess.run([f"{args.target}/order-service", "reset", "--database", db], check=True,
                       stderr=subprocess.DEVNULL)
        commands = [
            ("order-service (backchannel + SQLite)", [f"{args.target}/order-service", "serve", "--database", db]),
            ("order-service, no order cache",
             [f"{args.target}/order-service", "serve", "--database", db, "--no-order-cache"]),
            ("bare rmcp (in-memory map)", [f"{args.target}/bare-order-server"]),
        ]
        try:
            for name, cmd in commands:
                port = free_port()
                proc, t0 = start([*cmd, "--listen", f"127.0.0.1:{port}"])
                servers.append({"name": name, "proc": proc, "port": port,
                                "first_ms": first_answer(proc, t0, port), "runs": {1: [], 16: []}})
            time.sleep(1.0)
            for server in servers:
                server["idle_mib"] = rss_kib(server["proc"].pid) / 1024
                load(args.oha, server["port"], 16, 2)  # warm-up, discarded
            # Rounds interleave the servers so drift in the machine's speed hits all of them.
            for _ in range(args.rounds):
                for server in servers:
                    for c in (1, 16):
                        server["runs"][c].append(load(args.oha, server["port"], c, args.seconds))
            for server in servers:
                server["peak_mib"] = rss_kib(server["proc"].pid) / 1024
        finally:
            for server in servers:
                server["proc"].terminate()
                server["proc"].wait()

    print(f"tools/call get_order, 2026-07-28 HTTP; median of {args.rounds} interleaved runs of {args.seconds} s;"
          " server on core 0 (1 tokio worker), oha on core 1")
    print(f"{'server':40} {'c':>3} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}  all runs' req/s")
    summary = {}
    for server in servers:
        for c, runs in server["runs"].items():
            rps = median([r["rps"] for r in runs])
            p50 = median([r["p50"] for r in runs])
            p99 = median([r["p99"] for r in runs])
            bad = [r["ok"] for r in runs if r["ok"].split("/")[0] != r["ok"].split("/")[1]]
            summary[(server["name"], c)] = (rps, p50)
            runs_text = " ".join(f"{r['rps']:.0f}" for r in runs)
            print(f"{server['name']:40} {c:>3} {rps:>9.0f} {p50:>8.3f} {p99:>8.3f}  {runs_text}"
                  + (f"  NON-200: {bad}" if bad else ""))
    for server in servers:
        print(f"{server['name']:40} first answered call {server['first_ms']:.1f} ms after start, "
              f"idle RSS {server['idle_mib']:.1f} MiB, after load {server['peak_mib']:.1f} MiB")
    ours, bare = servers[0], servers[2]
    ratio = summary[(ours["name"], 16)][0] / summary[(bare["name"], 16)][0]
    print(f"throughput at c=16: ours / bare = {ratio:.2f} (target >= 0.90)")
    print(f"targets: p50 at c=1 {summary[(ours['name'], 1)][1]:.3f} ms (<= 0.2), idle RSS {ours['idle_mib']:.1f} MiB"
          f" (<= 15), first call {ours['first_ms']:.1f} ms (<= 50)")


if __name__ == "__main__":
    main()
