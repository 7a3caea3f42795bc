#!/usr/bin/env python3
"""Before/after CPU per call transition, two servers side by side in one run.

Used by scripts/bench-ab-calls.sh. Each server (127.0.0.1 only) gets its own
caller and callee, who are friends; the callee holds `GET /events?wait=25` on
a connection of its own and re-polls after every answer. A call is
`POST /calls`, the callee's poll answer, then `POST /calls/{id}/cancel` and
that answer too: two transitions. Calls are paced (--pause seconds after
each transition), because an idle server's request costs a busy one's two to
three times over on this kind of machine, and that is the case the call
benchmark measures.

The servers take turns in blocks of calls (A B, B A, A B, ...), so a drift in
the machine's speed during the run hits both alike; the figure is each
server's user + system CPU time (/proc/PID/stat) during its own blocks, per
transition, and the ratio B / A. Run A against A to see the noise floor.

Every request has a timeout; the whole run is bounded by --max-seconds.
Exit status: 0 when every step ran (figures are never asserted), 1 when a
step failed, with a message on stderr.
"""

import argparse
import http.client
import json
import sys
import time
import uuid

PASSWORD = "bench-password-1"


class BenchError(Exception):
    pass


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


class Side:
    """One server, its two users and the callee's held poll."""

    def __init__(self, name, port, pid, timeout):
        self.name, self.pid = name, pid
        self.api = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.poll = http.client.HTTPConnection("127.0.0.1", port, timeout=30 + timeout)
        self.caller = self.register("abcaller")
        self.callee = self.register("abcallee")
        request = self.expect(201, "POST", "/friend-requests", {"userId": self.callee[1]}, self.caller[0])
        accepted = self.expect(200, "POST", f"/friend-requests/{request['id']}/accept", None, self.callee[0])
        self.conversation = accepted["conversationId"]
        self.cursor = self.expect(200, "GET", "/me", None, self.callee[0])["eventCursor"]
        self.cpu = 0.0
        self.send_poll()

    def request(self, method, path, body, token):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        self.api.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = self.api.getresponse()
        data = response.read()
        return response.status, (json.loads(data) if data else None)

    def expect(self, status, method, path, body=None, token=None):
        got, answer = self.request(method, path, body, token)
        if got != status:
            raise BenchError(f"{self.name}: {method} {path} answered {got}, expected {status}: {answer}")
        return answer

    def register(self, username):
        answer = self.expect(201, "POST", "/auth/register",
                             {"username": username, "password": PASSWORD, "displayName": username})
        return answer["token"], answer["user"]["id"]

    def send_poll(self):
        self.poll.request("GET", f"/events?after={self.cursor}&wait=25", None,
                          {"Authorization": "Bearer " + self.callee[0]})

    def read_poll(self):
        response = self.poll.getresponse()
        page = json.loads(response.read())
        if response.status != 200 or not page.get("events"):
            raise BenchError(f"{self.name}: the callee's poll answered {response.status} without the call's event")
        self.cursor = page["cursor"]
        self.send_poll()

    def call(self, pause):
        created = self.expect(201, "POST", "/calls", {
            "scopeKind": "conversation", "scopeId": self.conversation, "mode": "audio",
            "clientId": str(uuid.uuid4())}, self.caller[0])
        self.read_poll()
        time.sleep(pause)
        self.expect(200, "POST", f"/calls/{created['id']}/cancel", None, self.caller[0])
        self.read_poll()
        time.sleep(pause)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ports", required=True, help="PORT_A,PORT_B")
    parser.add_argument("--pids", required=True, help="PID_A,PID_B")
    parser.add_argument("--calls", type=int, default=1000, help="measured calls per server")
    parser.add_argument("--blocks", type=int, default=20, help="turns per server")
    parser.add_argument("--pause", type=float, default=0.005, help="seconds after each transition")
    parser.add_argument("--warmup", type=int, default=100, help="uncounted calls per server")
    parser.add_argument("--max-seconds", type=float, default=300)
    args = parser.parse_args()
    ports = [int(p) for p in args.ports.split(",")]
    pids = [int(p) for p in args.pids.split(",")]
    if len(ports) != 2 or len(pids) != 2 or args.calls < args.blocks or args.blocks < 2:
        parser.error("two ports, two pids, --blocks >= 2 and --calls >= --blocks")
    deadline = time.monotonic() + args.max_seconds
    try:
        sides = [Side(name, port, pid, timeout=10) for name, port, pid in zip("AB", ports, pids)]
        for side in sides:
            for _ in range(args.warmup):
                side.call(args.pause)
        per_block = args.calls // args.blocks
        for block in range(args.blocks):
            for side in (sides if block % 2 == 0 else sides[::-1]):
                if time.monotonic() > deadline:
                    raise BenchError(f"not done within --max-seconds {args.max_seconds}")
                before = cpu_seconds(side.pid)
                for _ in range(per_block):
                    side.call(args.pause)
                side.cpu += cpu_seconds(side.pid) - before
    except (BenchError, OSError, ValueError, KeyError) as error:
        print(f"ab_calls: error: {error}", file=sys.stderr)
        return 1
    transitions = per_block * args.blocks * 2
    a, b = (side.cpu * 1e6 / transitions for side in sides)
    print(f"server CPU per call transition ({transitions} transitions each, paced {args.pause * 1000:g} ms, "
          f"{args.blocks} alternating turns): A {a:.0f} us, B {b:.0f} us, B/A {b / a:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
