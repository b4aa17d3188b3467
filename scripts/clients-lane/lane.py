"""What every client of the clients lane is asked, written once (standard library only, so each
client's driver imports it from that client's own virtual environment).

A driver (`scripts/clients-lane/<client>_client.py`) adapts one client library to `Session` and calls
`run(session_factory)`; the checks here drive our servers through it and print one JSON line a
check: {"check": ..., "result": "pass" | "fail" | "unsupported", "why": ...}. The orchestrator
(`scripts/clients.py`) starts the servers, runs each driver on each revision and route, and
prints the table.
"""

import asyncio
import json
import os
import sys
import urllib.request

# Who the lane is (the order service logs a cancellation with the note given).
NOTE = "answered by the clients lane"
# The root every client offers, where it offers roots.
ROOT = "file:///srv/clients-lane"


class Unsupported(Exception):
    """The client has no way to do this (said with its reason)."""


def say(check, result, why=""):
    print(json.dumps({"check": check, "result": result, "why": str(why)[:300]}), flush=True)


def check(name, ok, why=""):
    say(name, "pass" if ok else "fail", "" if ok else why)


def content_text(content):
    """A tool result's text parts, joined (what every driver's `call` returns as its text)."""
    return " ".join(getattr(part, "text", "") for part in content)


def rest(base, path):
    with urllib.request.urlopen(f"{base}{path}", timeout=10) as response:
        return json.loads(response.read())


class Handlers:
    """What the servers ask of the client, answered as a person and a model would, and
    counted. `answers` maps an order id (or 'watch') to the answer to give."""

    def __init__(self):
        self.answers = {}
        self.asked = []
        self.sampled = []
        self.logs = []
        self.progress = []
        self.opened = []

    def elicit(self, message, schema):
        self.asked.append(message)
        for key, answer in self.answers.items():
            if key in message:
                return answer
        return None  # decline

    def answer(self, message, url=None, schema=None):
        """A question answered as (action, content): a URL question's link opened, a form as
        `answers` says, anything else declined. Every driver's elicitation hook answers with it."""
        if url:
            return ("accept" if self.open_url(message, url) else "decline"), None
        content = self.elicit(message, schema)
        return ("decline", None) if content is None else ("accept", content)

    def open_url(self, message, url):
        """A URL question: the person agrees to open `url` (the lane opens nothing)."""
        self.asked.append(message)
        self.opened.append(url)
        return True

    def sample(self, text):
        self.sampled.append(text)
        return "SUMMARY: Viewers praise the acting and the pace. SENTIMENT: positive"

    def log(self, level, data):
        self.logs.append(f"{level}: {data}")

    def on_progress(self, value, total):
        self.progress.append((value, total))


async def orders(open_session, url, rest_base, features):
    """The order service: tools, get_order, cancel yes and no (read back over REST), a
    recheck's progress counted, the cancellation's log message."""
    handlers = Handlers()
    async with open_session(url, handlers, {}) as session:
        tools = await session.list_tools()
        check("tools listed", {"cancel_order", "get_order", "recheck_shipments"} <= set(tools), tools)
        error, text = await session.call("get_order", {"orderId": "ORD-10001"})
        check("get_order", not error and "ORD-10001" in text, text)
        pending = [o["orderId"] for o in rest(rest_base, "/api/orders?status=PENDING")]
        yes_id, no_id = pending[0], pending[1]
        handlers.answers[yes_id] = {"confirmed": True, "note": NOTE}
        handlers.answers[no_id] = {"confirmed": False}
        error, text = await session.call("cancel_order", {"orderId": yes_id})
        status = rest(rest_base, f"/api/orders/{yes_id}")["status"]
        if "elicitation" in features:
            check("cancel, yes", not error and status == "CANCELLED", (status, text))
        else:
            # No way to ask the person: nothing may be done on their behalf.
            check("cancel without a question asked changes nothing", status == "PENDING", (status, text))
            say("cancel, yes", "unsupported", features.get("why-no-elicitation", "no elicitation"))
        error, text = await session.call("cancel_order", {"orderId": no_id})
        status = rest(rest_base, f"/api/orders/{no_id}")["status"]
        if "elicitation" in features:
            check("cancel, no", status == "PENDING", (status, text))
        else:
            say("cancel, no", "unsupported", features.get("why-no-elicitation", "no elicitation"))
        error, text = await session.call("recheck_shipments", {})
        shipped = len(rest(rest_base, "/api/orders?status=SHIPPED"))
        if "progress" in features:
            values = [value for value, _ in handlers.progress]
            whole = len(values) == shipped and all(a < b for a, b in zip(values, values[1:]))
            check("progress whole and in order", not error and whole,
                  f"{len(values)} of {shipped}: {values[:5]}...")
        else:
            check("recheck_shipments", not error, text)
            say("progress whole and in order", "unsupported", features.get("why-no-progress", "no progress hook"))
        if "logging" in features and "elicitation" in features:
            check("log message of the cancellation", any(yes_id in entry for entry in handlers.logs),
                  handlers.logs)
        elif "logging" in features:
            # Nothing was cancelled: any of the calls' log messages will do.
            check("log messages of the calls", bool(handlers.logs), "none arrived")
        else:
            say("log message of the cancellation", "unsupported", features.get("why-no-logging", "no log hook"))


async def moviedb(open_session, url, token, features):
    """The movie database: a review summary through the client's model (sampling) and the
    watch-status question (a signed-in person's)."""
    handlers = Handlers()
    headers = {"Authorization": f"Bearer {token}"}
    async with open_session(url, handlers, headers) as session:
        if "sampling" in features:
            error, text = await session.call("summarizeMovieReviews", {"movieId": "1"})
            check("sampling: reviews summarised by the client's model",
                  not error and len(handlers.sampled) == 1 and "acting" in text, (handlers.sampled, text))
        else:
            say("sampling: reviews summarised by the client's model", "unsupported",
                features.get("why-no-sampling", "no sampling hook"))
        if "elicitation" in features:
            handlers.answers["atch"] = {"status": "WATCHED"}
            movie = os.environ["LANE_MOVIE"]
            error, text = await session.call("addToWatchlist", {"subject": {"movieId": movie}})
            check("watch-status question answered", not error and len(handlers.asked) == 1
                  and "WATCHED" in text, (handlers.asked, text))
        else:
            say("watch-status question answered", "unsupported",
                features.get("why-no-elicitation", "no elicitation"))


async def conformance(open_session, url, features):
    """The conformance server's tools that ask the client: for its roots, its model (sampling)
    and the person (a form)."""
    handlers = Handlers()
    async with open_session(url, handlers, {}) as session:
        if "roots" in features:
            error, text = await session.call("test_input_required_result_list_roots", {})
            check("roots listed to a tool that asks", not error and ROOT in text, text)
        else:
            say("roots listed to a tool that asks", "unsupported", features.get("why-no-roots", "no roots"))
        if "sampling" in features:
            error, text = await session.call("test_sampling", {"prompt": "Summarise the reviews."})
            check("sampling: a prompt answered by the client's model",
                  not error and "acting" in text and len(handlers.sampled) == 1, text)
        else:
            say("sampling: a prompt answered by the client's model", "unsupported",
                features.get("why-no-sampling", "no sampling hook"))
        if "elicitation" in features:
            handlers.answers["lane question"] = {"username": "lane", "email": "lane@example.org"}
            error, text = await session.call("test_elicitation", {"message": "lane question"})
            check("a form answered", not error and "lane@example.org" in text, text)
        else:
            say("a form answered", "unsupported", features.get("why-no-elicitation", "no elicitation"))
        if "tasks" in features:
            error, text = await session.call_task("slow_compute", {"seconds": 0.2, "label": "lane"})
            check("a task run to its result", not error and "computed lane" in text, text)
            handlers.answers["Delete lane.txt"] = {"confirm": True}
            error, text = await session.call_task("confirm_delete", {"filename": "lane.txt"})
            check("a question inside a task answered", not error and text == "deleted lane.txt",
                  (handlers.asked, text))
        else:
            for name in ("a task run to its result", "a question inside a task answered"):
                say(name, "unsupported", features.get("why-no-tasks", "no tasks"))
        if "url-elicitation" in features:
            try:
                error, text = await session.call("test_url_elicitation", {"message": "lane page"})
            except Exception as failure:  # a bridge that cannot carry it fails the call
                error, text = True, repr(failure)
            check("a URL question answered", not error and "action=accept" in text
                  and handlers.opened == ["https://example.test/verify"], (handlers.opened, text))
        else:
            say("a URL question answered", "unsupported",
                features.get("why-no-url-elicitation", "no URL-mode elicitation"))


def run(open_session, features):
    """Run the part named by $LANE_PART against $LANE_URL (see scripts/clients.py)."""
    part, url = os.environ["LANE_PART"], os.environ["LANE_URL"]
    try:
        if part == "orders":
            asyncio.run(orders(open_session, url, os.environ["LANE_REST"], features))
        elif part == "moviedb":
            asyncio.run(moviedb(open_session, url, os.environ["LANE_TOKEN"], features))
        elif part == "conformance":
            asyncio.run(conformance(open_session, url, features))
    except Exception as error:  # the client (or our server) failed: a failed check, said
        say(f"{part}: runs", "fail", repr(error))
        sys.exit(1)
