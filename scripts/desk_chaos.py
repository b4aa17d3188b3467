"""Driver of scripts/desk-chaos: people asking and answering through the desks' balancer
(scripts/desk-cluster) while a desk is killed (`kill -9`, restarted 5 s later) every minute and
PostgreSQL is stopped once for a few seconds.

Each person is a browser: a session made at whichever desk the balancer picks, a page's event
stream (opened again through the balancer whenever it breaks), and a loop: ask the desk to
cancel an order of their own, wait for the confirmation on the page, answer it (yes or no, by a
coin), and post the answer again when the desk that held the question is gone (the question
comes back, asked by the desk that took its task over). At the end, judged from the order
service's database (a trigger counts every write of an order's status): answers lost (a yes
taken, 204, whose order is not cancelled), orders written twice, cancels without a yes, and how
long each question took to be shown again after the page's stream broke.

    python3 scripts/desk_chaos.py --seconds 300 [--people 6] [--kill-every 60]
"""

import argparse
import http.client
import json
import os
import queue
import random
import signal
import statistics
import subprocess
import sys
import threading
import time

SETTLE = 30  # seconds the answered tasks get to end after the load stops


class Page:
    """A browser through the balancer: its session, its conversation, its event stream."""

    def __init__(self, port, log):
        self.port, self.log = port, log
        self.events = queue.Queue()
        self.secret = None
        self.broken = []  # when the stream broke
        self.stop = threading.Event()
        status, headers, body = self.request("POST", "/api/conversations", tries=100)
        self.cookie = headers["set-cookie"].split(";")[0]
        self.conversation = json.loads(body)["conversationId"]
        threading.Thread(target=self.stream, daemon=True).start()

    def request(self, method, path, body=None, tries=40):
        """(status, headers, body) of a request through the balancer, tried again while no desk
        answers it (a connection error, 502, 503); the last status otherwise."""
        for attempt in range(tries):
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
                headers = {"Content-Type": "application/json"}
                if getattr(self, "cookie", None):
                    headers["Cookie"] = self.cookie
                connection.request(method, path, json.dumps(body) if body is not None else None, headers)
                response = connection.getresponse()
                data = response.read()
                connection.close()
                if response.status in (500, 502, 503, 504) and attempt + 1 < tries:
                    time.sleep(0.5)
                    continue
                return response.status, {k.lower(): v for k, v in response.getheaders()}, data
            except (OSError, http.client.HTTPException):
                time.sleep(0.5)
        return 0, {}, b""

    def stream(self):
        while not self.stop.is_set():
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                connection.request("GET", f"/api/events?conversationId={self.conversation}",
                                   headers={"Cookie": self.cookie})
                response = connection.getresponse()
                if response.status != 200:
                    response.read()
                    time.sleep(0.5)
                    continue
                while True:
                    line = response.fp.readline()
                    if not line:
                        break
                    if line.startswith(b"data: "):
                        event = json.loads(line[6:])
                        if event["event"] == "hello":
                            self.secret = event["secret"]
                        self.events.put((time.monotonic(), event))
            except (OSError, http.client.HTTPException, ValueError):
                pass
            self.broken.append(time.monotonic())
            self.events.put((time.monotonic(), {"event": "broken"}))
            time.sleep(0.2)

    def confirmation_for(self, order, deadline):
        """The next confirmation about `order` (None once `deadline` passes)."""
        while time.monotonic() < deadline:
            try:
                at, event = self.events.get(timeout=1)
            except queue.Empty:
                continue
            if event["event"] == "confirmation" and order in event.get("message", ""):
                return at, event
        return None


class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.yes, self.no, self.unanswered = set(), set(), set()
        self.why_not = {}  # order -> why its question was not answered
        self.sent_yes = set()  # a yes was posted (its answer may have been lost on the way back)
        self.comebacks = []  # seconds from a kill (or outage) to a question shown again after it
        self.kills = []  # when a desk was killed or PostgreSQL stopped
        self.asked = self.answered = self.posts_again = 0


def person(page, orders, until, results):
    for order in orders:
        if time.monotonic() > until:
            return
        yes = random.random() < 0.5
        status, _, body = page.request("POST", "/api/chat",
                                       {"conversationId": page.conversation, "message": f"please cancel {order}"})
        if status != 200 or not json.loads(body)["reply"].startswith("Waiting for your answer"):
            with results.lock:
                results.unanswered.add(order)
                results.why_not[order] = f"the chat said {status} {body[:80]!r}"
            continue
        with results.lock:
            results.asked += 1
        deadline = time.monotonic() + 120
        answered, shown_before = False, False
        while not answered and time.monotonic() < deadline:
            shown = page.confirmation_for(order, deadline)
            if shown is None:
                with results.lock:
                    results.why_not[order] = "not shown (again) in time"
                break
            at, question = shown
            if shown_before:
                # Shown again: its page's stream broke, or its desk was killed and another
                # took its task over. How long after the last kill before it.
                with results.lock:
                    kills = [k for k in results.kills if k <= at]
                    if kills:
                        results.comebacks.append(at - kills[-1])
            shown_before = True
            # The person reads it before answering (a kill may come meanwhile).
            time.sleep(random.uniform(0.5, 3))
            for _ in range(40):
                if yes:
                    with results.lock:
                        results.sent_yes.add(order)
                status, _, _ = page.request("POST", f"/api/confirmations/{question['id']}",
                                            {"secret": page.secret, "confirmed": yes})
                if status == 204:
                    answered = True
                    break
                if status == 404:
                    # Its desk is gone: the question comes back from the desk that takes over.
                    with results.lock:
                        results.posts_again += 1
                    break
                with results.lock:
                    results.why_not[order] = f"the answer got {status}"
                time.sleep(0.5)  # 403: the page's stream (its secret) is being opened again
        with results.lock:
            if answered:
                results.answered += 1
                (results.yes if yes else results.no).add(order)
            else:
                results.unanswered.add(order)


def psql(database, sql):
    return subprocess.run(["psql", "-qtA", database], input=sql, text=True, check=True,
                          capture_output=True).stdout.strip()


def add_orders(database, count):
    """`count` cancellable copies of ORD-10002 (with its lines), ids ORD-20001 on (the desk's
    words name an order by five digits)."""
    numbers = (f"WITH RECURSIVE numbers(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM numbers "
               f"WHERE n < {count}) ")
    psql(database,
         numbers + "INSERT INTO orders (order_id, status, customer_id, total_cents, created_at, last_updated) "
         "SELECT 'ORD-' || (20000 + n), 'PENDING', customer_id, total_cents, created_at, last_updated "
         "FROM orders, numbers WHERE order_id = 'ORD-10002';\n"
         + numbers + "INSERT INTO order_items (order_id, line, product_id, product_name, quantity, "
         "unit_price_cents) SELECT 'ORD-' || (20000 + n), line, product_id, product_name, quantity, "
         "unit_price_cents FROM order_items, numbers WHERE order_id = 'ORD-10002';\n")
    return [f"ORD-{20000 + n}" for n in range(1, count + 1)]


def chaos(kill_every, seconds, stop, happened, started, results):
    """Kill a desk every `kill_every` s, each in turn (restarted 5 s later); stop PostgreSQL
    once for 5 s half way."""
    postgres_stopped = False
    while not stop.wait(kill_every):
        if not postgres_stopped and time.monotonic() - started > seconds / 2:
            postgres_stopped = True
            subprocess.run(["scripts/desk-cluster", "stop-postgres"], check=True, capture_output=True)
            with results.lock:
                results.kills.append(time.monotonic())
            happened.append((time.monotonic() - started, "postgres stopped"))
            time.sleep(5)
            subprocess.run(["scripts/desk-cluster", "start-postgres"], check=True, capture_output=True)
            happened.append((time.monotonic() - started, "postgres started"))
            continue
        kills = len([what for _, what in happened if what.endswith("killed")])
        name = f"desk-{kills % 3 + 1}"
        subprocess.run(["scripts/desk-cluster", "kill", name], check=True)
        with results.lock:
            results.kills.append(time.monotonic())
        happened.append((time.monotonic() - started, f"{name} killed"))
        time.sleep(5)
        subprocess.run(["scripts/desk-cluster", "restart", name], check=True, capture_output=True)
        happened.append((time.monotonic() - started, f"{name} restarted"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--people", type=int, default=6)
    parser.add_argument("--kill-every", type=float, default=60)
    args = parser.parse_args()
    cluster = os.environ.get("DESK_CLUSTER_DIR", "/tmp/backchannel-desk-cluster")
    endpoints = dict(line.split(" ", 1) for line in open(os.path.join(cluster, "endpoints")).read().splitlines())
    port = int(endpoints["balancer"].rsplit(":", 1)[1].strip("/"))
    orders_db = endpoints["orders-database"]
    psql(orders_db, """
        CREATE TABLE IF NOT EXISTS order_writes (order_id TEXT NOT NULL);
        CREATE OR REPLACE FUNCTION log_order_write() RETURNS trigger AS $$ BEGIN
            INSERT INTO order_writes VALUES (NEW.order_id); RETURN NEW; END $$ LANGUAGE plpgsql;
        DROP TRIGGER IF EXISTS log_status ON orders;
        CREATE TRIGGER log_status AFTER UPDATE OF status ON orders
            FOR EACH ROW EXECUTE FUNCTION log_order_write();""")
    orders = add_orders(orders_db, count=2000)
    share = len(orders) // args.people
    results, happened = Results(), []
    started = time.monotonic()
    until = started + args.seconds
    pages = [Page(port, None) for _ in range(args.people)]
    stop = threading.Event()
    chaos_thread = threading.Thread(target=chaos, args=(args.kill_every, args.seconds, stop, happened, started, results))
    chaos_thread.start()
    people = [threading.Thread(target=person, args=(page, orders[i * share:(i + 1) * share], until, results))
              for i, page in enumerate(pages)]
    for thread in people:
        thread.start()
    for thread in people:
        thread.join()
    stop.set()
    chaos_thread.join()
    time.sleep(SETTLE)
    cancelled = set(psql(orders_db, "SELECT order_id FROM orders WHERE status = 'CANCELLED' "
                                    "AND order_id LIKE 'ORD-2%'").split())
    doubles = psql(orders_db, "SELECT COUNT(*) FROM (SELECT order_id FROM order_writes "
                              "GROUP BY order_id HAVING COUNT(*) > 1) d")
    lost = sorted(results.yes - cancelled)
    without_yes = sorted(cancelled - results.sent_yes)
    for at, what in happened:
        print(f"  {at:6.1f} s  {what}")
    comebacks = sorted(results.comebacks)
    print(f"questions asked {results.asked}, answered {results.answered} "
          f"(yes {len(results.yes)}, no {len(results.no)}), not answered {len(results.unanswered)}, "
          f"answers posted again after their desk stopped {results.posts_again}")
    broken = sum(len(page.broken) for page in pages)
    print(f"pages' streams broken (and opened again through the balancer): {broken}")
    if comebacks:
        print(f"questions shown again after a desk was killed or PostgreSQL stopped: {len(comebacks)}, "
              f"p50 {statistics.median(comebacks):.1f} s, max {comebacks[-1]:.1f} s after it")
    print(f"desk chaos: lost answers {len(lost)}, orders written twice {doubles}, "
          f"cancels without a yes {len(without_yes)}")
    for order in sorted(results.unanswered):
        print(f"  not answered: {order}: {results.why_not.get(order, '?')}")
    if lost:
        print("  lost:", " ".join(lost[:20]))
    if without_yes:
        print("  cancelled without a yes:", " ".join(without_yes[:20]))
    sys.exit(1 if lost or without_yes or doubles != "0" or results.answered == 0 else 0)


if __name__ == "__main__":
    main()
