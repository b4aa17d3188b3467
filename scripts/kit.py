"""The Python scripts' kit, the counterpart of lib.sh: what they all do, once.

Servers (ours and the peers in bench/peers/) take port 0 and print `listening on http://ADDR`
once bound; `start_server` runs one and reads that line, so no script picks a port and releases
it for a server to take later (another process can take it first). Third-party servers that
cannot take port 0 (HAProxy) bind a random port themselves through `on_a_port`, which tries
another while that one is taken.
"""

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
