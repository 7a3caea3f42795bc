#!/usr/bin/env python3
"""Post malformed 1 MiB JSON bodies to a server from N clients, over and over.

Used by scripts/bench-http.sh to measure what a stranger (or one signed-in
user) posting large broken bodies costs everybody else: the script measures
GET /healthz latency while this runs.

Each of --clients threads loops until SIGTERM or --max-seconds: it connects, sends `POST PATH` with Content-Length 1048576 and
a quote-heavy body that is not JSON (thousands of short strings and no closing
brace, the worst case for a diagnosis that rescans strings), reads the answer
(whatever the server says: 400, 413, 429 ...), and closes. A server that
answers before the body is read may reset the connection; that counts as an
answer too.

Prints "started N" once every client is running and, at the end,
"done posts=P answers=A statuses=S" (S: status counts). Only --host is
contacted (loopback in the benchmark).
"""

import argparse
import collections
import signal
import socket
import threading
import time

BODY_BYTES = 1 << 20


def body():
    unit = b'"k":"\\"x\\"",'
    head = b"{"
    count = (BODY_BYTES - len(head)) // len(unit)
    data = head + unit * count
    return data + b" " * (BODY_BYTES - len(data))


def client(args, payload, stop, tally, lock):
    head = (
        f"POST {args.path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n"
        + (f"Authorization: Bearer {args.token}\r\n" if args.token else "")
        + "\r\n"
    ).encode()
    while not stop.is_set():
        status = "error"
        try:
            with socket.create_connection((args.host, args.port), timeout=10) as sock:
                try:
                    sock.sendall(head + payload)
                except OSError:
                    pass  # answered and closed before the whole body went
                reply = b""
                while b"\r\n" not in reply:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    reply += chunk
                if reply.startswith(b"HTTP/1.1 "):
                    status = reply[9:12].decode()
        except OSError:
            status = "reset"
        with lock:
            tally[status] += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/auth/login")
    parser.add_argument("--token", default="")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--max-seconds", type=float, default=120)
    args = parser.parse_args()

    payload = body()
    stop = threading.Event()
    tally = collections.Counter()
    lock = threading.Lock()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threads = [
        threading.Thread(target=client, args=(args, payload, stop, tally, lock), daemon=True)
        for _ in range(args.clients)
    ]
    for thread in threads:
        thread.start()
    print(f"started {len(threads)}", flush=True)

    deadline = time.monotonic() + args.max_seconds
    while not stop.is_set() and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(timeout=15)
    with lock:
        posts = sum(tally.values())
        answers = sum(count for status, count in tally.items() if status not in ("error", "reset"))
        statuses = ",".join(f"{status}:{count}" for status, count in sorted(tally.items()))
    print(f"done posts={posts} answers={answers} statuses={statuses}", flush=True)


if __name__ == "__main__":
    main()
