#!/usr/bin/env python3
"""Event-delivery benchmark client: long-poll fan-out and single-event latency.

Used by scripts/bench-events.sh against a running Switchboard on 127.0.0.1.
Only the given host/port is contacted. Every loop is bounded in count and
time; --max-seconds caps the whole run.

Setup (HTTP/1.1 keep-alive, http.client):
  register an owner and --members members (m00001, m00002, ...; four at once,
  their passwords are hashed), the owner sends each a friend request and each
  member accepts, the owner creates one group with all of them, and every
  member's cursor is read from GET /me. With --state FILE the users, tokens
  and group are written to FILE; when FILE exists they are read from it
  instead (the server running on a copy of that setup's data directory), the
  cursors are read again and each feed once (so the server's cache is as warm
  as after a fresh setup).

Step 1, fan-out (repeated --rounds times):
  one non-blocking socket per member (at most --concurrency connecting at
  once) sends `GET /events?after=<cursor>&wait=25`; the client waits until
  the `switchboard_event_waiters` gauge of GET /metrics shows all of them
  held (at most --hold-timeout s). Round 1 reads the server's VmRSS before
  the sockets are opened and once they are held. Then it takes t0, the owner
  POSTs one group message, and every answer is timestamped when its last
  byte is read. An answer counts when it is a 200 whose body contains
  "group_message". The next round re-polls on the same sockets from the
  cursor in each answer. Afterwards the sockets are closed while a poll is
  held, and the client times how long the server takes to release the
  waiters.

Step 2, single-event latency:
  m00001 holds a long poll on its own socket (on --poll-port when given: another
  instance on the same database); the owner sends 1:1 messages
  on a separate keep-alive socket at --rate per second for --duration s.
  Each message's latency is from just before its POST is written to the
  moment the receiver's poll returns the `message` event with that
  messageId (the poll is re-issued at once with the new cursor).

Human-readable results go to stdout, progress ("==> ...") to stderr, and
all figures to --json-out for the calling script's summary.
Exit status: 0 when every step ran (figures are never asserted), 1 when a
step failed (with a message on stderr), 2 on bad usage / resource limits.
"""

import argparse
import concurrent.futures
import errno
import gc
import http.client
import json
import math
import os
import resource
import selectors
import socket
import statistics
import sys
import threading
import time
from collections import deque

# raise_nofile() is shared with the HTTP bench's connection holder. Importing
# it must not leave a __pycache__ behind in bench/.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hold_connections import raise_nofile  # noqa: E402
from turns import from_args as turns_from_args  # noqa: E402

PASSWORD = "bench-password-1"
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Long-poll socket states.
CONNECTING, SENDING, WAITING, ANSWERED, CLOSED = range(5)


class BenchError(Exception):
    """A step failed; the message says which and why."""


def log(msg):
    print(f"==> {msg}", file=sys.stderr, flush=True)


def now():
    return time.perf_counter()


# ---------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------

def pct(values, p):
    """Nearest-rank percentile of a non-empty list (p in 0..100)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(ordered)))
    return ordered[rank - 1]


def ms(seconds):
    return round(seconds * 1000.0, 3)


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# ---------------------------------------------------------------------------
# The server process, from /proc
# ---------------------------------------------------------------------------

def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError as e:
        raise BenchError(f"cannot read /proc/{pid}/status (server gone?): {e}")
    raise BenchError(f"no VmRSS in /proc/{pid}/status")


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (10 ms resolution)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError as e:
        raise BenchError(f"cannot read /proc/{pid}/stat (server gone?): {e}")
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def own_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


# ---------------------------------------------------------------------------
# Setup client (http.client, keep-alive)
# ---------------------------------------------------------------------------

class Api:
    """One keep-alive http.client connection; JSON in, (status, bytes) out."""

    def __init__(self, host, port, timeout=30.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.conn = http.client.HTTPConnection(host, port, timeout=timeout)
        self.reconnects = 0
        self.last_used = now()

    def request(self, method, path, body=None, token=None):
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        if token:
            headers["Authorization"] = "Bearer " + token
        if now() - self.last_used > 5:
            # Idle long enough for the server to have closed it (its keep-alive
            # timeout): a POST on it could not be retried, so start afresh.
            self.conn.close()
        self.last_used = now()
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                payload = resp.read()
                if resp.will_close:
                    self.conn.close()
                return resp.status, payload
            except (http.client.RemoteDisconnected, ConnectionResetError,
                    BrokenPipeError) as e:
                # The server closed the keep-alive connection between
                # requests. Retry once, but only requests that are safe to.
                self.conn.close()
                self.reconnects += 1
                if method != "GET" or attempt == 2:
                    raise BenchError(f"{method} {path}: connection lost ({e})")
            except (OSError, http.client.HTTPException) as e:
                self.conn.close()
                raise BenchError(f"{method} {path}: {type(e).__name__}: {e}")
        raise AssertionError("unreachable")

    def expect(self, want, method, path, body=None, token=None, hint=""):
        status, payload = self.request(method, path, body, token)
        if status != want:
            extra = f" ({hint})" if hint else ""
            raise BenchError(f"{method} {path} answered {status}, expected "
                             f"{want}{extra}: {payload[:300]!r}")
        try:
            return json.loads(payload)
        except ValueError:
            raise BenchError(f"{method} {path}: body is not JSON: "
                             f"{payload[:300]!r}")

    def waiters(self):
        status, payload = self.request("GET", "/metrics")
        if status != 200:
            raise BenchError(f"GET /metrics answered {status}")
        for line in payload.split(b"\n"):
            if line.startswith(b"switchboard_event_waiters "):
                return int(float(line.split()[1]))
        raise BenchError("GET /metrics has no switchboard_event_waiters gauge "
                         "(is this build older than the event feed?)")

    def metrics_text(self):
        status, payload = self.request("GET", "/metrics")
        return payload.decode("utf-8", "replace") if status == 200 else ""

    def close(self):
        self.conn.close()


def load_state(path, api, members, deadline):
    """The users, tokens and group of an earlier setup (--state), on a copy of
    that run's data directory; only the cursors are read again."""
    with open(path) as f:
        info = json.load(f)
    if len(info.get("users", [])) != members:
        raise BenchError(f"{path} holds {len(info.get('users', []))} members, "
                         f"not {members}: delete it (and its data) to set up again")
    t_start = now()
    read_cursors(api, info["users"], deadline)
    # A fresh setup leaves the server's database cache warm with every member's feed; a reused
    # one starts cold, and warming it while the polls are held would be counted as their memory.
    # One immediate read of each feed first, so both start alike.
    for i, u in enumerate(info["users"], 1):
        if i % 1000 == 0 and now() > deadline:
            raise BenchError("setup: out of time warming the feeds (--max-seconds)")
        api.expect(200, "GET", f"/events?after={u['cursor']}&wait=0", None, u["token"])
    info["timing_s"] = {"reused": path, "cursors_and_feeds": round(now() - t_start, 2)}
    log(f"setup: reused {path}; cursors and feeds read in {now() - t_start:.1f} s")
    return info


def save_state(path, info):
    with open(path, "w") as f:
        json.dump({k: info[k] for k in ("owner_token", "owner_id", "users",
                                        "group_id")}, f)


def read_cursors(api, users, deadline):
    for i, u in enumerate(users, 1):
        if i % 1000 == 0 and now() > deadline:
            raise BenchError("setup: out of time reading cursors (--max-seconds)")
        me = api.expect(200, "GET", "/me", None, u["token"])
        u["cursor"] = int(me["eventCursor"])


def setup(api, members, deadline):
    """Owner + members, friendships, one group, cursors. Returns a dict."""
    t_start = now()

    def check_time(what):
        if now() > deadline:
            raise BenchError(f"setup: out of time during {what} "
                             f"(--max-seconds)")

    owner = api.expect(201, "POST", "/auth/register",
                       {"username": "owner", "password": PASSWORD,
                        "displayName": "Bench owner"},
                       hint="does this build have the account routes?")
    owner_token = owner["token"]
    owner_id = owner["user"]["id"]

    # Registrations hash their passwords (scrypt, at the server's minimum cost,
    # about 0.1 s each here): several at once, so both cores hash.
    local = threading.local()
    done = [0]
    done_lock = threading.Lock()

    def register(i):
        if not hasattr(local, "api"):
            local.api = Api(api.host, api.port)
        check_time("registration")
        name = f"m{i:05d}"
        reg = local.api.expect(201, "POST", "/auth/register",
                               {"username": name, "password": PASSWORD,
                                "displayName": f"Member {i}"})
        with done_lock:
            done[0] += 1
            if done[0] % 1000 == 0 or done[0] == members:
                log(f"setup: registered {done[0]}/{members} members")
        return {"name": name, "id": reg["user"]["id"], "token": reg["token"]}

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        users = list(pool.map(register, range(1, members + 1)))
    t_reg = now()

    request_ids = []
    for i, u in enumerate(users, 1):
        if i % 1000 == 0:
            check_time("friend requests")
        fr = api.expect(201, "POST", "/friend-requests", {"userId": u["id"]},
                        owner_token,
                        hint="does this build have the social routes?")
        request_ids.append(fr["id"])
    log(f"setup: {members} friend requests sent")
    for i, (u, rid) in enumerate(zip(users, request_ids), 1):
        if i % 1000 == 0:
            check_time("accepting friend requests")
        friend = api.expect(200, "POST", f"/friend-requests/{rid}/accept",
                            None, u["token"])
        u["conversation"] = friend["conversationId"]
    log(f"setup: {members} friend requests accepted")
    t_friends = now()

    group_body = {"name": "fan-out bench",
                  "memberIds": [u["id"] for u in users]}
    body_bytes = len(json.dumps(group_body, separators=(",", ":")))
    if body_bytes >= 1 << 20:
        raise BenchError(f"POST /groups body would be {body_bytes} bytes, "
                         f"over the server's 1 MiB limit")
    group = api.expect(201, "POST", "/groups", group_body, owner_token)
    group_id = group["id"]
    if len(group.get("members", [])) != members + 1:
        raise BenchError(f"POST /groups: group has "
                         f"{len(group.get('members', []))} members, expected "
                         f"{members + 1}")
    t_group = now()

    read_cursors(api, users, deadline)
    t_end = now()
    log(f"setup: done in {t_end - t_start:.1f} s")
    return {
        "owner_token": owner_token, "owner_id": owner_id, "users": users,
        "group_id": group_id,
        "timing_s": {
            "register": round(t_reg - t_start, 2),
            "friendships": round(t_friends - t_reg, 2),
            "group": round(t_group - t_friends, 2),
            "cursors": round(t_end - t_group, 2),
            "total": round(t_end - t_start, 2),
        },
    }


# ---------------------------------------------------------------------------
# Raw non-blocking HTTP/1.1 sockets
# ---------------------------------------------------------------------------

def response_length(buf):
    """Total length of the response at the start of buf, or -1 if the head
    has not arrived. Needs Content-Length (all Switchboard JSON answers)."""
    head_end = buf.find(b"\r\n\r\n")
    if head_end < 0:
        return -1
    i = buf.find(b"\r\nContent-Length: ", 0, head_end)
    if i >= 0:
        i += 18
    else:   # not the server's own spelling: slow, case-insensitive path
        head = buf[:head_end].lower()
        i = head.find(b"\r\ncontent-length:")
        if i < 0:
            if b"\r\ntransfer-encoding:" in head:
                raise BenchError("unexpected chunked response: "
                                 f"{buf[:200]!r}")
            return head_end + 4
        i += 17
    j = buf.find(b"\r\n", i)
    return head_end + 4 + int(buf[i:j])


def status_of(resp):
    return int(resp[9:12])


def body_of(resp):
    return resp[resp.find(b"\r\n\r\n") + 4:]


def cursor_of(resp):
    """The "cursor" of an /events answer, without parsing the JSON."""
    body = body_of(resp)
    i = body.find(b'"cursor":')
    if i < 0:
        raise BenchError(f"/events answer without a cursor: {body[:200]!r}")
    i += 9
    j = i
    while j < len(body) and body[j] in b" 0123456789":
        j += 1
    return int(body[i:j])


def connect_blocking(host, port, timeout=10.0):
    s = socket.create_connection((host, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setblocking(False)
    return s


class Poller:
    """One member's long-poll socket."""
    __slots__ = ("idx", "token", "cursor", "sock", "state", "out", "buf",
                 "resp", "t_done", "reconnects")

    def __init__(self, idx, token, cursor):
        self.idx = idx
        self.token = token
        self.cursor = cursor
        self.sock = None
        self.state = CLOSED
        self.out = b""
        self.buf = b""
        self.resp = None
        self.t_done = 0.0
        self.reconnects = 0

    def request(self):
        return (f"GET /events?after={self.cursor}&wait=25 HTTP/1.1\r\n"
                f"Host: 127.0.0.1\r\nAuthorization: Bearer {self.token}\r\n"
                f"\r\n").encode()


class Control:
    """A raw keep-alive socket that sends one request at a time (the POSTs
    of the measured steps), registered in the same selector as the polls."""
    __slots__ = ("sock", "state", "buf", "resp", "t_done")

    def __init__(self, sock):
        self.sock = sock
        self.state = WAITING
        self.buf = b""
        self.resp = None
        self.t_done = 0.0


def json_post(path, token, payload):
    body = json.dumps(payload, separators=(",", ":")).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def send_all_nonblocking(sock, data, deadline):
    """Writes a small request on a non-blocking socket (bounded wait)."""
    view = memoryview(data)
    while view:
        try:
            n = sock.send(view)
            view = view[n:]
        except (BlockingIOError, InterruptedError):
            if now() > deadline:
                raise BenchError("could not write a request within the time")
            time.sleep(0.0005)


class FanOut:
    """Step 1: the long polls of all members and the measured rounds."""

    def __init__(self, args, api, info):
        self.args = args
        self.api = api
        self.info = info
        self.sel = selectors.DefaultSelector()
        self.pollers = [Poller(i, u["token"], u["cursor"])
                        for i, u in enumerate(info["users"])]
        self.problems = {}      # description -> count
        self.early = 0          # answers that came before the event
        self.ctl = None

    def note(self, what, n=1):
        self.problems[what] = self.problems.get(what, 0) + n

    # -- holding ------------------------------------------------------------

    def _start(self, p):
        """Connect (if needed) and begin sending p's poll. True while in
        flight (connecting or not fully written), False when sent or lost
        (then p.state is CLOSED and the caller queues it again)."""
        p.out = p.request()
        p.buf = b""
        p.resp = None
        if p.sock is None:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            rc = s.connect_ex((self.args.host, self.args.port))
            if rc not in (0, errno.EINPROGRESS):
                s.close()
                raise BenchError(f"connect: {os.strerror(rc)}")
            p.sock = s
            p.state = CONNECTING
            self.sel.register(s, selectors.EVENT_WRITE, p)
            return True
        p.state = SENDING
        return not self._send(p, registered_for_write=False)

    def _send(self, p, registered_for_write):
        """Writes what is left of p.out; True when all of it is written."""
        try:
            n = p.sock.send(p.out)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as e:
            self._lost(p, f"send: {e.strerror}")
            return True   # no longer in flight
        p.out = p.out[n:]
        if p.out:
            if not registered_for_write:
                self.sel.modify(p.sock, selectors.EVENT_WRITE, p)
            return False
        p.state = WAITING
        if registered_for_write:
            self.sel.modify(p.sock, selectors.EVENT_READ, p)
        return True

    def _lost(self, p, why):
        """The connection failed or the server closed it: reconnect later
        (bounded), counting it as a problem."""
        self.note(f"long-poll connection lost ({why})")
        try:
            self.sel.unregister(p.sock)
        except (KeyError, ValueError):
            pass
        p.sock.close()
        p.sock = None
        p.state = CLOSED
        p.reconnects += 1
        if p.reconnects > 3:
            raise BenchError(f"member {p.idx + 1}: long-poll connection lost "
                             f"{p.reconnects} times (last: {why})")

    def _read_held(self, p, requeue):
        """A poll socket became readable while we wait for all to be held."""
        try:
            data = p.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._lost(p, f"recv: {e.strerror}")
            requeue.append(p)
            return
        if not data:
            self._lost(p, "closed by server while holding")
            requeue.append(p)
            return
        p.buf += data
        total = response_length(p.buf)
        if total < 0 or len(p.buf) < total:
            return
        resp, p.buf = p.buf[:total], p.buf[total:]
        status = status_of(resp)
        if status != 200:
            raise BenchError(f"member {p.idx + 1}: GET /events answered "
                             f"{status} before the event: "
                             f"{body_of(resp)[:300]!r}")
        # Answered at once or timed out: events we did not expect, or an
        # empty batch. Move the cursor on and poll again.
        self.early += 1
        p.cursor = cursor_of(resp)
        p.state = ANSWERED
        requeue.append(p)

    def hold(self, pollers):
        """Sends a poll on each of `pollers` and waits (bounded) until the
        server reports every poller of the benchmark held. Returns seconds."""
        args = self.args
        t_start = now()
        deadline = t_start + args.hold_timeout
        queue = deque(pollers)
        in_flight = 0
        last_gauge = None
        next_scrape = 0.0
        want = len(self.pollers)
        while True:
            t = now()
            if t > deadline:
                raise BenchError(
                    f"the server did not hold all {want} long polls within "
                    f"{args.hold_timeout:.0f} s: switchboard_event_waiters = "
                    f"{last_gauge}, {len(queue)} polls not yet sent, "
                    f"{in_flight} connecting")
            while queue and in_flight < args.concurrency:
                p = queue.popleft()
                if self._start(p):
                    in_flight += 1
                elif p.state == CLOSED:
                    queue.append(p)
                    break   # retry on the next turn, after select()
            for key, events in self.sel.select(timeout=0.05):
                p = key.data
                if p.state == CONNECTING:
                    err = p.sock.getsockopt(socket.SOL_SOCKET,
                                            socket.SO_ERROR)
                    if err:
                        in_flight -= 1
                        self._lost(p, f"connect: {os.strerror(err)}")
                        queue.append(p)
                        continue
                    p.state = SENDING
                if p.state == SENDING:
                    if events & selectors.EVENT_WRITE:
                        if self._send(p, registered_for_write=True):
                            in_flight -= 1
                            if p.state == CLOSED:
                                queue.append(p)
                    continue
                if p.state == WAITING:
                    self._read_held(p, queue)
            if not queue and in_flight == 0 and now() >= next_scrape:
                last_gauge = self.api.waiters()
                if last_gauge >= want:
                    if last_gauge > want:
                        self.note(f"waiter gauge read {last_gauge}, more "
                                  f"than the {want} polls held")
                    return now() - t_start
                next_scrape = now() + 0.1

    # -- one measured round ---------------------------------------------------

    def _control_connection(self):
        """A fresh keep-alive connection for the owner's POST, already past
        one request (GET /healthz), so it is established and idle, not
        waiting for a first request head (which the server times out)."""
        s = socket.create_connection((self.args.host, self.args.port),
                                     timeout=10.0)
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

    def fire(self, text):
        """Owner posts one group message; reads every answer. Returns a dict
        of figures for the round."""
        args = self.args
        pollers = self.pollers
        n = len(pollers)
        post = json_post(f"/groups/{self.info['group_id']}/messages",
                         self.info["owner_token"], {"text": text})
        ctl = self.ctl = Control(self._control_connection())
        self.sel.register(ctl.sock, selectors.EVENT_READ, ctl)
        select = self.sel.select
        pending = n
        post_done = False
        gc.disable()
        server_cpu0 = cpu_seconds(args.server_pid)
        cpu0 = own_cpu_seconds()
        t0 = now()
        send_all_nonblocking(ctl.sock, post, t0 + 5)
        deadline = t0 + args.answer_timeout
        while pending or not post_done:
            events = select(0.5)
            if now() > deadline:
                break
            for key, _ in events:
                p = key.data
                try:
                    data = p.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                t = now()
                if not data:
                    self.sel.unregister(p.sock)
                    if p is ctl:
                        raise BenchError("the server closed the owner's "
                                         "connection during the group POST")
                    p.sock.close()
                    p.sock = None
                    p.state = CLOSED
                    pending -= 1
                    continue
                buf = p.buf + data if p.buf else data
                total = response_length(buf)
                if total < 0 or len(buf) < total:
                    p.buf = buf
                    continue
                p.resp, p.buf = buf[:total], buf[total:]
                p.t_done = t
                p.state = ANSWERED
                if p is ctl:
                    post_done = True
                else:
                    pending -= 1
        t_end = now()
        cpu1 = own_cpu_seconds()
        server_cpu1 = cpu_seconds(args.server_pid)
        gc.enable()
        self.sel.unregister(ctl.sock)
        ctl.sock.close()
        self.ctl = None

        # ---- post-processing, outside the measured window ----
        if not post_done:
            raise BenchError(f"POST /groups/.../messages not answered within "
                             f"{args.answer_timeout:.0f} s")
        post_status = status_of(ctl.resp)
        if post_status != 201:
            raise BenchError(f"POST /groups/.../messages answered "
                             f"{post_status}: {body_of(ctl.resp)[:300]!r}")
        times = []
        other = {}
        for p in pollers:
            if p.state == ANSWERED:
                resp = p.resp
                if status_of(resp) == 200 and b'"group_message"' in resp:
                    times.append(p.t_done - t0)
                    p.cursor = cursor_of(resp)
                    continue
                why = f"status {status_of(resp)}"
                if status_of(resp) == 200:
                    why = "200 without a group_message event"
                    p.cursor = cursor_of(resp)
            elif p.state == CLOSED:
                why = "connection closed by server"
            else:
                why = f"no answer within {args.answer_timeout:.0f} s"
            other[why] = other.get(why, 0) + 1
        for why, count in other.items():
            self.note(f"fan-out answers: {why}", count)
        result = {
            "answered": len(times),
            "expected": n,
            "unanswered": other,
            "post_ms": ms(ctl.t_done - t0),
            "last_ms": ms(max(times)) if times else None,
            "p50_ms": ms(pct(times, 50)) if times else None,
            "p99_ms": ms(pct(times, 99)) if times else None,
            "first_ms": ms(min(times)) if times else None,
            "window_ms": ms(t_end - t0),
            "client_cpu_ms": ms(cpu1 - cpu0),
            "server_cpu_ms": ms(server_cpu1 - server_cpu0),
        }
        return result

    # -- release on disconnect -------------------------------------------

    def release_check(self):
        """Hold every poll once more, close all sockets, and time how long the
        server's waiter gauge takes to drop to 0 (at most 10 s)."""
        live = [p for p in self.pollers]
        self.hold(live)
        t0 = now()
        for p in self.pollers:
            if p.sock is not None:
                self.sel.unregister(p.sock)
                p.sock.close()
                p.sock = None
                p.state = CLOSED
        t_closed = now()
        gauge = None
        while now() - t_closed < 10.0:
            gauge = self.api.waiters()
            if gauge == 0:
                return {"released_ms": ms(now() - t0), "left": 0}
            time.sleep(0.05)
        return {"released_ms": None, "left": gauge}

    def close(self):
        for p in self.pollers:
            if p.sock is not None:
                p.sock.close()
                p.sock = None
        if self.ctl is not None:
            self.ctl.sock.close()
        self.sel.close()
        gc.enable()


def run_fanout(args, api, info, out):
    fan = FanOut(args, api, info)
    n = len(fan.pollers)
    rounds = []
    turns = turns_from_args(args.turns, "ours", "anchor")
    try:
        if turns:
            turns.wait(1)
        time.sleep(1.0)    # settle after setup
        rss_before = rss_kb(args.server_pid)
        log(f"fan-out: opening {n} long polls (RSS before: {rss_before} KB)")
        hold_s = fan.hold(fan.pollers)
        time.sleep(1.0)    # settle: per-connection allocations finish
        rss_held = rss_kb(args.server_pid)
        kb_per = (rss_held - rss_before) / n
        log(f"fan-out: {n} polls held after {hold_s:.1f} s; RSS {rss_held} KB "
            f"= {kb_per:.2f} KB per held long-poll")
        rss_round = rss_held
        for r in range(1, args.rounds + 1):
            if turns and r > 1:
                turns.wait(r)
            if r > 1:
                # Fresh polls from the cursors of the last answers.
                hold_s = fan.hold(fan.pollers)
                time.sleep(0.5)
                rss_round = rss_kb(args.server_pid)
            res = fan.fire(f"fan-out round {r}")
            res["hold_s"] = round(hold_s, 2)
            res["rss_held_kb"] = rss_round
            rounds.append(res)
            log(f"fan-out round {r}/{args.rounds}: {res['answered']}/{n} "
                f"answered, last {fmt(res['last_ms'])} ms, p50 "
                f"{fmt(res['p50_ms'])} ms, p99 {fmt(res['p99_ms'])} ms")
            if turns:
                turns.hand_over(r)
        if turns:
            turns.wait(args.rounds + 1)    # the anchor's last round is over
        log("fan-out: holding the polls again, then closing every socket "
            "(waiter release check)")
        release = fan.release_check()
    finally:
        fan.close()
    figures = {
        "members": n,
        "rss_before_kb": rss_before,
        "rss_held_kb": rss_held,
        "kb_per_poll": round(kb_per, 2),
        "rounds": rounds,
        "median_last_ms": median_or_none([r["last_ms"] for r in rounds]),
        "median_p50_ms": median_or_none([r["p50_ms"] for r in rounds]),
        "median_p99_ms": median_or_none([r["p99_ms"] for r in rounds]),
        "median_client_cpu_ms": median_or_none(
            [r["client_cpu_ms"] for r in rounds]),
        "all_answered": all(r["answered"] == n for r in rounds),
        "early_answers": fan.early,
        "release": release,
        "problems": fan.problems,
    }
    out["fanout"] = figures

    print(f"Fan-out: {n} members in one group, one long poll each "
          f"(GET /events wait=25), one group message; {args.rounds} rounds")
    print(f"  {'round':>5} {'answered':>9} {'last ms':>9} {'p50 ms':>8} "
          f"{'p99 ms':>8} {'first ms':>9} {'POST ms':>8} {'client CPU ms':>14} "
          f"{'server CPU ms':>14}")
    for i, r in enumerate(rounds, 1):
        print(f"  {i:>5} {r['answered']:>9} {fmt(r['last_ms']):>9} "
              f"{fmt(r['p50_ms']):>8} {fmt(r['p99_ms']):>8} "
              f"{fmt(r['first_ms']):>9} {fmt(r['post_ms']):>8} "
              f"{fmt(r['client_cpu_ms']):>14} {fmt(r['server_cpu_ms']):>14}")
    print(f"  median: last {fmt(figures['median_last_ms'])} ms, p50 "
          f"{fmt(figures['median_p50_ms'])} ms, p99 "
          f"{fmt(figures['median_p99_ms'])} ms; client CPU "
          f"{fmt(figures['median_client_cpu_ms'])} ms per round "
          f"(from just before the POST to the last answer)")
    print(f"  memory: RSS {rss_before} KB before -> {rss_held} KB with {n} "
          f"held = {kb_per:.2f} KB per held long-poll")
    if release["left"] == 0:
        print(f"  waiter release: all {n} waiters released "
              f"{release['released_ms']} ms after the client closed its "
              f"sockets")
    else:
        print(f"  waiter release: {release['left']} waiters still registered "
              f"10 s after the client closed its sockets")
    print(f"  target: all {n} answered within 250 ms -> "
          f"{target(figures['median_last_ms'], 250, figures['all_answered'])}")
    print(f"  target: <= 8 KB per held long-poll -> "
          f"{target(figures['kb_per_poll'], 8)}")
    sys.stdout.flush()


def fmt(v):
    return "n/a" if v is None else (f"{v:.1f}" if isinstance(v, float) else
                                   str(v))


def target(value, limit, ok=True):
    if value is None or not ok:
        return "NOT met"
    return "met" if value <= limit else "NOT met"


# ---------------------------------------------------------------------------
# Step 2: single-event latency
# ---------------------------------------------------------------------------

def run_latency(args, api, info, out):
    receiver = info["users"][0]
    conversation = receiver["conversation"]
    owner_token = info["owner_token"]
    path = f"/conversations/{conversation}/messages"
    host, port = args.host, args.port
    # The receiver's poll goes to --poll-port when given: another instance on the same
    # database, so the latency is a wake-up across instances.
    poll_port = args.poll_port or port
    # The fan-out rounds moved the receiver's feed on: start from now.
    me = api.expect(200, "GET", "/me", None, receiver["token"])

    sel = selectors.DefaultSelector()
    recv_sock = connect_blocking(host, poll_port)
    send_sock = connect_blocking(host, port)
    problems = {}

    def note(what):
        problems[what] = problems.get(what, 0) + 1

    state = {"cursor": int(me["eventCursor"]), "t_poll": 0.0, "buf": b"",
             "polls": 0, "empty": 0}

    def poll():
        req = (f"GET /events?after={state['cursor']}&wait=25 HTTP/1.1\r\n"
               f"Host: 127.0.0.1\r\nAuthorization: Bearer {receiver['token']}"
               f"\r\n\r\n").encode()
        state["t_poll"] = now()
        send_all_nonblocking(recv_sock, req, now() + 5)
        state["polls"] += 1

    sel.register(recv_sock, selectors.EVENT_READ, "receiver")
    sel.register(send_sock, selectors.EVENT_READ, "sender")

    def run(count, rate, label):
        """Sends `count` messages at `rate`/s (one POST in flight at a time)
        while the receiver keeps a poll outstanding. Returns
        sent {messageId: (t_send, t_post_answered)}, seen {messageId:
        (t_seen, t_poll_sent)} and the POST statuses."""
        sent = {}
        seen = {}
        statuses = {}
        interval = 1.0 / rate
        k = 0
        busy = False
        t_send = 0.0
        send_buf = b""
        start = now() + 0.05
        hard = start + count * interval + args.latency_grace
        while now() < hard:
            if k >= count and not busy and all(m in seen for m in sent):
                break
            t = now()
            if not busy and k < count:
                due = start + k * interval
                if t >= due:
                    req = json_post(path, owner_token,
                                    {"text": f"{label} {k}"})
                    t_send = now()
                    send_all_nonblocking(send_sock, req, t_send + 5)
                    busy = True
                    timeout = 0.05
                else:
                    timeout = due - t
            else:
                timeout = 0.05
            for key, _ in sel.select(timeout):
                sock = key.fileobj
                try:
                    data = sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                t_read = now()
                if not data:
                    raise BenchError(f"latency: the server closed the "
                                     f"{key.data}'s connection")
                if key.data == "receiver":
                    state["buf"] += data
                    total = response_length(state["buf"])
                    if total < 0 or len(state["buf"]) < total:
                        continue
                    resp = state["buf"][:total]
                    state["buf"] = state["buf"][total:]
                    t_poll = state["t_poll"]
                    if status_of(resp) != 200:
                        raise BenchError(f"latency: GET /events answered "
                                         f"{status_of(resp)}: "
                                         f"{body_of(resp)[:300]!r}")
                    page = json.loads(body_of(resp))
                    state["cursor"] = page["cursor"]
                    poll()      # re-issue at once, then book-keep
                    if not page["events"]:
                        state["empty"] += 1
                    for ev in page["events"]:
                        if ev.get("kind") == "message" and ev.get("messageId"):
                            seen.setdefault(ev["messageId"], (t_read, t_poll))
                else:
                    send_buf += data
                    total = response_length(send_buf)
                    if total < 0 or len(send_buf) < total:
                        continue
                    resp, send_buf = send_buf[:total], send_buf[total:]
                    status = status_of(resp)
                    statuses[status] = statuses.get(status, 0) + 1
                    if status == 201:
                        msg = json.loads(body_of(resp))
                        sent[msg["id"]] = (t_send, t_read)
                    else:
                        note(f"POST /conversations/{{id}}/messages answered "
                             f"{status}")
                    busy = False
                    k += 1
        if busy or k < count:
            note("latency: ran out of time before every message was sent")
        return sent, seen, statuses

    count = int(round(args.rate * args.duration))
    try:
        poll()          # one poll outstanding from here on
        if args.warmup > 0:
            run(args.warmup, args.rate, "warm-up")
        log(f"latency: {args.warmup} warm-up messages done; sending {count} "
            f"at {args.rate:g}/s")
        gc.disable()
        t_begin = now()
        sent, seen, statuses = run(count, args.rate, "latency")
        t_finish = now()
    finally:
        gc.enable()
        sel.close()
        recv_sock.close()
        send_sock.close()

    lat = []
    held_lat = []
    repoll_lat = []
    post_lat = []
    missing = 0
    for mid, (t_send, t_post_done) in sent.items():
        post_lat.append(t_post_done - t_send)
        if mid not in seen:
            missing += 1
            continue
        t_seen, t_poll = seen[mid]
        d = t_seen - t_send
        lat.append(d)
        (held_lat if t_poll < t_send else repoll_lat).append(d)
    if missing:
        problems[f"messages never seen by the receiver within "
                 f"{args.latency_grace:.0f} s"] = missing
    if not lat:
        raise BenchError("latency: no message was seen by the receiver")
    sends_span = max(s[0] for s in sent.values()) - min(
        s[0] for s in sent.values()) if len(sent) > 1 else 0.0
    achieved = (len(sent) - 1) / sends_span if sends_span > 0 else 0.0

    figures = {
        "messages": count,
        "warmup": args.warmup,
        "sent_201": len(sent),
        "seen": len(lat),
        "achieved_rate": round(achieved, 1),
        "p50_ms": ms(pct(lat, 50)),
        "p99_ms": ms(pct(lat, 99)),
        "max_ms": ms(max(lat)),
        "mean_ms": ms(statistics.fmean(lat)),
        "held_poll": {"n": len(held_lat),
                      "p50_ms": ms(pct(held_lat, 50)) if held_lat else None,
                      "p99_ms": ms(pct(held_lat, 99)) if held_lat else None},
        "repoll": {"n": len(repoll_lat),
                   "p50_ms": ms(pct(repoll_lat, 50)) if repoll_lat else None,
                   "p99_ms": ms(pct(repoll_lat, 99)) if repoll_lat else None},
        "post_p50_ms": ms(pct(post_lat, 50)),
        "post_p99_ms": ms(pct(post_lat, 99)),
        "polls": state["polls"],
        "empty_polls": state["empty"],
        "post_statuses": {str(k): v for k, v in statuses.items()},
        "elapsed_s": round(t_finish - t_begin, 2),
        "problems": problems,
    }
    out["latency"] = figures

    print()
    print(f"Single-event latency: owner -> m00001 1:1 messages at "
          f"{args.rate:g}/s for {args.duration:g} s; receiver long-polls "
          f"(wait=25), re-polling at once")
    print(f"  sent {len(sent)}/{count} (201), seen {len(lat)}, achieved "
          f"{achieved:.1f} msg/s, {state['polls']} polls")
    print(f"  send->seen: p50 {figures['p50_ms']} ms, p99 "
          f"{figures['p99_ms']} ms, max {figures['max_ms']} ms, mean "
          f"{figures['mean_ms']} ms")
    hp, rp = figures["held_poll"], figures["repoll"]
    print(f"    poll already outstanding at send: {hp['n']} (p50 "
          f"{fmt(hp['p50_ms'])} ms, p99 {fmt(hp['p99_ms'])} ms); sent while "
          f"no poll was out, found by the next one: {rp['n']} (p50 "
          f"{fmt(rp['p50_ms'])} ms, p99 {fmt(rp['p99_ms'])} ms)")
    print(f"  POST /conversations/{{id}}/messages itself: p50 "
          f"{figures['post_p50_ms']} ms, p99 {figures['post_p99_ms']} ms")
    print(f"  target: p99 <= 5 ms -> {target(figures['p99_ms'], 5)}")
    sys.stdout.flush()


# ---------------------------------------------------------------------------
# Server-side counters worth a look afterwards
# ---------------------------------------------------------------------------

def non_2xx(metrics_text):
    """{'GET /events 499': count, ...} from switchboard_http_requests_total."""
    found = {}
    for line in metrics_text.splitlines():
        if not line.startswith("switchboard_http_requests_total{"):
            continue
        labels, _, value = line.rpartition(" ")
        parts = dict(kv.split("=", 1) for kv in
                     labels[labels.index("{") + 1:labels.rindex("}")]
                     .split('",') if "=" in kv)
        parts = {k: v.strip('"') for k, v in parts.items()}
        status = parts.get("status", "")
        if status.startswith("2"):
            continue
        key = f"{parts.get('method')} {parts.get('route')} {status}"
        found[key] = found.get(key, 0) + int(float(value))
    return found


def run_client(name, args, needed, out, body, expected):
    """The frame of a load client's main(), shared with call_latency.py.

    Raises RLIMIT_NOFILE to `needed` (exit status 2 if it cannot), calls
    body(api, started) with an Api on args.host:args.port (setup and the
    measurements, filling `out`), then records the server's non-2xx counts
    against `expected` ({"METHOD /path STATUS": count}) and the setup
    reconnects in `out`. A BenchError is reported as "NAME: error: ..." (exit
    status 1). `out` always goes to args.json_out (if set). Returns the exit
    status.
    """
    started = now()
    limit = raise_nofile(needed)
    if limit < needed:
        print(f"error: RLIMIT_NOFILE is {limit}, need {needed}; raise "
              f"`ulimit -n`", file=sys.stderr)
        return 2

    api = Api(args.host, args.port)
    rc = 0
    try:
        body(api, started)
        time.sleep(0.2)   # let the server record the last cancelled polls
        found = non_2xx(api.metrics_text())
        out["non_2xx"] = found
        out["unexpected_non_2xx"] = {
            k: f"{v} (expected {expected.get(k, 0)})"
            for k, v in found.items() if v != expected.get(k, 0)}
        out["unexpected_non_2xx"].update({
            k: f"0 (expected {v})" for k, v in expected.items()
            if k not in found})
        out["setup_reconnects"] = api.reconnects
    except BenchError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        out["error"] = str(e)
        rc = 1
    finally:
        api.close()
        out["client_seconds"] = round(now() - started, 1)
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump(out, f, indent=1, sort_keys=True)
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--server-pid", type=int, required=True,
                    help="read VmRSS and CPU time of this process")
    ap.add_argument("--members", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=200,
                    help="most long-poll sockets being set up at once")
    ap.add_argument("--hold-timeout", type=float, default=60.0,
                    help="s to wait for the server to hold every poll")
    ap.add_argument("--answer-timeout", type=float, default=30.0,
                    help="s to wait for the answers of one fan-out round")
    ap.add_argument("--rate", type=float, default=200.0,
                    help="1:1 messages per second in the latency step")
    ap.add_argument("--duration", type=float, default=10.0,
                    help="s of sending in the latency step")
    ap.add_argument("--warmup", type=int, default=20,
                    help="uncounted 1:1 messages before the latency step")
    ap.add_argument("--latency-grace", type=float, default=5.0,
                    help="s to wait for the last messages to be seen")
    ap.add_argument("--max-seconds", type=float, default=220.0,
                    help="cap on the setup's duration; every later step is "
                         "bounded by its own timeouts")
    ap.add_argument("--poll-port", type=int, default=0,
                    help="the latency step's receiver polls this port (another "
                         "instance on the same database); default --port")
    ap.add_argument("--json-out", help="write all figures here as JSON")
    ap.add_argument("--state", help="the setup's users, tokens and group: read from this file "
                    "when it exists (the server then runs on a copy of that setup's data), "
                    "else written to it after the setup")
    ap.add_argument("--turns", help="a turn file shared with the anchor's client (bench/turns.py): "
                    "fan-out rounds alternate with the anchor's")
    args = ap.parse_args()
    if args.members < 1 or args.rounds < 1 or args.rate <= 0:
        ap.error("--members, --rounds and --rate must be positive")

    out = {"members": args.members, "rounds": args.rounds}

    def body(api, started):
        if args.state and os.path.exists(args.state):
            info = load_state(args.state, api, args.members, started + args.max_seconds)
        else:
            log(f"setup: owner + {args.members} members, friendships, one group")
            info = setup(api, args.members, started + args.max_seconds)
            if args.state:
                save_state(args.state, info)
        out["setup_s"] = info["timing_s"]
        run_fanout(args, api, info, out)
        run_latency(args, api, info, out)

    # Expected: the release check closes every held poll, and the latency
    # step closes its receiver with a poll outstanding; the server counts
    # those as 499 (client closed request).
    return run_client("event_fanout", args, args.members + 64, out, body,
                      {"GET /events 499": args.members + 1})


if __name__ == "__main__":
    sys.exit(main())
