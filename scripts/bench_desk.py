"""Driver of scripts/bench-desk: what the desks cost, through a balancer, with one desk on
SQLite (the single-process desk), one desk on PostgreSQL, and three desks on one PostgreSQL
(scripts/desk-cluster each time, the same order service on PostgreSQL behind them), measured in
one run on this machine.

For each: conversations made per second (browsers starting one, `--people` at once), then
answered questions per second (each person: ask the desk to cancel an order, wait for the
question on the page, answer it, wait for the result said on the page) and two latencies: from
the chat message sent to its question shown on the page, and from the answer taken to the
result said on the page (p50 and p99). With three desks the balancer sends each request to the
next desk, so a page's events mostly come from another desk than the one that works.

    python3 scripts/bench_desk.py [--seconds 20] [--people 4]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import desk_chaos  # noqa: E402


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def conversations_per_second(port, people, seconds):
    made = [0] * people
    until = time.monotonic() + seconds

    def browser(i):
        page = desk_chaos.Page.__new__(desk_chaos.Page)
        page.port = port
        while time.monotonic() < until:
            status, _, _ = page.request("POST", "/api/conversations", tries=1)
            if status == 200:
                made[i] += 1

    threads = [threading.Thread(target=browser, args=(i,)) for i in range(people)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(made) / seconds


def lookups_per_second(pages, seconds):
    """Each page's person asks where an order is, again and again: messages answered per second,
    and the time from the message sent to its `done` event on the page (which a desk other
    than the one that answered sends on, with three desks)."""
    done_after, answered = [], [0] * len(pages)
    until = time.monotonic() + seconds

    def person(i):
        page = pages[i]
        n = 0
        while time.monotonic() < until:
            order = f"ORD-{10001 + (n % 80):05d}"
            n += 1
            sent = time.monotonic()
            status, _, body = page.request("POST", "/api/chat", {
                "conversationId": page.conversation, "message": f"where is {order}?"})
            if status != 200:
                continue
            run = json.loads(body).get("run")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    at, event = page.events.get(timeout=1)
                except Exception:
                    continue
                if event["event"] == "done" and event.get("run") == run and order in event.get("text", ""):
                    done_after.append(at - sent)
                    answered[i] += 1
                    break

    started = time.monotonic()
    threads = [threading.Thread(target=person, args=(i,)) for i in range(len(pages))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(answered) / (time.monotonic() - started), done_after


def questions_per_second(port, orders, people, seconds):
    pages = [desk_chaos.Page(port, None) for _ in range(people)]
    time.sleep(0.5)  # the pages' streams open
    lookups, done_after = lookups_per_second(pages, seconds / 2)
    shown, said, answered = [], [], [0] * people
    share = len(orders) // people
    until = time.monotonic() + seconds

    def person(i):
        page = pages[i]
        for order in orders[i * share:(i + 1) * share]:
            if time.monotonic() > until:
                return
            sent = time.monotonic()
            status, _, body = page.request("POST", "/api/chat", {
                "conversationId": page.conversation, "message": f"please cancel {order}"})
            if status != 200 or not json.loads(body)["reply"].startswith("Waiting"):
                continue
            found = page.confirmation_for(order, time.monotonic() + 30)
            if found is None:
                continue
            at, question = found
            shown.append(at - sent)
            status, _, _ = page.request("POST", f"/api/confirmations/{question['id']}",
                                        {"secret": page.secret, "confirmed": True})
            if status != 204:
                continue
            taken = time.monotonic()
            deadline = taken + 30
            while time.monotonic() < deadline:
                try:
                    at, event = page.events.get(timeout=1)
                except Exception:
                    continue
                if event["event"] == "said" and order in event.get("text", ""):
                    said.append(at - taken)
                    answered[i] += 1
                    break

    started = time.monotonic()
    threads = [threading.Thread(target=person, args=(i,)) for i in range(people)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    for page in pages:
        page.stop.set()
    return sum(answered) / elapsed, shown, said, lookups, done_after


def run(label, desks, sqlite, args, work):
    slug = "".join(c if c.isalnum() else "-" for c in label.lower())
    env = dict(os.environ, DESK_CLUSTER_DIR=os.path.join(work, slug))
    if sqlite:
        env["DESK_SQLITE"] = "1"
    up = subprocess.run(["scripts/desk-cluster", "up", str(desks)], env=env, capture_output=True, text=True)
    if up.returncode != 0:
        sys.exit(f"{label}: scripts/desk-cluster up failed:\n{up.stderr[-2000:]}")
    try:
        endpoints = dict(line.split(" ", 1) for line in up.stdout.splitlines())
        port = int(endpoints["balancer"].rsplit(":", 1)[1].strip("/"))
        orders_db = endpoints["orders-database"]
        orders = desk_chaos.add_orders(orders_db, count=3000)
        conversations = conversations_per_second(port, args.people, args.seconds / 2)
        per_second, shown, said, lookups, done_after = questions_per_second(
            port, orders, args.people, args.seconds)
        return {
            "label": label, "conversations": conversations, "questions": per_second,
            "lookups": lookups, "done": (percentile(done_after, 50), percentile(done_after, 99)),
            "shown": (percentile(shown, 50), percentile(shown, 99)),
            "said": (percentile(said, 50), percentile(said, 99)), "n": len(said),
        }
    finally:
        subprocess.run(["scripts/desk-cluster", "down"], env=env, capture_output=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--people", type=int, default=4)
    args = parser.parse_args()
    work = os.environ.get("BENCH_DESK_DIR", "/tmp/backchannel-bench-desk")
    os.makedirs(work, exist_ok=True)
    rows = [
        run("1 desk, SQLite", 1, True, args, work),
        run("1 desk, PostgreSQL", 1, False, args, work),
        run("3 desks, PostgreSQL", 3, False, args, work),
    ]
    base = rows[0]
    print(f"desks behind HAProxy, {args.people} people, {args.seconds:.0f} s each, this machine "
          f"({os.cpu_count()} cores), one run")
    print(f"{'':22} {'conv/s':>8} {'ratio':>6} {'lookups/s':>10} {'ratio':>6} {'sent->done p50/p99 ms':>22} "
          f"{'answered/s':>11} {'ratio':>6} {'asked->shown p50/p99 ms':>24} {'answer->said p50/p99 ms':>24}")
    for row in rows:
        print(f"{row['label']:22} {row['conversations']:8.1f} {row['conversations'] / base['conversations']:6.2f} "
              f"{row['lookups']:10.1f} {row['lookups'] / base['lookups']:6.2f} "
              f"{row['done'][0] * 1000:10.0f} / {row['done'][1] * 1000:9.0f} "
              f"{row['questions']:11.2f} {row['questions'] / base['questions']:6.2f} "
              f"{row['shown'][0] * 1000:11.0f} / {row['shown'][1] * 1000:10.0f} "
              f"{row['said'][0] * 1000:11.0f} / {row['said'][1] * 1000:10.0f}")
    print("(a question's latencies are mostly the desk's polling of the order service's task, "
          "every 500 ms)")


if __name__ == "__main__":
    main()
