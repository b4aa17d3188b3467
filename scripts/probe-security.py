#!/usr/bin/env python3
"""Figures for the security limits, against release builds on loopback (not a test: it prints
numbers). Run by scripts/probe-security, which builds and starts the servers:

    probe-security.py MOVIEDB_URL MOVIEDB_PID ORDERS_URL ORDERS_PID

Prints one line per figure:
- the CPU the movie database spends on a 985 KB sampling answer with 140,000 themes, and how
  long a GraphQL query sent at the same time waits;
- how long a 2,000-alias query takes to be refused;
- the RSS added by 48 concurrent wrong logins;
- whether a new client is served while 1,100 idle connections are open (the server started
  with a soft limit of 1,024 open files);
- how many of 3,000 `initialize`s are refused once the session cap (1,000) is reached.
"""
import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse

import kit

MOVIEDB, MOVIEDB_PID, ORDERS, ORDERS_PID = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
TICKS = 100  # USER_HZ on Linux


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def post(url, path, body, headers=None, timeout=60):
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    all_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    all_headers.update(headers or {})
    conn.request("POST", path, data, all_headers)
    response = conn.getresponse()
    text = response.read().decode("utf-8", "replace")
    conn.close()
    return response.status, text, dict(response.getheaders())


def mcp_call(tool, params):
    arguments = params.get("arguments", {})
    extra = {k: v for k, v in params.items() if k != "arguments"}
    message = kit.tool_call(tool, arguments, kit.meta({"sampling": {}}, "probe"), extra)
    status, text, _ = post(MOVIEDB, "/mcp", message, kit.stateless_headers(message))
    return kit.response(text)


def graphql(query):
    started = time.perf_counter()
    status, text, _ = post(MOVIEDB, "/graphql", {"query": query})
    return status, (time.perf_counter() - started) * 1000, text


def huge_answer():
    args = {"arguments": {"movieId": "38"}}
    round_ = mcp_call("summarizeMovieReviews", args)
    state = round_["result"]["requestState"]
    themes = ";".join(f"t{i}" for i in range(140_000))
    reply = "SUMMARY: Fine.\nTHEMES: " + themes
    answer = {"summary": {"role": "assistant", "model": "probe", "content": {"type": "text", "text": reply}}}
    size = len(reply)
    waits = []

    def query_meanwhile():
        time.sleep(0.005)
        waits.append(graphql("{ movie(id: 1) { title } }")[1])

    before = cpu_seconds(MOVIEDB_PID)
    other = threading.Thread(target=query_meanwhile)
    other.start()
    started = time.perf_counter()
    result = mcp_call("summarizeMovieReviews", dict(args, requestState=state, inputResponses=answer))
    wall = (time.perf_counter() - started) * 1000
    other.join()
    cpu = (cpu_seconds(MOVIEDB_PID) - before) * 1000
    themes = len(result["result"]["structuredContent"]["themes"])
    print(f"huge sampling answer: {size/1000:.0f} KB, 140,000 themes -> {themes} kept; "
          f"server CPU {cpu:.0f} ms (10 ms ticks, includes the concurrent query), wall {wall:.0f} ms; "
          f"concurrent GraphQL query answered in {waits[0]:.1f} ms")


def alias_flood():
    flood = " ".join(f"a{i}: moviesAll {{ title cast {{ characterName }} }}" for i in range(2000))
    status, ms, text = graphql("{ " + flood + " }")
    print(f"2,000-alias query ({len(flood)/1000:.0f} KB): HTTP {status} in {ms:.1f} ms: "
          f"{json.loads(text)['errors'][0]['message']}")


def wrong_logins():
    before = rss_mb(MOVIEDB_PID)
    peak = [before]
    done = threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb(MOVIEDB_PID))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    outcomes = []

    def login(i):
        q = 'mutation { login(input: {username: "mara", password: "wrong%d"}) { token } }' % i
        _, _, text = graphql(q)
        outcomes.append(json.loads(text)["errors"][0]["extensions"]["classification"])

    threads = [threading.Thread(target=login, args=(i,)) for i in range(48)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    done.set()
    watcher.join()
    after = rss_mb(MOVIEDB_PID)
    counts = {c: outcomes.count(c) for c in sorted(set(outcomes))}
    print(f"48 concurrent wrong logins: answered in {wall:.1f} s {counts}; RSS {before:.0f} MB before, "
          f"peak {peak[0]:.0f} MB (+{peak[0]-before:.0f} MB), {after:.0f} MB after")


def idle_sockets():
    parts = urllib.parse.urlsplit(ORDERS)
    idle = []
    for _ in range(1100):
        s = socket.create_connection((parts.hostname, parts.port))
        idle.append(s)
    started = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("GET", "/api/orders/ORD-10001")
    status = conn.getresponse().status
    ms = (time.perf_counter() - started) * 1000
    print(f"1,100 idle connections held (server started with a 1,024 soft file limit): "
          f"a new client got HTTP {status} in {ms:.1f} ms")
    for s in idle:
        s.close()


def session_cap():
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}
    before = rss_mb(ORDERS_PID)
    counts = {}
    started = time.perf_counter()
    for _ in range(3000):
        status, _, _ = post(ORDERS, "/mcp", body)
        counts[status] = counts.get(status, 0) + 1
    wall = time.perf_counter() - started
    print(f"3,000 initializes in {wall:.1f} s: {counts} (cap 1,000); orders RSS {before:.0f} -> "
          f"{rss_mb(ORDERS_PID):.0f} MB")


huge_answer()
alias_flood()
wrong_logins()
idle_sockets()
session_cap()
