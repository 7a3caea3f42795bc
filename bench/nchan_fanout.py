#!/usr/bin/env python3
"""Anchor for the long-poll fan-out: nginx + nchan, measured like Switchboard.

Used by scripts/bench-events.sh against an nginx with the nchan module on
127.0.0.1 (only that host/port is contacted; every loop is bounded in count
and time). The nginx configuration it expects (the script writes it):
  /sub     nchan_subscriber longpoll on channel "group"
  /pub     nchan_publisher on channel "group", messages not stored
  /status  nchan_stub_status

Per round (--rounds): --members non-blocking sockets each send
`GET /sub HTTP/1.1` (kept alive; the next round re-polls on the same
socket); the client waits until nchan_stub_status shows every subscriber
held; then it takes t0, POSTs one message to /pub, and timestamps every
answer when its last byte is read. An answer counts when it is a 200 whose
body is the message. Round 1 reads the workers' VmRSS before the sockets are
opened and once they are held.

What the figure includes, beside Switchboard's: nchan keeps the message in
memory only (no event rows written, nothing durable before the wake-up), and
all subscribers share one channel, where Switchboard writes one event row
per member in one transaction and wakes each member's own feed.

Human-readable results go to stdout, progress ("==> ...") to stderr, all
figures to --json-out. Exit status 0 when every step ran, 1 when a step
failed, 2 on bad usage.
"""

import argparse
import errno
import json
import os
import selectors
import socket
import sys
import time


# The figures' helpers are the Switchboard client's, so both sides are measured alike.
from event_fanout import BenchError, cpu_seconds as process_cpu_seconds, log, ms, now, pct, rss_kb as process_rss_kb
from turns import from_args as turns_from_args  # noqa: E402


def rss_kb(pids):
    return sum(process_rss_kb(pid) for pid in pids)


def cpu_seconds(pids):
    return sum(process_cpu_seconds(pid) for pid in pids)


def complete_length(buf):
    """Length of the first complete HTTP response in buf (Content-Length
    framing, as nchan's long-poll answers use), or None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    length = 0
    for line in buf[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return end + 4 + length if len(buf) >= end + 4 + length else None


def request(host, port, method, path, body=b"", timeout=10.0):
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Length: {len(body)}\r\n"
                  f"Connection: close\r\n\r\n".encode() + body)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), rest


def subscribers(host, port):
    status, body = request(host, port, "GET", "/status")
    if status != 200:
        raise BenchError(f"/status answered {status}")
    for line in body.decode().splitlines():
        if line.startswith("subscribers:"):
            return int(line.split(":")[1])
    raise BenchError("no subscribers line in nchan_stub_status")


class Sub:
    def __init__(self, idx):
        self.idx = idx
        self.sock = None
        self.buf = b""
        self.out = b""
        self.done = None


def run(args):
    sel = selectors.DefaultSelector()
    subs = [Sub(i) for i in range(args.members)]
    poll = b"GET /sub HTTP/1.1\r\nHost: bench\r\n\r\n"
    message = json.dumps({"kind": "group_message", "text": "hello"}).encode()
    rounds = []
    rss_before = rss_held = None
    deadline_all = now() + args.max_seconds
    turns = turns_from_args(args.turns, "anchor", "ours")
    for rnd in range(1, args.rounds + 1):
        if turns:
            turns.wait(rnd)
        if rnd == 1:
            rss_before = rss_kb(args.worker_pids)
        # Hold: (re)send every poll, connecting at most --concurrency at once.
        pending = list(subs)
        connecting = 0
        for s in subs:
            s.buf, s.done, s.out = b"", None, poll
        hold_deadline = now() + args.hold_timeout
        while pending or connecting:
            if now() > hold_deadline or now() > deadline_all:
                raise BenchError("could not send every long poll in time")
            while pending and connecting < args.concurrency:
                s = pending.pop()
                if s.sock is None:
                    s.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    s.sock.setblocking(False)
                    rc = s.sock.connect_ex((args.host, args.port))
                    if rc not in (0, errno.EINPROGRESS):
                        raise BenchError(f"connect: {os.strerror(rc)}")
                    sel.register(s.sock, selectors.EVENT_WRITE, s)
                else:
                    sel.modify(s.sock, selectors.EVENT_WRITE, s)
                connecting += 1
            for key, _ in sel.select(timeout=0.05):
                s = key.data
                if key.events & selectors.EVENT_WRITE and s.out:
                    try:
                        n = s.sock.send(s.out)
                    except (BlockingIOError, InterruptedError):
                        n = 0
                    s.out = s.out[n:]
                    if not s.out:
                        sel.modify(s.sock, selectors.EVENT_READ, s)
                        connecting -= 1
                elif key.events & selectors.EVENT_READ:
                    raise BenchError(f"subscriber {s.idx} was answered before the message")
        while subscribers(args.host, args.port) < args.members:
            if now() > hold_deadline:
                raise BenchError("nchan did not report every subscriber held in time")
            time.sleep(0.05)
        if rnd == 1:
            rss_held = rss_kb(args.worker_pids)
        # Publish and read every answer.
        cpu0 = cpu_seconds(args.worker_pids)
        t0 = now()
        status, _ = request(args.host, args.port, "POST", "/pub", message)
        t_pub = now()
        if status not in (200, 201, 202):
            raise BenchError(f"publish answered {status}")
        answered, good = 0, 0
        deadline = t0 + args.answer_timeout
        while answered < args.members and now() < deadline:
            for key, _ in sel.select(timeout=0.05):
                s = key.data
                try:
                    chunk = s.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                if not chunk:
                    raise BenchError(f"subscriber {s.idx}: nginx closed the connection")
                s.buf += chunk
                length = complete_length(s.buf)
                if length is not None and s.done is None:
                    s.done = now()
                    answered += 1
                    resp = s.buf[:length]
                    if resp.startswith(b"HTTP/1.1 200") and resp.endswith(message):
                        good += 1
        cpu1 = cpu_seconds(args.worker_pids)
        times = [s.done - t0 for s in subs if s.done is not None]
        rounds.append({
            "round": rnd, "answered": answered, "good": good,
            "last_ms": ms(max(times)) if times and answered == args.members else None,
            "p50_ms": ms(pct(times, 50)) if times else None, "p99_ms": ms(pct(times, 99)) if times else None,
            "publish_ms": ms(t_pub - t0), "server_cpu_ms": ms(cpu1 - cpu0),
        })
        log(f"nchan round {rnd}: {answered}/{args.members} answered ({good} with the message), "
            f"last {rounds[-1]['last_ms']} ms")
        if turns:
            turns.hand_over(rnd + 1)
    for s in subs:
        if s.sock is not None:
            s.sock.close()
    lasts = sorted(r["last_ms"] for r in rounds if r["last_ms"] is not None)
    cpus = sorted(r["server_cpu_ms"] for r in rounds)
    return {
        "members": args.members, "rounds": rounds,
        "all_answered": all(r["good"] == args.members for r in rounds),
        "median_last_ms": lasts[len(lasts) // 2] if len(lasts) == len(rounds) else None,
        "median_server_cpu_ms": cpus[len(cpus) // 2],
        "rss_before_kb": rss_before, "rss_held_kb": rss_held,
        "kb_per_poll": round((rss_held - rss_before) / args.members, 2),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--worker-pids", required=True, help="nginx worker pids, comma-separated")
    ap.add_argument("--members", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=200)
    ap.add_argument("--hold-timeout", type=float, default=60.0)
    ap.add_argument("--answer-timeout", type=float, default=30.0)
    ap.add_argument("--max-seconds", type=float, default=200.0)
    ap.add_argument("--json-out")
    ap.add_argument("--turns", help="a turn file shared with Switchboard's client (bench/turns.py)")
    args = ap.parse_args()
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print("only loopback hosts are allowed", file=sys.stderr)
        return 2
    args.worker_pids = [int(p) for p in args.worker_pids.split(",") if p]
    if args.members < 1 or args.rounds < 1 or not args.worker_pids:
        print("--members, --rounds and --worker-pids must be positive", file=sys.stderr)
        return 2
    try:
        figures = run(args)
    except (BenchError, OSError) as e:
        print(f"nchan_fanout: error: {e}", file=sys.stderr)
        return 1
    print(f"nchan: last of {figures['members']} answered per round: "
          + ", ".join(str(r["last_ms"]) for r in figures["rounds"])
          + f" ms -> median {figures['median_last_ms']} ms; workers' CPU per round "
          + ", ".join(str(r["server_cpu_ms"]) for r in figures["rounds"])
          + f" ms; {figures['kb_per_poll']} KB per held poll")
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(figures, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
