"""Driver of scripts/chaos: the cluster (scripts/cluster: PostgreSQL, three order services,
HAProxy) under mixed load while instances are killed (`kill -9`, then restarted) every ~40 s
and PostgreSQL is stopped once for a few seconds.

The load, all through the balancer on 2026-07-28 with the tasks extension: people cancelling
orders (a `cancel_order` task, its confirmation answered through `tasks/update` after a pause,
then polled to its end), shipment rechecks (a `recheck_shipments` task polled to its end,
its progress watched), and `get_order` readers. At the end, what happened, judged from the
tasks' ends and the database: tasks failed for a stopped instance, orders whose status was
written more than once (a trigger counts every write), answers lost (a yes that did not end in a
cancellation), rechecks whose progress went back; and the takeovers (from the instances' logs)
and the time from an answer to its task's end.
"""

import argparse
import asyncio
import os
import random
import signal
import subprocess
import threading
import time

import kit

META = kit.meta({"elicitation": {"form": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}}, "chaos")
STOPPED = "the server running this task stopped before it finished; start the call again"
LET_GO = "the server let go of this task before it finished; start the call again"
YES = {"confirm": {"action": "accept", "content": {"confirmed": True}}}


def task_request(method, task, extra=None):
    params = {"taskId": task, "_meta": META}
    params.update(extra or {})
    return {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}


class Load:
    """What the load saw."""

    def __init__(self, port):
        self.port = port
        self.confirmed, self.cancelled_ok, self.failed, self.lost, self.stuck = [], [], [], [], []
        self.answer_to_end = []
        self.rechecks, self.rechecks_back, self.rechecks_failed = 0, 0, []
        self.reads, self.read_errors = 0, 0
        self.retried, self.unknown = 0, []
        self.running = True

    async def post(self, connection, message, tries=200):
        """POST through the balancer until an answer comes (a killed instance drops requests;
        a stopped database answers errors): the response message."""
        headers = kit.stateless_headers(message)
        if "taskId" in message["params"]:
            headers["Mcp-Name"] = message["params"]["taskId"]
        for _ in range(tries):
            try:
                status, answer = await connection.post(message, headers)
                # Only a result is an answer: an error, or a reply without its response (a
                # stream cut short), is sent again, as a client would.
                if status == 200 and "result" in answer:
                    return answer
                self.retried += 1
                if "unknown task" in answer.get("error", {}).get("message", ""):
                    self.unknown.append(message["params"].get("taskId"))
            except (OSError, asyncio.IncompleteReadError, ValueError, KeyError):
                connection.close()
                self.retried += 1
            await asyncio.sleep(0.1)
        raise RuntimeError(f"no answer to {message['method']}")

    async def task_until(self, connection, task, done, seconds=90):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            answer = await self.post(connection, task_request("tasks/get", task))
            result = answer.get("result", {})
            if done(result):
                return result
            await asyncio.sleep(0.1)
        return None

    async def person(self, orders):
        connection = kit.Connection(self.port)
        while self.running and orders:
            order = orders.pop()
            created = await self.post(connection, kit.tool_call("cancel_order", {"orderId": order}, META))
            task = created["result"]["taskId"]
            asked = await self.task_until(connection, task, lambda r: r.get("status") != "working")
            if not asked or asked.get("status") != "input_required":
                self.failed.append((order, asked))
                continue
            await asyncio.sleep(random.uniform(0, 3))  # the person decides
            await self.post(connection, task_request("tasks/update", task, {"inputResponses": YES}))
            answered = time.monotonic()
            self.confirmed.append(order)
            ended = await self.task_until(
                connection, task, lambda r: r.get("status") not in ("working", "input_required"))
            if ended is None:
                self.stuck.append((order, task))
            elif ended["status"] == "completed" and "is cancelled" in str(ended.get("result")):
                self.cancelled_ok.append(order)
                self.answer_to_end.append(time.monotonic() - answered)
            elif ended["status"] == "failed":
                self.failed.append((order, ended.get("error", {}).get("message")))
            else:
                self.lost.append((order, ended))
        connection.close()

    async def recheck(self):
        connection = kit.Connection(self.port)
        while self.running:
            created = await self.post(connection, kit.tool_call("recheck_shipments", {}, META))
            task = created["result"]["taskId"]
            last = 0

            def done(result):
                nonlocal last
                message = result.get("statusMessage") or ""
                if message.split(" ")[0].isdigit():
                    now = int(message.split(" ")[0])
                    if now < last:
                        self.rechecks_back += 1
                    last = max(last, now)
                return result.get("status") not in ("working", "input_required")

            ended = await self.task_until(connection, task, done, seconds=120)
            if ended and ended["status"] == "completed":
                self.rechecks += 1
            else:
                self.rechecks_failed.append(ended)
        connection.close()

    async def reader(self):
        connection = kit.Connection(self.port)
        while self.running:
            try:
                status, answer = await connection.post(kit.tool_call("get_order", {"orderId": "ORD-10001"}, META))
                self.reads += 1
                if status != 200 or "error" in answer:
                    self.read_errors += 1
            except (OSError, asyncio.IncompleteReadError, ValueError, KeyError):
                connection.close()
                self.read_errors += 1
                await asyncio.sleep(0.1)
        connection.close()


def psql(database, sql):
    return subprocess.run(["psql", "-qtA", database], input=sql, text=True, check=True,
                          capture_output=True).stdout.strip()


def chaos(cluster_dir, seconds, stop, events):
    """Kill a random order service every ~40 s (restarted 5 s later), and stop PostgreSQL once
    for 5 s half way; until `stop` is set."""
    started = time.monotonic()
    postgres_stopped = False
    pg = os.path.join(cluster_dir, "pg")
    while not stop.wait(random.uniform(35, 45)):
        if not postgres_stopped and time.monotonic() - started > seconds / 2:
            postgres_stopped = True
            port = open(os.path.join(pg, "port")).read().strip()
            binary = subprocess.run("ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1", shell=True,
                                    capture_output=True, text=True).stdout.strip()
            as_pg = ["runuser", "-u", "postgres", "--"]
            subprocess.run(as_pg + [f"{binary}/pg_ctl", "-D", f"{pg}/data", "-m", "immediate", "-w", "stop"],
                           check=True, capture_output=True)
            events.append((time.monotonic() - started, "postgres stopped"))
            time.sleep(5)
            options = (f"-p {port} -k {pg} -c listen_addresses=127.0.0.1 -c max_connections=300 "
                       "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
            subprocess.run(as_pg + [f"{binary}/pg_ctl", "-D", f"{pg}/data", "-l", f"{pg}/server.log", "-w",
                                    "-o", options, "start"], check=True, capture_output=True)
            events.append((time.monotonic() - started, "postgres started"))
            continue
        name = f"order-{random.randint(1, 3)}"
        pid = int(open(os.path.join(cluster_dir, f"{name}.pid")).read())
        os.kill(pid, signal.SIGKILL)
        events.append((time.monotonic() - started, f"{name} killed"))
        time.sleep(5)
        with open(os.path.join(cluster_dir, f"{name}.log")) as log, \
                open(os.path.join(cluster_dir, f"{name}.all.log"), "a") as archive:
            archive.write(log.read())
        subprocess.run(["scripts/cluster", "restart", name], check=True, capture_output=True)
        events.append((time.monotonic() - started, f"{name} restarted"))


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--people", type=int, default=6)
    parser.add_argument("--readers", type=int, default=4)
    args = parser.parse_args()
    cluster_dir = os.environ.get("CLUSTER_DIR", "/tmp/backchannel-cluster")
    endpoints = dict(line.split(" ", 1) for line in open(os.path.join(cluster_dir, "endpoints")).read().splitlines())
    port = int(endpoints["balancer"].rsplit(":", 1)[1].split("/")[0])
    database = open(os.path.join(cluster_dir, "database")).read().strip()
    psql(database, """
        CREATE TABLE IF NOT EXISTS order_writes (order_id TEXT NOT NULL, col TEXT NOT NULL);
        CREATE OR REPLACE FUNCTION log_order_write() RETURNS trigger AS $$ BEGIN
            INSERT INTO order_writes VALUES (NEW.order_id, 'status'); RETURN NEW; END $$ LANGUAGE plpgsql;
        DROP TRIGGER IF EXISTS log_status ON orders;
        CREATE TRIGGER log_status AFTER UPDATE OF status ON orders
            FOR EACH ROW EXECUTE FUNCTION log_order_write();""")
    import bench_cluster
    orders = bench_cluster.add_orders(database, None, count=5000)
    random.shuffle(orders)

    load = Load(port)
    stop, events = threading.Event(), []
    chaos_thread = threading.Thread(target=chaos, args=(cluster_dir, args.seconds, stop, events))
    chaos_thread.start()
    started = time.monotonic()
    workers = [asyncio.create_task(load.person(orders)) for _ in range(args.people)]
    workers += [asyncio.create_task(load.recheck())]
    workers += [asyncio.create_task(load.reader()) for _ in range(args.readers)]
    while time.monotonic() - started < args.seconds:
        await asyncio.sleep(1)
    load.running = False
    stop.set()
    await asyncio.gather(*workers)
    chaos_thread.join()

    for name in ("order-1", "order-2", "order-3"):
        with open(os.path.join(cluster_dir, f"{name}.log")) as log, \
                open(os.path.join(cluster_dir, f"{name}.all.log"), "a") as archive:
            archive.write(log.read())
    takeovers = sum(open(os.path.join(cluster_dir, f"{n}.all.log")).read().count("resumed a task whose server stopped")
                    for n in ("order-1", "order-2", "order-3"))
    doubles = psql(database, "SELECT COUNT(*) FROM (SELECT order_id FROM order_writes "
                             "GROUP BY order_id HAVING COUNT(*) > 1) d")
    cancelled_rows = psql(database, "SELECT COUNT(DISTINCT order_id) FROM order_writes")
    stopped = [f for f in load.failed if f[1] in (STOPPED, LET_GO)]
    waits = sorted(load.answer_to_end)
    print(f"chaos: {args.seconds:.0f} s, {args.people} people, 1 recheck loop, {args.readers} readers; events:")
    for at, what in events:
        print(f"  {at:6.1f} s  {what}")
    print(f"confirmations answered: {len(load.confirmed)}; ended cancelled: {len(load.cancelled_ok)}; "
          f"orders cancelled in the database: {cancelled_rows}")
    print(f"tasks failed for a stopped instance: {len(stopped)}; other failures: {len(load.failed) - len(stopped)}")
    print(f"orders whose status was written more than once: {doubles}")
    print(f"answers lost (a yes not ending in a cancellation): {len(load.lost) + len(load.stuck)}")
    print(f"rechecks completed: {load.rechecks}; failed: {len(load.rechecks_failed)}; progress went back: {load.rechecks_back}")
    print(f"takeovers (instances' logs): {takeovers}")
    if waits:
        print(f"answer to end: p50 {waits[len(waits) // 2]:.2f} s, p99 {waits[int(len(waits) * 0.99)]:.2f} s, "
              f"max {waits[-1]:.2f} s (a takeover waits out the lease)")
    print(f"get_order: {load.reads} calls, {load.read_errors} errors (dropped by a kill or the database stop)")
    print(f"task requests sent again (an error or a cut reply): {load.retried}; "
          f"'unknown task' answers: {len(load.unknown)}")
    for failure in load.failed[:5]:
        print(f"  failed: {failure}")
    for lost in (load.lost + load.stuck)[:5]:
        print(f"  lost: {lost}")
    bad = len(stopped) + int(doubles) + len(load.lost) + len(load.stuck) + load.rechecks_back
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
