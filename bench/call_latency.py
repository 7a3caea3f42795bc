#!/usr/bin/env python3
"""Call-setup latency benchmark client: POST /calls -> the callee's event.

Used by scripts/bench-calls.sh against a running Switchboard on 127.0.0.1.
Only the given host/port is contacted. Every loop is bounded in count and
time; --max-seconds caps the setup, and every later step has its own
timeout.

Setup (HTTP/1.1 keep-alive, http.client, one connection):
  register --pairs callers (c00001, ...) and as many callees (e00001, ...);
  caller i sends callee i a friend request (POST /friend-requests) and the
  callee accepts it (POST /friend-requests/{id}/accept), which gives the
  pair's conversationId; every callee's cursor is read from GET /me.

Holding:
  one non-blocking socket per callee sends
  `GET /events?after=<cursor>&wait=25`; the client waits until the
  `switchboard_event_waiters` gauge of GET /metrics shows all of them held.
  Whenever a poll is answered it is re-issued at once with the new cursor.

Measured step:
  --warmup uncounted calls, then --rate calls per second for --duration s.
  Each call picks the next pair round-robin and the caller sends
  `POST /calls {"scopeKind":"conversation","scopeId":<conversationId>,
  "mode":"audio","clientId":<uuid4>}` on one of --conns keep-alive
  connections (one request in flight per connection), paced by a monotonic
  clock. A call's latency runs from just before its POST is written until
  the callee's poll that carries the first `call_changed` event with that
  callId has been read. Once a call is both answered (201) and seen, the
  caller cancels it (`POST /calls/{id}/cancel`, on --cancel-conns separate
  connections, not measured), so that the pair is free again long before
  its next turn. A pair whose call is not cancelled yet is skipped (and
  counted), so no POST /calls should ever meet 409 CALL_BUSY.

Capacity (--ramp RATES): after the measured step, the same pairs take calls at
each rate in turn for --ramp-seconds, until the ring p99 reaches --ramp-p99
ms or the client itself cannot keep the rate; the highest rate that held is
the instance's capacity (figures "capacity" in the JSON).

Human-readable results go to stdout, progress ("==> ...") to stderr, and
all figures to --json-out for the calling script's summary.
Exit status: 0 when every step ran (figures are never asserted), 1 when a
step failed (with a message on stderr), 2 on bad usage / resource limits.
"""

import argparse
import gc
import json
import os
import selectors
import socket
import statistics
import sys
import time
import uuid
from collections import deque

# Shared helpers from the event benchmark (importing it has no side effects
# besides these two lines, which it does itself too): no __pycache__ in bench/.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from event_fanout import (  # noqa: E402
    Api, BenchError, body_of, cpu_seconds, log, ms, now, own_cpu_seconds, pct,
    response_length, rss_kb, run_client, send_all_nonblocking, status_of)

PASSWORD = "bench-password-1"


# ---------------------------------------------------------------------------
# Setup
# ---------------------------------------------------------------------------

def setup(api, pairs, deadline):
    """Callers, callees, one friendship (conversation) per pair, cursors."""
    t_start = now()
    status, _ = api.request("POST", "/calls", {})
    if status != 401:
        raise BenchError(f"POST /calls without a token answered {status}, "
                         f"expected 401 (does this build have the call "
                         f"routes?)")

    def check_time(what):
        if now() > deadline:
            raise BenchError(f"setup: out of time during {what} "
                             f"(--max-seconds)")

    def register(name, display):
        reg = api.expect(201, "POST", "/auth/register",
                         {"username": name, "password": PASSWORD,
                          "displayName": display},
                         hint="does this build have the account routes?")
        return {"name": name, "id": reg["user"]["id"], "token": reg["token"]}

    callers, callees = [], []
    for i in range(1, pairs + 1):
        if i % 100 == 0:
            check_time("registration")
        callers.append(register(f"c{i:05d}", f"Caller {i}"))
        callees.append(register(f"e{i:05d}", f"Callee {i}"))
    log(f"setup: registered {pairs} callers and {pairs} callees")
    t_reg = now()

    for i, (caller, callee) in enumerate(zip(callers, callees), 1):
        if i % 100 == 0:
            check_time("friendships")
        fr = api.expect(201, "POST", "/friend-requests",
                        {"userId": callee["id"]}, caller["token"],
                        hint="does this build have the social routes?")
        friend = api.expect(200, "POST", f"/friend-requests/{fr['id']}/accept",
                            None, callee["token"])
        caller["conversation"] = callee["conversation"] = \
            friend["conversationId"]
    log(f"setup: {pairs} friendships (one conversation each)")
    t_friends = now()

    for i, callee in enumerate(callees, 1):
        if i % 100 == 0:
            check_time("reading cursors")
        me = api.expect(200, "GET", "/me", None, callee["token"])
        callee["cursor"] = int(me["eventCursor"])
    t_end = now()
    log(f"setup: done in {t_end - t_start:.1f} s")
    return {
        "callers": callers, "callees": callees,
        "timing_s": {
            "register": round(t_reg - t_start, 2),
            "friendships": round(t_friends - t_reg, 2),
            "cursors": round(t_end - t_friends, 2),
            "total": round(t_end - t_start, 2),
        },
    }


# ---------------------------------------------------------------------------
# Connections
# ---------------------------------------------------------------------------

def request_bytes(method, path, token, payload=None):
    body = b"" if payload is None else json.dumps(
        payload, separators=(",", ":")).encode()
    head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\n")
    if payload is not None:
        head += "Content-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def warm_connection(host, port):
    """A keep-alive connection already past one request (GET /healthz), so
    it is established and idle, not waiting for a first request head (which
    the server times out). Returned non-blocking, TCP_NODELAY."""
    s = socket.create_connection((host, port), timeout=10.0)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    buf = b""
    while True:
        data = s.recv(65536)
        if not data:
            s.close()
            raise BenchError("GET /healthz: connection closed by server")
        buf += data
        total = response_length(buf)
        if 0 <= total <= len(buf):
            break
    if status_of(buf) != 200:
        s.close()
        raise BenchError(f"GET /healthz answered {status_of(buf)}")
    s.setblocking(False)
    return s


class Pair:
    """A caller, its callee and their conversation; at most one call."""
    __slots__ = ("idx", "caller_token", "callee_token", "conversation",
                 "busy", "broken", "call_id", "t_send", "posted", "seen",
                 "cancel_queued")

    def __init__(self, idx, caller, callee):
        self.idx = idx
        self.caller_token = caller["token"]
        self.callee_token = callee["token"]
        self.conversation = caller["conversation"]
        self.busy = False          # from POST /calls until its cancel answered
        self.broken = False        # a cancel failed: never used again
        self.call_id = None
        self.t_send = 0.0
        self.posted = False
        self.seen = False
        self.cancel_queued = False


class Poller:
    """A callee's long-poll socket; one poll outstanding at all times."""
    __slots__ = ("pair", "sock", "buf", "cursor", "t_poll", "reconnects")

    def __init__(self, pair, cursor):
        self.pair = pair
        self.sock = None
        self.buf = b""
        self.cursor = cursor
        self.t_poll = 0.0
        self.reconnects = 0


class Requester:
    """A caller-side keep-alive socket, one request in flight at a time."""
    __slots__ = ("role", "sock", "buf", "busy", "pair", "call_id", "t_send",
                 "label")

    def __init__(self, role, sock):
        self.role = role            # "create" or "cancel"
        self.sock = sock
        self.buf = b""
        self.busy = False
        self.pair = None
        self.call_id = None
        self.t_send = 0.0
        self.label = None


# ---------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------

class CallBench:
    def __init__(self, args, api, info):
        self.args = args
        self.api = api
        # --also-ports: more instances on the same database. Callers' connections and
        # callees' long polls are spread over all of them, a callee's poll on another
        # instance than most calls to it are placed on.
        self.ports = [args.port] + [int(x) for x in args.also_ports.split(",") if x]
        self.requesters_opened = 0
        self.apis = [api] + [Api(args.host, port) for port in self.ports[1:]]
        self.sel = selectors.DefaultSelector()
        self.pairs = [Pair(i, c, e) for i, (c, e) in
                      enumerate(zip(info["callers"], info["callees"]))]
        self.pollers = [Poller(p, e["cursor"])
                        for p, e in zip(self.pairs, info["callees"])]
        self.creators = []
        self.cancellers = []
        self.cancel_queue = deque()
        self.next_pair = 0
        self.problems = {}
        # call id -> dict(label, pair, t_send, t_resp, lag)
        self.calls = {}
        # call id -> (t_seen, t_poll_sent, pair idx), first call_changed only
        self.seen = {}
        self.call_events = 0        # call_changed events read by callees
        self.other_events = {}      # kind -> count (none expected)
        self.early_answers = 0      # polls answered with nothing for us
        self.polls = 0
        self.create_statuses = {}
        self.cancel_statuses = {}
        self.skipped_busy_pairs = 0
        self.waited_for_pair = 0
        self.waited_for_conn = 0
        self.closed = False

    def note(self, what, n=1):
        self.problems[what] = self.problems.get(what, 0) + n

    # -- long polls -----------------------------------------------------

    def _poll(self, p):
        req = (f"GET /events?after={p.cursor}&wait=25 HTTP/1.1\r\n"
               f"Host: 127.0.0.1\r\nAuthorization: Bearer "
               f"{p.pair.callee_token}\r\n\r\n").encode()
        p.t_poll = now()
        send_all_nonblocking(p.sock, req, p.t_poll + 5)
        self.polls += 1

    def _open_poller(self, p):
        port = self.ports[(p.pair.idx + 1) % len(self.ports)]
        s = socket.create_connection((self.args.host, port), timeout=10.0)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        p.sock = s
        p.buf = b""
        self.sel.register(s, selectors.EVENT_READ, p)
        self._poll(p)

    def _poller_lost(self, p, why):
        self.note(f"long-poll connection lost ({why})")
        try:
            self.sel.unregister(p.sock)
        except (KeyError, ValueError):
            pass
        p.sock.close()
        p.sock = None
        p.reconnects += 1
        if p.reconnects > 3:
            raise BenchError(f"callee {p.pair.idx + 1}: long-poll connection "
                             f"lost {p.reconnects} times (last: {why})")
        self._open_poller(p)

    def _on_poll_data(self, p, data, t_read):
        p.buf += data
        total = response_length(p.buf)
        if total < 0 or len(p.buf) < total:
            return
        resp, p.buf = p.buf[:total], p.buf[total:]
        t_poll = p.t_poll
        status = status_of(resp)
        if status != 200:
            raise BenchError(f"callee {p.pair.idx + 1}: GET /events answered "
                             f"{status}: {body_of(resp)[:300]!r}")
        page = json.loads(body_of(resp))
        p.cursor = page["cursor"]
        self._poll(p)           # re-issue at once, then book-keep
        matched = False
        for ev in page["events"]:
            kind = ev.get("kind")
            if kind != "call_changed":
                self.other_events[kind] = self.other_events.get(kind, 0) + 1
                continue
            self.call_events += 1
            cid = ev.get("callId")
            if not cid or cid in self.seen:
                continue
            matched = True
            self.seen[cid] = (t_read, t_poll, p.pair.idx)
            pair = p.pair
            if cid in self.calls:
                if self.calls[cid]["pair"] != pair.idx:
                    self.note("call_changed delivered to the wrong callee")
                pair.seen = True
                self._maybe_cancel(pair)
            elif pair.busy and not pair.posted:
                # Seen before the POST's own answer was read: matched when
                # the answer comes.
                pass
            else:
                self.note("call_changed for a call this client did not make")
        if not matched:
            self.early_answers += 1

    # -- caller requests ------------------------------------------------

    def _open_requester(self, role):
        port = self.ports[self.requesters_opened % len(self.ports)]
        self.requesters_opened += 1
        r = Requester(role, warm_connection(self.args.host, port))
        self.sel.register(r.sock, selectors.EVENT_READ, r)
        return r

    def _free(self, pool):
        for r in pool:
            if not r.busy:
                return r
        return None

    def _pick_pair(self):
        n = len(self.pairs)
        for step in range(n):
            pair = self.pairs[(self.next_pair + step) % n]
            if not pair.busy and not pair.broken:
                self.skipped_busy_pairs += step
                self.next_pair = (pair.idx + 1) % n
                return pair
        return None

    def _send_create(self, r, pair, label, due):
        body = {"scopeKind": "conversation", "scopeId": pair.conversation,
                "mode": "audio", "clientId": str(uuid.uuid4())}
        req = request_bytes("POST", "/calls", pair.caller_token, body)
        pair.busy = True
        pair.posted = pair.seen = pair.cancel_queued = False
        pair.call_id = None
        r.busy, r.pair, r.label = True, pair, label
        r.t_send = t = now()
        pair.t_send = t
        send_all_nonblocking(r.sock, req, t + 5)
        return t - due

    def _maybe_cancel(self, pair):
        if pair.posted and pair.seen and not pair.cancel_queued:
            pair.cancel_queued = True
            self.cancel_queue.append(pair)
            self._dispatch_cancels()

    def _dispatch_cancels(self):
        while self.cancel_queue:
            r = self._free(self.cancellers)
            if r is None:
                return
            pair = self.cancel_queue.popleft()
            req = request_bytes("POST", f"/calls/{pair.call_id}/cancel",
                                pair.caller_token)
            r.busy, r.pair, r.call_id = True, pair, pair.call_id
            r.t_send = now()
            send_all_nonblocking(r.sock, req, r.t_send + 5)

    def _on_requester_data(self, r, data, t_read):
        r.buf += data
        total = response_length(r.buf)
        if total < 0 or len(r.buf) < total:
            return
        resp, r.buf = r.buf[:total], r.buf[total:]
        status = status_of(resp)
        pair = r.pair
        r.busy, r.pair = False, None
        if r.role == "create":
            self.create_statuses[status] = \
                self.create_statuses.get(status, 0) + 1
            if status == 201:
                call = json.loads(body_of(resp))
                cid = call["id"]
                if call.get("state") != "ringing":
                    self.note(f"POST /calls: new call in state "
                              f"'{call.get('state')}' "
                              f"(endReason {call.get('endReason')}), "
                              f"expected 'ringing'")
                self.calls[cid] = {"label": r.label, "pair": pair.idx,
                                   "t_send": r.t_send, "t_resp": t_read}
                pair.call_id = cid
                pair.posted = True
                if cid in self.seen:
                    pair.seen = True
                    if self.seen[cid][2] != pair.idx:
                        self.note("call_changed delivered to the wrong callee")
                self._maybe_cancel(pair)
            else:
                self.note(f"POST /calls answered {status}: "
                          f"{body_of(resp)[:160].decode('utf-8', 'replace')}")
                pair.busy = False
        else:
            self.cancel_statuses[status] = \
                self.cancel_statuses.get(status, 0) + 1
            if status == 200:
                call = json.loads(body_of(resp))
                if call.get("state") != "ended" or \
                        call.get("endReason") != "cancelled":
                    self.note(f"POST /calls/{{id}}/cancel: call is "
                              f"'{call.get('state')}'/"
                              f"{call.get('endReason')}, expected "
                              f"ended/cancelled")
                pair.busy = False
            else:
                self.note(f"POST /calls/{{id}}/cancel answered {status}: "
                          f"{body_of(resp)[:160].decode('utf-8', 'replace')}")
                pair.broken = True
            self._dispatch_cancels()

    # -- the event loop ---------------------------------------------------

    def _pump(self, timeout):
        for key, _ in self.sel.select(timeout):
            obj = key.data
            try:
                data = obj.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as e:
                data = None
                why = f"recv: {e.strerror}"
            t_read = now()
            if isinstance(obj, Poller):
                if not data:
                    self._poller_lost(obj, why if data is None else
                                      "closed by server")
                    continue
                self._on_poll_data(obj, data, t_read)
            else:
                if not data:
                    raise BenchError(f"the server closed a caller's "
                                     f"'{obj.role}' connection"
                                     + (" with a request in flight"
                                        if obj.busy else ""))
                self._on_requester_data(obj, data, t_read)

    def open(self):
        """Opens the caller connections and every callee's long poll, and
        waits (bounded) until the server holds all of them."""
        args = self.args
        self.creators = [self._open_requester("create")
                         for _ in range(args.conns)]
        self.cancellers = [self._open_requester("cancel")
                           for _ in range(args.cancel_conns)]
        t_start = now()
        for p in self.pollers:
            self._open_poller(p)
            self._pump(0)
        deadline = t_start + args.hold_timeout
        want = len(self.pollers)
        gauge = None
        while now() < deadline:
            self._pump(0.1)
            gauge = sum(a.waiters() for a in self.apis)
            if gauge >= want:
                if gauge > want:
                    self.note(f"waiter gauge read {gauge}, more than the "
                              f"{want} polls held")
                return now() - t_start
        raise BenchError(f"the server did not hold all {want} long polls "
                         f"within {args.hold_timeout:.0f} s: "
                         f"switchboard_event_waiters = {gauge}")

    def run(self, count, rate, label):
        """Creates `count` calls at `rate`/s and waits (bounded) until each
        was seen by its callee and cancelled. Returns the send lags (s)."""
        interval = 1.0 / rate
        start = now() + 0.05
        hard = start + count * interval + self.args.grace
        k = 0
        lags = []
        waiting_pair = waiting_conn = False
        while True:
            t = now()
            if t > hard:
                break
            # Send every call that is due, as connections and pairs allow.
            while k < count:
                due = start + k * interval
                if t < due:
                    break
                r = self._free(self.creators)
                if r is None:
                    if not waiting_conn:
                        self.waited_for_conn += 1
                        waiting_conn = True
                    break
                pair = self._pick_pair()
                if pair is None:
                    if not waiting_pair:
                        self.waited_for_pair += 1
                        waiting_pair = True
                    break
                waiting_pair = waiting_conn = False
                lags.append(self._send_create(r, pair, label, due))
                k += 1
                t = now()
            if k >= count:
                if not any(r.busy for r in self.creators) and \
                        not any(r.busy for r in self.cancellers) and \
                        not self.cancel_queue and \
                        not any(p.busy and not p.broken for p in self.pairs):
                    break
                timeout = 0.05
            else:
                timeout = min(max(0.0, start + k * interval - now()), 0.05)
            self._pump(timeout)
        if k < count:
            self.note(f"{label}: ran out of time before every call was sent "
                      f"({k}/{count})")
        return lags, k

    def drain(self, want_events, seconds):
        """Reads (bounded) until the callees have read `want_events`
        call_changed events (the cancels of the last calls)."""
        end = now() + seconds
        while self.call_events < want_events and now() < end:
            self._pump(0.05)

    def close(self):
        """Closes every socket (idempotent)."""
        if self.closed:
            return
        self.closed = True
        for obj in self.pollers:
            if obj.sock is not None:
                obj.sock.close()
                obj.sock = None
        for obj in self.creators + self.cancellers:
            obj.sock.close()
        self.creators, self.cancellers = [], []
        self.sel.close()


def waiters_released(apis, seconds=10.0):
    """ms until the waiter gauges (of every instance) are 0 after the client
    closed its polls."""
    t0 = now()
    gauge = None
    while now() - t0 < seconds:
        gauge = sum(a.waiters() for a in apis)
        if gauge == 0:
            return ms(now() - t0), 0
        time.sleep(0.05)
    return None, gauge


def fmt(v):
    return "n/a" if v is None else (f"{v:.2f}" if isinstance(v, float)
                                    else str(v))


def target(value, limit):
    if value is None:
        return "NOT met"
    return "met" if value <= limit else "NOT met"


def run_ramp(args, bench):
    """Capacity: calls at each rate of --ramp in turn (--ramp-seconds each), on
    the same pairs and long polls, until a rate's ring p99 (POST /calls ->
    the callee's event) reaches --ramp-p99 ms or the client cannot send at
    that rate (achieved < 90 %: the load client's limit, not the server's,
    reported as such). Returns the steps and the highest rate that held."""
    steps, best, stopped = [], 0, None
    for rate in args.ramp:
        label = f"ramp-{rate:g}"
        count = int(round(rate * args.ramp_seconds))
        server_cpu0, cpu0, t0 = cpu_seconds(args.server_pid), own_cpu_seconds(), now()
        _, sent = bench.run(count, rate, label)
        elapsed = max(now() - t0, 1e-9)
        server_cpu = cpu_seconds(args.server_pid) - server_cpu0
        client_cpu = own_cpu_seconds() - cpu0
        calls = {cid: c for cid, c in bench.calls.items() if c["label"] == label}
        lat = [bench.seen[cid][0] - c["t_send"] for cid, c in calls.items() if cid in bench.seen]
        sends = sorted(c["t_send"] for c in calls.values())
        span = sends[-1] - sends[0] if len(sends) > 1 else 0.0
        achieved = (len(sends) - 1) / span if span > 0 else 0.0
        unseen = len(calls) - len(lat)
        step = {"rate": rate, "sent": sent, "created": len(calls), "unseen": unseen,
                "achieved_rate": round(achieved, 1),
                "p50_ms": ms(pct(lat, 50)) if lat else None,
                "p99_ms": ms(pct(lat, 99)) if lat else None,
                "server_cpu_pct": round(100 * server_cpu / elapsed, 1),
                "client_cpu_pct": round(100 * client_cpu / elapsed, 1)}
        steps.append(step)
        log(f"capacity: {rate:g} calls/s asked, {achieved:.0f}/s sent, ring p99 "
            f"{step['p99_ms']} ms, server CPU {step['server_cpu_pct']} %, client CPU "
            f"{step['client_cpu_pct']} % of a core")
        if achieved < 0.9 * rate:
            stopped = f"the load client sent only {achieved:.0f}/s at {rate:g}/s asked"
            break
        if not lat or unseen > 0.01 * len(calls) or step["p99_ms"] >= args.ramp_p99:
            stopped = f"ring p99 {step['p99_ms']} ms at {rate:g}/s"
            break
        best = rate
    return {"steps": steps, "calls_per_s": best, "p99_limit_ms": args.ramp_p99,
            "stopped_by": stopped or "the last rate tried"}


def run_calls(args, api, info, out):
    bench = CallBench(args, api, info)
    n_pairs = len(bench.pairs)
    count = int(round(args.rate * args.duration))
    try:
        rss_before = rss_kb(args.server_pid)
        log(f"calls: opening {args.conns}+{args.cancel_conns} caller "
            f"connections and {n_pairs} callee long polls")
        hold_s = bench.open()
        log(f"calls: {n_pairs} long polls held after {hold_s:.1f} s")
        if args.warmup > 0:
            bench.run(args.warmup, args.rate, "warm-up")
            log(f"calls: {args.warmup} warm-up calls done")
        time.sleep(0.2)
        rss_held = rss_kb(args.server_pid)
        log(f"calls: creating {count} calls at {args.rate:g}/s "
            f"({n_pairs} pairs, {args.conns} caller connections)")
        gc.disable()
        server_cpu0 = cpu_seconds(args.server_pid)
        cpu0 = own_cpu_seconds()
        t_begin = now()
        lags, sent = bench.run(count, args.rate, "measured")
        t_finish = now()
        cpu1 = own_cpu_seconds()
        server_cpu1 = cpu_seconds(args.server_pid)
        gc.enable()
        rss_after = rss_kb(args.server_pid)
        # Every call means two call_changed events for its callee: the new
        # call and its cancellation.
        expected_events = 2 * len(bench.calls)
        bench.drain(expected_events, 2.0)
        still_ringing = 0
        for pair in bench.pairs:
            active = api.expect(200, "GET", "/calls/active", None,
                                pair.caller_token)
            still_ringing += len(active)
        if args.ramp:
            out["capacity"] = run_ramp(args, bench)
        bench.close()
        released_ms, left = waiters_released(bench.apis)
    finally:
        gc.enable()
        bench.close()

    measured = {cid: c for cid, c in bench.calls.items()
                if c["label"] == "measured"}
    lat, held, repoll, post, before_post = [], [], [], [], 0
    missing = 0
    for cid, c in measured.items():
        post.append(c["t_resp"] - c["t_send"])
        if cid not in bench.seen:
            missing += 1
            continue
        t_seen, t_poll, _ = bench.seen[cid]
        d = t_seen - c["t_send"]
        lat.append(d)
        (held if t_poll < c["t_send"] else repoll).append(d)
        if t_seen < c["t_resp"]:
            before_post += 1
    if missing:
        bench.note(f"calls never seen by the callee within "
                   f"{args.grace:.0f} s", missing)
    if not lat:
        raise BenchError("calls: no call was seen by its callee")
    sends = sorted(c["t_send"] for c in measured.values())
    span = sends[-1] - sends[0] if len(sends) > 1 else 0.0
    achieved = (len(sends) - 1) / span if span > 0 else 0.0
    window = t_finish - t_begin
    busy_409 = sum(v for k, v in bench.create_statuses.items() if k == 409)
    if left:
        bench.note(f"{left} waiters still registered 10 s after the client "
                   f"closed its long polls")
    if still_ringing:
        bench.note(f"{still_ringing} calls still ringing/active after the "
                   f"run (GET /calls/active of the callers)")
    if bench.call_events < expected_events:
        bench.note(f"callees read {bench.call_events} call_changed events, "
                   f"expected {expected_events} (2 per call)")
    if bench.other_events:
        for kind, v in bench.other_events.items():
            bench.note(f"callees read unexpected '{kind}' events", v)

    figures = {
        "pairs": n_pairs,
        "rate": args.rate,
        "duration": args.duration,
        "calls": count,
        "sent": sent,
        "created_201": len(measured),
        "seen": len(lat),
        "warmup": args.warmup,
        "achieved_rate": round(achieved, 1),
        "p50_ms": ms(pct(lat, 50)),
        "p99_ms": ms(pct(lat, 99)),
        "max_ms": ms(max(lat)),
        "mean_ms": ms(statistics.fmean(lat)),
        "held_poll": {"n": len(held),
                      "p50_ms": ms(pct(held, 50)) if held else None,
                      "p99_ms": ms(pct(held, 99)) if held else None},
        "repoll": {"n": len(repoll),
                   "p50_ms": ms(pct(repoll, 50)) if repoll else None,
                   "p99_ms": ms(pct(repoll, 99)) if repoll else None},
        "event_before_post_answer": before_post,
        "post_p50_ms": ms(pct(post, 50)),
        "post_p99_ms": ms(pct(post, 99)),
        "post_max_ms": ms(max(post)),
        "send_lag_p99_ms": ms(pct(lags, 99)) if lags else None,
        "send_lag_max_ms": ms(max(lags)) if lags else None,
        # Statuses over warm-up + measured calls.
        "create_statuses": {str(k): v for k, v in
                            sorted(bench.create_statuses.items())},
        "cancel_statuses": {str(k): v for k, v in
                            sorted(bench.cancel_statuses.items())},
        "call_busy_409": busy_409,
        "skipped_busy_pairs": bench.skipped_busy_pairs,
        "waited_for_pair": bench.waited_for_pair,
        "waited_for_conn": bench.waited_for_conn,
        "call_events": bench.call_events,
        "expected_call_events": expected_events,
        "polls": bench.polls,
        "polls_without_new_call": bench.early_answers,
        "still_ringing": still_ringing,
        "window_s": round(window, 2),
        "server_cpu_ms": ms(server_cpu1 - server_cpu0),
        "server_cpu_pct": round(100.0 * (server_cpu1 - server_cpu0) / window,
                                1) if window > 0 else None,
        "client_cpu_ms": ms(cpu1 - cpu0),
        "rss_before_kb": rss_before,
        "rss_held_kb": rss_held,
        "rss_after_kb": rss_after,
        "hold_s": round(hold_s, 2),
        "waiters_released_ms": released_ms,
        "problems": bench.problems,
    }
    out["calls"] = figures

    f = figures
    print(f"Call setup latency: {n_pairs} caller/callee pairs, each callee "
          f"holding GET /events (wait=25); 1:1 audio calls at {args.rate:g}/s "
          f"for {args.duration:g} s, cancelled once seen")
    print(f"  calls: {f['sent']}/{count} sent, {f['created_201']} created "
          f"(201), {f['seen']} seen by the callee; achieved "
          f"{f['achieved_rate']} calls/s; send lag behind schedule p99 "
          f"{fmt(f['send_lag_p99_ms'])} ms, max {fmt(f['send_lag_max_ms'])} ms")
    print(f"  POST /calls -> callee's call_changed: p50 {f['p50_ms']} ms, "
          f"p99 {f['p99_ms']} ms, max {f['max_ms']} ms, mean {f['mean_ms']} ms")
    hp, rp = f["held_poll"], f["repoll"]
    print(f"    poll already held at send: {hp['n']} (p50 "
          f"{fmt(hp['p50_ms'])} ms, p99 {fmt(hp['p99_ms'])} ms); sent while "
          f"the callee had no poll out: {rp['n']} (p50 {fmt(rp['p50_ms'])} "
          f"ms, p99 {fmt(rp['p99_ms'])} ms)")
    print(f"    event read before the POST's own answer: {before_post}")
    print(f"  POST /calls response time: p50 {f['post_p50_ms']} ms, p99 "
          f"{f['post_p99_ms']} ms, max {f['post_max_ms']} ms")
    print(f"  statuses (warm-up included): POST /calls "
          f"{f['create_statuses']}, POST /calls/{{id}}/cancel "
          f"{f['cancel_statuses']}; 409 CALL_BUSY: {busy_409}")
    print(f"  pairs skipped because their last call was not cancelled yet: "
          f"{f['skipped_busy_pairs']}; no free pair at a due time: "
          f"{f['waited_for_pair']}; no free caller connection: "
          f"{f['waited_for_conn']}")
    print(f"  callee events: {f['call_events']} call_changed read "
          f"(expected {expected_events}), {f['polls']} polls sent; calls "
          f"still live afterwards: {still_ringing}")
    print(f"  server CPU {f['server_cpu_ms']:.0f} ms in the {window:.2f} s "
          f"window ({fmt(f['server_cpu_pct'])} % of one core); client CPU "
          f"{f['client_cpu_ms']:.0f} ms")
    print(f"  server RSS: {rss_before} KB before the polls, {rss_held} KB "
          f"held, {rss_after} KB after the calls")
    print(f"  target: p99 <= 10 ms -> {target(f['p99_ms'], 10)}")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--server-pid", type=int, required=True,
                    help="read VmRSS and CPU time of this process")
    ap.add_argument("--pairs", type=int, default=200,
                    help="caller/callee pairs (callees hold a long poll)")
    ap.add_argument("--rate", type=float, default=100.0,
                    help="POST /calls per second")
    ap.add_argument("--duration", type=float, default=10.0,
                    help="s of calls")
    ap.add_argument("--warmup", type=int, default=20,
                    help="uncounted calls before the measured ones")
    ap.add_argument("--conns", type=int, default=4,
                    help="keep-alive connections for POST /calls")
    ap.add_argument("--cancel-conns", type=int, default=2,
                    help="keep-alive connections for the cancels")
    ap.add_argument("--hold-timeout", type=float, default=30.0,
                    help="s to wait for the server to hold every poll")
    ap.add_argument("--grace", type=float, default=5.0,
                    help="s after the last send to wait for events/cancels")
    ap.add_argument("--max-seconds", type=float, default=90.0,
                    help="cap on the setup's duration; every later step is "
                         "bounded by its own timeouts")
    ap.add_argument("--also-ports", default="",
                    help="comma-separated ports of more instances on the same "
                         "database: callers and callees are spread over all")
    ap.add_argument("--ramp", default="",
                    help="comma-separated call rates tried in turn after the measured "
                         "step, to find the highest one whose ring p99 stays under "
                         "--ramp-p99 (capacity)")
    ap.add_argument("--ramp-seconds", type=float, default=5.0, help="s of calls per ramp rate")
    ap.add_argument("--ramp-p99", type=float, default=50.0, help="ms: the ring p99 a rate must stay under")
    ap.add_argument("--json-out", help="write all figures here as JSON")
    args = ap.parse_args()
    try:
        args.ramp = [float(x) for x in args.ramp.split(",") if x.strip()]
    except ValueError:
        ap.error("--ramp takes comma-separated numbers")
    if any(r <= 0 for r in args.ramp) or args.ramp_seconds <= 0:
        ap.error("--ramp rates and --ramp-seconds must be positive")
    if min(args.pairs, args.rate, args.duration, args.conns,
           args.cancel_conns) <= 0 or args.warmup < 0:
        ap.error("--pairs, --rate, --duration, --conns and --cancel-conns "
                 "must be positive")

    out = {"pairs": args.pairs}

    def body(api, started):
        log(f"setup: {args.pairs} callers + {args.pairs} callees, one "
            f"friendship per pair")
        info = setup(api, args.pairs, started + args.max_seconds)
        out["setup_s"] = info["timing_s"]
        run_calls(args, api, info, out)

    # Expected: closing the callees' sockets with a poll held, which the
    # server counts as 499 (client closed request), and the setup's
    # unauthenticated probe that checks the build has POST /calls.
    return run_client("call_latency", args,
                      args.pairs + args.conns + args.cancel_conns + 64, out,
                      body, {"GET /events 499": args.pairs,
                             "POST /calls 401": 1})


if __name__ == "__main__":
    sys.exit(main())
