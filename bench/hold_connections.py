#!/usr/bin/env python3
"""Open N idle HTTP/1.1 keep-alive connections to a server and hold them.

Used by scripts/bench-http.sh to measure how much resident memory a server
spends per idle keep-alive connection.

For each of --count connections it:
  1. connects (non-blocking, at most --concurrency connections in flight),
  2. sends one complete keep-alive request
     "GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n",
  3. reads the full response (headers + Content-Length body, or a chunked
     body up to its terminating chunk),
  4. leaves the socket open and idle.

When all connections are held (or establishing them stopped making progress)
it prints "held N" on stdout and waits until stdin is closed (EOF), SIGTERM
or SIGINT arrives, or the absolute cap --max-seconds (default 120 s, counted
from program start) is reached. Then it closes everything and prints a short
summary line, "done held=N closed_by_peer=K", before exiting.

Exit status: 0 when all --count connections were held, 1 when fewer were,
2 on bad usage / resource limits. Only loopback / the given host is contacted.
"""

import argparse
import errno
import os
import resource
import selectors
import signal
import socket
import sys
import time

# Connection states.
CONNECTING, SENDING, READING, HELD = range(4)


class Conn:
    __slots__ = ("sock", "state", "out", "buf")

    def __init__(self, sock, request):
        self.sock = sock
        self.state = CONNECTING
        self.out = request
        self.buf = b""


def response_complete(buf):
    """Return (complete, status) for the bytes received so far.

    Understands Content-Length and chunked bodies; a response with neither
    (e.g. 204/304) is complete at the end of its headers.
    """
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return False, None
    head = buf[:head_end].decode("latin-1")
    lines = head.split("\r\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    length = None
    chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value.strip())
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    body = buf[head_end + 4:]
    if chunked:
        # Good enough for a small health-check body: wait for the last chunk.
        return (body.endswith(b"0\r\n\r\n")), status
    if length is None:
        return True, status
    return len(body) >= length, status


def raise_nofile(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return soft
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--path", default="/healthz")
    ap.add_argument("--concurrency", type=int, default=200,
                    help="max connections being set up at once (keeps the "
                         "server's listen backlog from overflowing)")
    ap.add_argument("--setup-timeout", type=float, default=60.0,
                    help="give up establishing connections after this many s")
    ap.add_argument("--max-seconds", type=float, default=120.0,
                    help="absolute cap on the program's lifetime")
    args = ap.parse_args()

    start = time.monotonic()
    hard_deadline = start + args.max_seconds

    needed = args.count + 64  # + stdin/stdout/stderr, selector, slack
    limit = raise_nofile(needed)
    if limit < needed:
        print(f"error: RLIMIT_NOFILE is {limit}, need {needed}; "
              f"raise `ulimit -n`", file=sys.stderr)
        return 2

    stop = {"flag": False}

    def on_signal(signum, _frame):
        stop["flag"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    request = (f"GET {args.path} HTTP/1.1\r\nHost: x\r\n\r\n").encode()
    sel = selectors.DefaultSelector()
    held = []          # sockets whose response was read completely
    in_flight = 0
    attempts = 0
    max_attempts = args.count * 2   # bounded retries for failed connections
    failures = {}
    statuses = {}

    def fail(conn, why):
        nonlocal in_flight
        failures[why] = failures.get(why, 0) + 1
        sel.unregister(conn.sock)
        conn.sock.close()
        in_flight -= 1

    def start_one():
        nonlocal in_flight, attempts
        attempts += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex((args.host, args.port))
        if rc not in (0, errno.EINPROGRESS):
            failures[os.strerror(rc)] = failures.get(os.strerror(rc), 0) + 1
            s.close()
            return
        conn = Conn(s, request)
        sel.register(s, selectors.EVENT_WRITE, conn)
        in_flight += 1

    # ---- Phase 1: establish connections --------------------------------
    setup_deadline = min(start + args.setup_timeout, hard_deadline)
    while (len(held) < args.count and not stop["flag"]
           and time.monotonic() < setup_deadline):
        while (in_flight < args.concurrency
               and len(held) + in_flight < args.count
               and attempts < max_attempts):
            start_one()
        if in_flight == 0:
            break  # out of attempts
        for key, events in sel.select(timeout=0.5):
            conn = key.data
            s = conn.sock
            if conn.state == CONNECTING:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    fail(conn, os.strerror(err))
                    continue
                conn.state = SENDING
            if conn.state == SENDING:
                try:
                    n = s.send(conn.out)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as e:
                    fail(conn, f"send: {e.strerror}")
                    continue
                conn.out = conn.out[n:]
                if not conn.out:
                    conn.state = READING
                    sel.modify(s, selectors.EVENT_READ, conn)
                continue
            if conn.state == READING:
                try:
                    data = s.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as e:
                    fail(conn, f"recv: {e.strerror}")
                    continue
                if not data:
                    fail(conn, "closed by server before full response")
                    continue
                conn.buf += data
                try:
                    done, status = response_complete(conn.buf)
                except ValueError:
                    fail(conn, "unparsable response")
                    continue
                if done:
                    statuses[status] = statuses.get(status, 0) + 1
                    conn.state = HELD
                    conn.buf = b""
                    in_flight -= 1
                    held.append(conn)
                    # Stay registered for reads: lets us notice when the
                    # server closes an idle connection during the hold.

    n_held = len(held)
    if failures:
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(failures.items()))
        print(f"warning: connection failures ({detail})", file=sys.stderr)
    if statuses and set(statuses) != {200}:
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(),
                                                           key=str))
        print(f"warning: response statuses ({detail})", file=sys.stderr)
    print(f"held {n_held}", flush=True)
    if n_held < args.count:
        print(f"warning: held only {n_held} of {args.count} connections",
              file=sys.stderr)

    if n_held == 0:
        sel.close()
        print("done held=0 closed_by_peer=0 reason=\"nothing held\"",
              flush=True)
        return 1

    # Drop any connections still being set up; only fully held ones remain.
    for key in list(sel.get_map().values()):
        if key.data is not None and key.data.state != HELD:
            sel.unregister(key.fileobj)
            key.fileobj.close()

    # ---- Phase 2: hold until stdin EOF / SIGTERM / cap -----------------
    stdin_fd = sys.stdin.fileno()
    try:
        sel.register(stdin_fd, selectors.EVENT_READ, None)
        watch_stdin = True
    except (ValueError, OSError, PermissionError):
        watch_stdin = False   # e.g. stdin is a regular file: not selectable
    closed_by_peer = 0
    why = None
    while why is None:
        if stop["flag"]:
            why = "signal"
            break
        remaining = hard_deadline - time.monotonic()
        if remaining <= 0:
            why = "max-seconds reached"
            break
        for key, _ in sel.select(timeout=min(remaining, 0.5)):
            if key.data is None:  # stdin: data is ignored, EOF ends the hold
                if not os.read(stdin_fd, 4096):
                    why = "stdin closed"
                    sel.unregister(stdin_fd)
                continue
            conn = key.data
            try:
                data = conn.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:  # server closed (or reset) an idle connection
                closed_by_peer += 1
                sel.unregister(conn.sock)
                conn.sock.close()
                conn.state = None

    for conn in held:
        if conn.state == HELD:
            conn.sock.close()
    sel.close()
    print(f"done held={n_held} closed_by_peer={closed_by_peer} "
          f"reason=\"{why}\" watched_stdin={watch_stdin}", flush=True)
    return 0 if n_held == args.count else 1


if __name__ == "__main__":
    sys.exit(main())
