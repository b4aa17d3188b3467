"""The clients lane: MCP client libraries nobody here wrote, each pinned in a virtual
environment of its own (tools/clients/NAME.txt, installed by scripts/clients), drive our servers
on each revision the client speaks, directly and through mcp-gateway (in front of an order service
limited to the other revision). What each is asked is scripts/clients-lane/lane.py; a driver per client
(scripts/clients-lane/NAME_client.py) adapts it. Every run gets servers and databases of its own.

Usage: python3 clients.py --target DIR --client NAME=PYTHON [--client ...] [--results DIR]
Prints a table (client, revision, route, check, result: pass, FAIL, or not supported by the
client with the reason) and a last line "clients lane: N passed, M failed, K not supported";
exits 1 if any check failed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kit import start_server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The revisions each client speaks (its driver says how it asks for one).
REVISIONS = {
    "fastmcp": ["2025-11-25", "2026-07-28"],
    "fastmcp-tasks": ["2026-07-28"],
    "python-sdk": ["2025-11-25", "2026-07-28"],
    "pydantic-ai": ["auto"],
    "openai-agents": ["2025-11-25"],
    "langchain": ["2025-11-25"],
    "llamaindex": ["2025-11-25"],
    "fast-agent": ["2025-11-25"],
    "ai-sdk": ["2025-11-25", "2026-07-28"],
}
# Clients run on some parts only. fastmcp-tasks is in the lane for tasks (the conformance
# server's task tools); FastMCP 4.2.3 covers the rest. With the tasks extension declared, the order
# service runs a recheck and a cancellation as tasks, whose progress is the task's status message
# (tasks/get) that FastMCP's resolver reads and does not surface.
ONLY_PARTS = {"fastmcp-tasks": {"conformance"}}
# The clients run through mcp-remote beside mcp-gateway (one instance and three behind HAProxy),
# to compare what each bridges: the Python SDK (both revisions) and fastmcp-tasks (tasks).
COMPARED = {"python-sdk", "fastmcp-tasks"}
# Through the gateway the order service speaks only the other revision ('auto': a client that
# picks its own; the order service behind the gateway is limited to 2025-11-25 for it).
# The version of mcp-remote tools/node pins (the bridge compared with mcp-gateway).
MCP_REMOTE = "0.15.1"
OTHER = {"2025-11-25": "2026-07-28", "2026-07-28": "2025-11-25", "auto": "2025-11-25"}


class Servers:
    """Processes started for one run, stopped together."""

    def __init__(self, target, tmp):
        self.target, self.tmp, self.procs, self.clusters = target, tmp, [], []

    def start(self, name, args):
        proc, port = start_server([f"{self.target}/{args[0]}", *args[1:]],
                                  os.path.join(self.tmp, f"{name}.log"))
        self.procs.append(proc)
        return f"http://127.0.0.1:{port}"

    def cluster(self, url):
        """Three mcp-gateway instances in front of `url`, sharing a key ring, behind HAProxy
        round robin (scripts/gateway-cluster); the balancer's URL."""
        env = {**os.environ, "GATEWAY_CLUSTER_DIR": os.path.join(self.tmp, "gateway-cluster")}
        self.clusters.append(env)
        with open(os.path.join(self.tmp, "gateway-cluster.log"), "w") as log:
            out = subprocess.run([os.path.join(HERE, "gateway-cluster"), "up", "3", "--",
                                  "--upstream", f"upstream={url}"], env=env, stdout=subprocess.PIPE,
                                 stderr=log, text=True, timeout=300, check=True).stdout
        return next(line.split()[1] for line in out.splitlines() if line.startswith("balancer "))

    def stop(self):
        for env in self.clusters:
            subprocess.run([os.path.join(HERE, "gateway-cluster"), "down"], env=env, check=False)
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def orders(servers, tmp, only=None):
    args = ["order-service", "serve", "--listen", "127.0.0.1:0", "--carrier-latency-ms", "1",
            "--database", f"sqlite://{tmp}/orders.sqlite"]
    if only:
        args += ["--only-revision", only]
    return servers.start("order-service", args)


def graphql(base, query, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"{base}/graphql", data=json.dumps({"query": query}).encode(),
                                     headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["data"]


def moviedb_person(base):
    """The seeded person's token, and a movie not yet in their watch list."""
    token = graphql(base, 'mutation { login(input: {username: "user", password: "user123"}) { token } }')[
        "login"]["token"]
    items = graphql(base, "{ watchlist { content { ... on Movie { id } } } }", token)["watchlist"]
    listed = {item["content"].get("id") for item in items}
    movie = next(str(n) for n in range(1, 1000) if str(n) not in listed)
    return token, movie


def drive(python, client, env, log):
    """Run a driver; its JSON lines, each a check."""
    done = subprocess.run([python, os.path.join(HERE, "clients-lane", f"{client.replace('-', '_')}_client.py")],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    with open(log, "a") as out:
        out.write(done.stderr)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        lines = [{"check": f"{env['LANE_PART']}: runs", "result": "fail",
                  "why": (done.stderr.strip().splitlines() or ["no output"])[-1]}]
    return lines


def routes(client, revision):
    """(route, part) pairs: every part directly; the order service and the conformance server
    also through mcp-gateway, in front of one limited to the other revision; and for the clients
    compared, through three gateway instances behind HAProxy and through mcp-remote too."""
    runs = [("direct", "orders"), ("gateway", "orders"), ("direct", "moviedb"),
            ("direct", "conformance"), ("gateway", "conformance")]
    if client in ONLY_PARTS:
        runs = [(route, part) for route, part in runs if part in ONLY_PARTS[client]]
    if client in COMPARED:
        for route in ("gateway×3", "mcp-remote"):
            runs += [(route, part) for part in ("orders", "conformance") if (route, part) not in runs
                     and part in ONLY_PARTS.get(client, {part})]
    return runs


def upstream(servers, tmp, part, only):
    """Start the server of `part` (speaking only the revision `only`, when given); its URL."""
    if part == "orders":
        return orders(servers, tmp, only)
    args = ["conformance-server", "--listen", "127.0.0.1:0"]
    return servers.start("conformance", args + (["--only-revision", only] if only else []))


def bridged(servers, route, url, env):
    """`env` for the driver to reach `url` by `route`."""
    if route == "gateway":
        gateway = servers.start("mcp-gateway", ["mcp-gateway", "serve", "--listen", "127.0.0.1:0",
                                                "--upstream", f"upstream={url}"])
        env["LANE_URL"] = f"{gateway}/mcp"
    elif route == "gateway×3":
        env["LANE_URL"] = servers.cluster(url)
    elif route == "mcp-remote":
        # The driver runs it as its stdio server: Node, mcp-remote, the upstream's URL.
        env["LANE_URL"] = url
        env["LANE_STDIO"] = json.dumps([os.environ["LANE_NODE"], os.environ["LANE_MCP_REMOTE"], url,
                                        "--transport", "http-only", "--protocol", "auto",
                                        "--allow-http", "--silent"])
        env["MCP_REMOTE_CONFIG_DIR"] = os.path.join(servers.tmp, "mcp-remote")
    else:
        env["LANE_URL"] = url


def one_client(target, client, python, results):
    rows = []
    for revision in REVISIONS[client]:
        for route, part in routes(client, revision):
            with tempfile.TemporaryDirectory(prefix="clients-lane-") as tmp:
                servers = Servers(target, tmp)
                try:
                    env = {"LANE_PART": part, "LANE_REVISION": revision}
                    if part == "moviedb":
                        base = servers.start("moviedb", ["moviedb", "serve", "--listen", "127.0.0.1:0",
                                             "--database", f"sqlite://{tmp}/moviedb.sqlite"])
                        env["LANE_URL"] = f"{base}/mcp"
                        env["LANE_TOKEN"], env["LANE_MOVIE"] = moviedb_person(base)
                    else:
                        # Through a bridge the server speaks only the other revision.
                        base = upstream(servers, tmp, part, OTHER[revision] if route != "direct" else None)
                        env["LANE_REST"] = base
                        bridged(servers, route, f"{base}/mcp", env)
                    lines = drive(python, client, env, os.path.join(results, f"{client}.log"))
                except Exception as error:  # a server of ours that did not start: a failure
                    lines = [{"check": f"{part}: runs", "result": "fail", "why": repr(error)}]
                finally:
                    servers.stop()
            rows += [(client, revision, route, {**line, "part": part}) for line in lines]
    return rows


def comparison(rows):
    """The clients compared, on each revision, to servers limited to the other: through one
    mcp-gateway, three behind HAProxy, and mcp-remote. What each bridges, a check a line (a
    check several clients made: bridged if every one passed it)."""
    routes = ("gateway", "gateway×3", "mcp-remote")
    shown = False
    for revision in ("2025-11-25", "2026-07-28"):
        results, checks, dead = {}, {}, set()
        for client, rev, route, line in rows:
            if client not in COMPARED or rev != revision or route not in routes:
                continue
            if line["check"] == f"{line['part']}: runs":
                dead.add((route, line["part"]))  # the bridge carried none of the part
                continue
            checks.setdefault(line["check"], line["part"])
            results.setdefault((line["check"], route), set()).add(line["result"])
        if not checks:
            continue

        def mark(check, route):
            if (route, checks[check]) in dead:
                return "not"
            got = results.get((check, route), {"unsupported"})
            return "not" if got & {"fail", "theirs"} else "bridged" if "pass" in got else "-"

        shown = True
        print()
        print(f"{f'a {revision} client to a {OTHER[revision]} server':<52} {'mcp-gateway':<12} "
              f"{'3 gateways':<12} mcp-remote {MCP_REMOTE}")
        for check in checks:
            print(f"{check:<52} {mark(check, 'gateway'):<12} {mark(check, 'gateway×3'):<12} "
                  f"{mark(check, 'mcp-remote')}")
    if shown:
        print("(3 gateways: mcp-gateway instances sharing a key ring behind HAProxy, round robin. "
              "mcp-remote is one stdio process per person: there is no shared endpoint to run many "
              "instances of. '-': the client has no way to ask)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True, help="the folder holding the built binaries")
    parser.add_argument("--client", action="append", default=[], help="NAME=PYTHON")
    parser.add_argument("--results", default=tempfile.gettempdir())
    args = parser.parse_args()
    rows = []
    for spec in args.client:
        client, python = spec.split("=", 1)
        rows += one_client(args.target, client, python, args.results)
    # mcp-remote is run beside the gateway to compare: what it does not bridge is its own, said,
    # and fails nothing.
    for _, _, route, line in rows:
        if route == "mcp-remote" and line["result"] == "fail":
            line["result"] = "theirs"
    counts = {"pass": 0, "fail": 0, "unsupported": 0, "theirs": 0}
    print(f"{'client':<14} {'revision':<11} {'route':<10} {'check':<52} result")
    for client, revision, route, line in rows:
        counts[line["result"]] = counts.get(line["result"], 0) + 1
        result = {"pass": "pass", "fail": "FAIL", "unsupported": "not supported by the client",
                  "theirs": f"not bridged by mcp-remote {MCP_REMOTE}"}[line["result"]]
        why = f": {line['why']}" if line["why"] else ""
        print(f"{client:<14} {revision:<11} {route:<10} {line['check']:<52} {result}{why}")
    comparison(rows)
    print(f"clients lane: {counts['pass']} passed, {counts['fail']} failed, "
          f"{counts['unsupported']} not supported by the client, {counts['theirs']} not bridged by mcp-remote")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
