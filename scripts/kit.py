"""The Python scripts' kit, the counterpart of lib.sh: what they all do, once.

Servers (ours and the peers in bench/peers/) take port 0 and print `listening on http://ADDR`
once bound; `start_server` runs one and reads that line, so no script picks a port and releases
it for a server to take later (another process can take it first). Third-party servers that
cannot take port 0 (HAProxy) bind a random port themselves through `on_a_port`, which tries
another while that one is taken.
"""

import asyncio
import json
import random
import re
import subprocess
import time

LISTENING = re.compile(rb"listening on http://([0-9.]+):([0-9]+)")


class ServerFailed(RuntimeError):
    """A server exited, or never said where it listens; the message ends with its log's tail."""


def tail(path, lines=20):
    """The last `lines` lines of the file at `path` (empty when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return b"\n".join(f.read().splitlines()[-lines:]).decode(errors="replace")
    except OSError:
        return ""


def start_server(cmd, log, env=None, seconds=30):
    """Run `cmd` (given port 0) with its stdout and stderr in the file `log`; once it prints
    where it listens, return `(proc, port)`. Raises ServerFailed (the process stopped) when it
    exits first or says nothing for `seconds`."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(log, "rb") as f:
            found = LISTENING.search(f.read())
        if found:
            return proc, int(found.group(2))
        if proc.poll() is not None:
            raise ServerFailed(f"{cmd[0]} exited with {proc.returncode} before listening:\n{tail(log)}")
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    raise ServerFailed(f"{cmd[0]} did not say where it listens in {seconds} s:\n{tail(log)}")


class PortTaken(Exception):
    """Raised by an `on_a_port` command when the port it was given is taken."""


def on_a_port(command, tries=10):
    """Call `command(port)` with a random loopback port from 20000-59999, again with another
    while it raises PortTaken, at most `tries` times; return what it returns. The command binds
    the port itself (and the port after it, when it needs two)."""
    for _ in range(tries):
        try:
            return command(random.randrange(20000, 60000))
        except PortTaken:
            continue
    raise ServerFailed(f"no free port after {tries} tries")


# The JSON-RPC client of the scripts: messages, headers and one keep-alive HTTP/1.1
# connection that reads a response whole or its SSE events one by one. Raw asyncio streams,
# not an HTTP library: the loads measure our servers, not a client's overhead, and the
# 2025-11-25 flows need a response's events while its stream is still open.

STATELESS = "2026-07-28"
SESSIONS = "2025-11-25"


def meta(capabilities, name="bench"):
    """The `_meta` a 2026-07-28 request carries in place of a session: revision, the client's
    capabilities (e.g. `{"elicitation": {"form": {}}}`) and its name."""
    return {
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "0"},
    }


def tool_call(name, arguments, _meta=None, extra=None, id=1):
    """A `tools/call` request; `_meta` as `meta()` gives it (none on a session), `extra` more
    params (a retry's `inputResponses` and `requestState`)."""
    params = {"name": name, "arguments": arguments}
    if _meta is not None:
        params["_meta"] = _meta
    params.update(extra or {})
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def stateless_headers(message):
    """The headers a 2026-07-28 request repeats from its body (revision, method, tool name)."""
    headers = {"MCP-Protocol-Version": STATELESS, "Mcp-Method": message["method"]}
    if message["method"] == "tools/call":
        headers["Mcp-Name"] = message["params"]["name"]
    return headers


def session_headers(session):
    """The headers of a request on an open 2025-11-25 session (none before it has one)."""
    return {"Mcp-Session-Id": session, "MCP-Protocol-Version": SESSIONS} if session else {}


def messages(body):
    """The JSON-RPC messages of a response body, JSON or SSE (bytes or text)."""
    text = body.decode() if isinstance(body, bytes) else body
    if text.lstrip().startswith("{"):
        return [json.loads(text)]
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]


def response(body):
    """The response among a body's messages (the last one with an id; {} when there is none)."""
    return next((m for m in reversed(messages(body)) if "id" in m), {})


class Connection:
    """One keep-alive HTTP/1.1 connection to a server's /mcp, opened on first use and again
    after the server closes it. `send` writes a request and reads its head; then `body` reads
    the whole body or `events` its SSE messages as they come; `post` does all three."""

    def __init__(self, port, path="/mcp"):
        self.port, self.path = port, path
        self.reader = self.writer = None
        self.status, self.headers, self.length, self.buffer = 0, {}, None, b""

    async def send(self, message, headers=None):
        """Write `message` with `headers` (plus the content headers); return (status, headers),
        the headers' names lower-cased."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        body = json.dumps(message).encode()
        head = (f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n")
        head += "".join(f"{key}: {value}\r\n" for key, value in (headers or {}).items())
        self.writer.write(head.encode() + b"\r\n" + body)
        await self.writer.drain()
        self.status = int((await self.reader.readuntil(b"\r\n")).split()[1])
        self.headers, self.buffer = {}, b""
        while (line := await self.reader.readuntil(b"\r\n")) != b"\r\n":
            key, _, value = line.decode().partition(":")
            self.headers[key.strip().lower()] = value.strip()
        self.length = int(self.headers["content-length"]) if "content-length" in self.headers else None
        return self.status, self.headers

    async def _chunk(self):
        size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
        chunk = await self.reader.readexactly(size + 2)
        return chunk[:-2]

    def _ended(self):
        if self.headers.get("connection", "").lower() == "close":
            self.close()

    async def body(self):
        """The whole body of the response `send` began: with a length, chunked, or none."""
        if self.length is not None or "chunked" not in self.headers.get("transfer-encoding", ""):
            data = await self.reader.readexactly(self.length or 0)
        else:
            data = b""
            while chunk := await self._chunk():
                data += chunk
        self._ended()
        return data

    async def events(self):
        """The JSON-RPC messages of the chunked SSE body `send` began, as they arrive."""
        while True:
            while b"\n\n" in self.buffer:
                event, self.buffer = self.buffer.split(b"\n\n", 1)
                for line in event.split(b"\n"):
                    if line.startswith(b"data:") and line[5:].strip():
                        yield json.loads(line[5:])
            chunk = await self._chunk()
            if not chunk:
                self._ended()
                return
            self.buffer += chunk.replace(b"\r\n", b"\n")

    async def post(self, message, headers=None):
        """Send `message` (a 2026-07-28 request's headers when `headers` is None) and read its
        whole answer: (status, the response message, {} when there is none)."""
        status, _ = await self.send(message, stateless_headers(message) if headers is None else headers)
        return status, response(await self.body())

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None
