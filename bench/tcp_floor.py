#!/usr/bin/env python3
"""The raw-TCP floor of a lossy link, measured with the Linux kernel alone.

    sudo python3 bench/tcp_floor.py [--loss 0,30,50] [--delay-ms 10] [--trials 200]
                                    [--connects 50] [--json FILE]

Any design that carries its messages over one TCP connection meets, on a lossy link, a floor
that no code above the socket can lower, because the kernel alone decides when to send again.
A segment lost k times waits k of the kernel's retransmission timeouts: the first about 200 ms
(Linux's minimum) plus the round trip, or less when a tail-loss probe recovers it, each
further one twice the last; and lost ACKs make the kernel retransmit and back off too. A new
connection waits the SYN timeouts instead: 1 s, then 2 s more, 4 s more, ...

This script measures that floor with no Switchboard code in the path: two network namespaces
joined by one link with a fixed delay and a random loss in BOTH directions (a lossy Wi-Fi link
loses packets both ways), an echo server in one, a client in the other, both plain kernel TCP
sockets.

Per loss percentage (each on freshly made namespaces, so no TCP state or cached route metric
carries over), the client measures:

- warm round trips: one TCP_NODELAY connection, warmed by a few unmeasured exchanges, then
  --trials round trips of a 400-byte message echoed back in full, one at a time, --gap-ms
  apart. A trial not done within --trial-timeout counts as timed out and the connection is
  replaced;
- new connections: --connects fresh connects, each followed by one 400-byte round trip,
  timing the connect and the connect plus that first round trip.

It prints one Markdown table, a row per loss percentage: round-trip percentiles (a timed-out
trial counts as longer than the timeout), the share of "clean" trips (under twice the no-loss
round trip, the one measured at 0 % loss, else twice the configured delay each way), and the
connect percentiles. --json FILE also writes every figure and the raw samples. The whole run
stops measuring at --max-seconds and reports what it has, saying so.

The link is tc netem on both ends of a veth pair. A kernel built without netem
(CONFIG_NET_SCH_NETEM) gets, with the default --link auto, a stand-in instead: a tun device in
each namespace and a small relay process per direction that drops and delays packets the same
way (each packet dropped independently, the rest held for the delay); TCP is still the
kernel's at both ends, and the report names the link it used.

Needs root (it creates namespaces) and iproute2 (`ip`, `tc`). Everything it creates is deleted
when it ends, also on Ctrl-C or SIGTERM; no traffic leaves the namespaces. Exit status: 0 when
it measured, 1 on a failure, 2 on bad usage, when not root or when iproute2 is missing.
"""

import argparse
import collections
import fcntl
import json
import math
import os
import platform
import random
import select
import shutil
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time

MESSAGE_SIZE = 400
WARM_EXCHANGES = 5
IFNAME = "sbf0"
PORT = 7400
SCRIPT = os.path.abspath(__file__)


class Failure(Exception):
    """A measurement that could not be made; the message says why."""


# --- command line -------------------------------------------------------------------------


def percentages(text):
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}")
    if not values or any(not 0 <= value < 100 for value in values):
        raise argparse.ArgumentTypeError("loss percentages must be at least 0 and below 100")
    return values


def positive(kind):
    def parse(text):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be above 0: {text}")
        return value
    return parse


def non_negative(text):
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {text}")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Measure the raw-TCP floor of a lossy link (kernel TCP over netem, "
                    "in two network namespaces). Needs root.")
    parser.add_argument("--loss", type=percentages, default=percentages("0,30,50"),
                        help="loss percentages each way, comma-separated (default 0,30,50)")
    parser.add_argument("--delay-ms", type=non_negative, default=10.0,
                        help="one-way delay per direction in ms (default 10)")
    parser.add_argument("--trials", type=positive(int), default=200,
                        help="warm round trips per loss percentage (default 200)")
    parser.add_argument("--connects", type=positive(int), default=50,
                        help="new connections per loss percentage (default 50)")
    parser.add_argument("--gap-ms", type=non_negative, default=100.0,
                        help="pause between trials and between connects in ms (default 100)")
    parser.add_argument("--trial-timeout", type=positive(float), default=60.0,
                        help="seconds one trial or connect may take (default 60)")
    parser.add_argument("--max-seconds", type=positive(float), default=900.0,
                        help="stop measuring after this many seconds in all (default 900)")
    parser.add_argument("--link", choices=("auto", "netem", "tun"), default="auto",
                        help="netem on a veth pair, a tun relay, or netem when the kernel "
                             "has it (default auto)")
    parser.add_argument("--json", metavar="FILE", help="also write all figures and samples")
    # Internal: the roles this script plays inside the namespaces.
    parser.add_argument("--role", choices=("serve", "client", "relay"), help=argparse.SUPPRESS)
    parser.add_argument("--host", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=PORT, help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--relay-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--relay-loss", type=float, default=0.0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# --- roles inside the namespaces ----------------------------------------------------------


def exit_when_parent_goes():
    """Ends this process when its stdin (a pipe from the parent) closes."""
    def watch():
        sys.stdin.buffer.read()
        os._exit(0)
    threading.Thread(target=watch, daemon=True).start()


class EchoHandler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := self.request.recv(65536):
            self.request.sendall(data)


class EchoServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        pass  # a connection reset on a lossy link is not the server's concern


def serve(args):
    server = EchoServer((args.host, args.port), EchoHandler)
    print("ready", flush=True)
    exit_when_parent_goes()
    server.serve_forever()


def open_tun(name):
    tunsetiff, iff_tun, iff_no_pi = 0x400454CA, 0x0001, 0x1000
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, tunsetiff, struct.pack("16sH22x", name.encode(), iff_tun | iff_no_pi))
    return fd


def relay(args):
    """One end of the tun link: sends what this namespace sends, after a loss and a delay."""
    tun = open_tun(IFNAME)
    wire = socket.socket(fileno=args.relay_fd)
    stdin = sys.stdin.fileno()
    delay, loss, rng = args.delay_ms / 1000, args.relay_loss / 100, random.Random()
    queue = collections.deque()  # (due time, packet), in order: the delay is fixed
    print("ready", flush=True)
    while True:
        timeout = max(0.0, queue[0][0] - time.monotonic()) if queue else None
        readable, _, _ = select.select([tun, wire, stdin], [], [], timeout)
        if tun in readable:
            packet = os.read(tun, 65536)
            if rng.random() >= loss:
                queue.append((time.monotonic() + delay, packet))
        if wire in readable:
            packet = wire.recv(65536)
            if not packet:
                return 0
            deliver(tun, packet)
        if stdin in readable and not os.read(stdin, 4096):
            return 0
        while queue and queue[0][0] <= time.monotonic():
            wire.send(queue.popleft()[1])


def deliver(tun, packet):
    try:
        os.write(tun, packet)
    except OSError:
        pass  # the device is not up yet (an IPv6 packet sent while setting up): lost


# --- the client ---------------------------------------------------------------------------


def message(number):
    return (f"{number:09d}," * (MESSAGE_SIZE // 10)).encode()[:MESSAGE_SIZE]


def exchange(sock, payload, timeout):
    """Sends PAYLOAD and reads it back in full; TimeoutError after TIMEOUT seconds."""
    end = time.monotonic() + timeout
    sock.settimeout(timeout)
    sock.sendall(payload)
    received = bytearray()
    while len(received) < len(payload):
        remaining = end - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        sock.settimeout(remaining)
        chunk = sock.recv(len(payload) - len(received))
        if not chunk:
            raise Failure("the echo server closed the connection")
        received += chunk
    if received != payload:
        raise Failure("the echo came back different from the message")


def connect(host, port, timeout):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(timeout)
    try:
        sock.connect((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


class Budget:
    """Each operation's time: the trial timeout, or less when the overall deadline is nearer."""

    def __init__(self, trial_timeout, deadline):
        self.trial_timeout, self.deadline = trial_timeout, deadline

    def next(self):
        return min(self.trial_timeout, self.deadline - time.time())

    def cut_short(self, budget):
        return budget < self.trial_timeout


def open_warm_connection(args, budget, counts):
    """A connection that has done WARM_EXCHANGES round trips, or None at the deadline."""
    while (allowed := budget.next()) > 0:
        try:
            sock = connect(args.host, args.port, allowed)
        except TimeoutError:
            counts["warmup_timeouts"] += 1
            continue
        try:
            for number in range(WARM_EXCHANGES):
                exchange(sock, message(number), max(budget.next(), 0.001))
            return sock
        except TimeoutError:
            counts["warmup_timeouts"] += 1
            sock.close()
    return None


def measure_trips(args, budget):
    """Warm round trips in ms; a timed-out trial is math.inf."""
    samples, counts, cut, sock = [], collections.Counter(), False, None
    try:
        for number in range(args.trials):
            if sock is None:
                sock = open_warm_connection(args, budget, counts)
            allowed = budget.next()
            if sock is None or allowed <= 0:
                cut = True
                break
            start = time.monotonic()
            try:
                exchange(sock, message(number), allowed)
                samples.append((time.monotonic() - start) * 1000)
            except TimeoutError:
                sock.close()
                sock = None
                if budget.cut_short(allowed):
                    cut = True
                    break
                samples.append(math.inf)
            progress("trips", number + 1, args.trials)
            time.sleep(args.gap_ms / 1000)
    finally:
        if sock is not None:
            sock.close()
    return {"rtt_ms": samples, "cut_by_cap": cut, **counts}


def one_connect(args, budget, number):
    """{connect_ms, first_trip_ms} of one new connection (math.inf when timed out), or None
    when the deadline cut it short."""
    allowed = budget.next()
    if allowed <= 0:
        return None
    record, start = {"connect_ms": math.inf, "first_trip_ms": math.inf}, time.monotonic()
    try:
        sock = connect(args.host, args.port, allowed)
    except TimeoutError:
        return None if budget.cut_short(allowed) else record
    try:
        record["connect_ms"] = (time.monotonic() - start) * 1000
        exchange(sock, message(number), max(allowed - record["connect_ms"] / 1000, 0.001))
        record["first_trip_ms"] = (time.monotonic() - start) * 1000
    except TimeoutError:
        if budget.cut_short(allowed):
            return None
    finally:
        sock.close()
    return record


def measure_connects(args, budget):
    records, cut = [], False
    for number in range(args.connects):
        record = one_connect(args, budget, number)
        if record is None:
            cut = True
            break
        records.append(record)
        progress("connects", number + 1, args.connects)
        time.sleep(args.gap_ms / 1000)
    return {"connects": records, "cut_by_cap": cut}


def progress(what, done, total):
    if done == total or done % max(total // 4, 1) == 0:
        print(f"  {what} {done}/{total}", file=sys.stderr, flush=True)


def kernel_settings():
    names = ("tcp_congestion_control", "tcp_syn_retries", "tcp_early_retrans", "tcp_frto")
    settings = {}
    for name in names:
        with open(f"/proc/sys/net/ipv4/{name}") as fh:
            settings[name] = fh.read().strip()
    return settings


def run_client(args):
    budget = Budget(args.trial_timeout, args.deadline)
    result = {"trips": measure_trips(args, budget)}
    result["connects"] = measure_connects(args, budget) if budget.next() > 0 \
        else {"connects": [], "cut_by_cap": True}
    result["kernel_settings"] = kernel_settings()
    json.dump(result, sys.stdout)  # json writes math.inf as Infinity, which json reads back
    return 0


# --- the test bed: namespaces, link, server -----------------------------------------------


def run(*command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise Failure(f"`{' '.join(command)}` failed: {done.stderr.strip()}")


class signals_held:
    """Holds SIGINT and SIGTERM back while tearing down, so a second Ctrl-C cannot cut it."""

    def __enter__(self):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


class Namespaces:
    """Named network namespaces that are deleted again, with the processes started in them."""

    def __init__(self, *names):
        self.names, self.made, self.children = names, [], []

    def __enter__(self):
        try:
            for name in self.names:
                run("ip", "netns", "add", name)
                self.made.append(name)
                run("ip", "-n", name, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def spawn(self, name, role_args, pass_fds=()):
        """This script in namespace NAME, in its own session (Ctrl-C is the parent's)."""
        command = ["ip", "netns", "exec", name, sys.executable, SCRIPT, *role_args]
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 pass_fds=pass_fds, start_new_session=True)
        self.children.append(child)
        return child

    def close(self):
        with signals_held():
            for child in self.children:
                stop(child)
            for name in self.made:
                subprocess.run(["ip", "netns", "del", name], capture_output=True)
            self.children, self.made = [], []


def stop(child):
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(timeout=3)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    for stream in (child.stdin, child.stdout):
        if stream:
            stream.close()


def await_ready(child, what):
    if child.stdout.readline().strip() != b"ready":
        raise Failure(f"the {what} did not start (exit status {child.wait()})")


class Testbed(Namespaces):
    """Namespaces A and B joined by a lossy, delayed link, an echo server running in B."""

    def __init__(self, link, loss, delay_ms):
        tag = os.getpid()
        super().__init__(f"sbfloor-a-{tag}", f"sbfloor-b-{tag}")
        self.link, self.loss, self.delay_ms = link, loss, delay_ms
        subnet = f"10.231.{tag % 254 + 1}"
        self.addresses = (f"{subnet}.1", f"{subnet}.2")

    def __enter__(self):
        super().__enter__()
        try:
            self.join_with_netem() if self.link == "netem" else self.join_with_tun()
            server = self.spawn(self.names[1], ["--role", "serve", "--host", self.addresses[1]])
            await_ready(server, "echo server")
        except BaseException:
            self.close()
            raise
        return self

    def address(self, name, address):
        run("ip", "-n", name, "addr", "add", f"{address}/24", "dev", IFNAME)
        run("ip", "-n", name, "link", "set", IFNAME, "up")

    def join_with_netem(self):
        a, b = self.names
        run("ip", "-n", a, "link", "add", IFNAME, "type", "veth", "peer", "name", IFNAME,
            "netns", b)
        for name, address in zip(self.names, self.addresses):
            self.address(name, address)
            run("ip", "netns", "exec", name, "tc", "qdisc", "add", "dev", IFNAME, "root",
                "netem", "delay", f"{self.delay_ms:g}ms", "loss", f"{self.loss:g}%")

    def join_with_tun(self):
        ends = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            for name, end in zip(self.names, ends):
                child = self.spawn(name, ["--role", "relay", "--relay-fd", str(end.fileno()),
                                          "--relay-loss", str(self.loss),
                                          "--delay-ms", str(self.delay_ms)],
                                   pass_fds=(end.fileno(),))
                await_ready(child, "tun relay")
            for name, address in zip(self.names, self.addresses):
                self.address(name, address)
        finally:
            for end in ends:
                end.close()

    def measure(self, args, deadline):
        """The client's figures, run in namespace A against the server in B."""
        client = self.spawn(self.names[0], [
            "--role", "client", "--host", self.addresses[1],
            "--trials", str(args.trials), "--connects", str(args.connects),
            "--gap-ms", str(args.gap_ms), "--trial-timeout", str(args.trial_timeout),
            "--deadline", repr(deadline)])
        wait = max(deadline - time.time(), 0) + args.trial_timeout + 30
        try:
            output, _ = client.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            raise Failure(f"the client did not finish within {wait:.0f} s")
        if client.returncode != 0:
            raise Failure(f"the client failed (exit status {client.returncode})")
        return json.loads(output)


def netem_available():
    probe = Namespaces(f"sbfloor-probe-{os.getpid()}")
    with probe:
        done = subprocess.run(["ip", "netns", "exec", probe.names[0], "tc", "qdisc", "add",
                               "dev", "lo", "root", "netem", "delay", "1ms"],
                              capture_output=True)
    return done.returncode == 0


def choose_link(requested):
    if requested == "tun" or (requested == "auto" and not netem_available()):
        if not os.path.exists("/dev/net/tun"):
            raise Failure("this kernel has neither netem (sch_netem) nor /dev/net/tun")
        if requested == "auto":
            print("tcp_floor: this kernel has no netem (sch_netem); using the tun relay",
                  file=sys.stderr)
        return "tun"
    if requested == "netem" and not netem_available():
        raise Failure("this kernel has no netem qdisc: `modprobe sch_netem`, or use --link tun")
    return "netem"


# --- figures and report -------------------------------------------------------------------


def percentile(values, share):
    """Nearest-rank percentile of VALUES (sorted or not); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(share / 100 * len(ordered)) - 1, 0)]


def summarize(loss, raw, baseline_ms):
    rtts = raw["trips"]["rtt_ms"]
    connects = raw["connects"]["connects"]
    connect_ms = [record["connect_ms"] for record in connects]
    first_trip_ms = [record["first_trip_ms"] for record in connects]
    return {
        "loss_pct": loss,
        "trials": len(rtts),
        "trials_timed_out": sum(math.isinf(value) for value in rtts),
        "rtt_p50_ms": percentile(rtts, 50),
        "rtt_p95_ms": percentile(rtts, 95),
        "rtt_p99_ms": percentile(rtts, 99),
        "rtt_max_ms": max(rtts, default=None),
        "clean_share": (sum(value < 2 * baseline_ms for value in rtts) / len(rtts)
                        if rtts and baseline_ms else None),
        "connects": len(connects),
        "connects_timed_out": sum(math.isinf(value) for value in first_trip_ms),
        "connect_p50_ms": percentile(connect_ms, 50),
        "connect_p95_ms": percentile(connect_ms, 95),
        "connect_first_trip_p95_ms": percentile(first_trip_ms, 95),
    }


def baseline_rtt(levels, delay_ms):
    """The no-loss round trip: measured at 0 % loss when that ran, else twice the delay."""
    for loss, raw in levels:
        finite = [value for value in raw["trips"]["rtt_ms"] if math.isfinite(value)]
        if loss == 0 and finite:
            return percentile(finite, 50), "the p50 measured at 0 % loss"
    return 2 * delay_ms, "twice the configured delay each way"


def ms(value, timeout):
    if value is None:
        return "–"
    if math.isinf(value):
        return f"> {timeout * 1000:.0f}"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def table_row(row, args):
    times = [ms(row[key], args.trial_timeout) for key in (
        "rtt_p50_ms", "rtt_p95_ms", "rtt_p99_ms", "rtt_max_ms")]
    clean = "–" if row["clean_share"] is None else f"{row['clean_share']:.0%}"
    connects = [ms(row[key], args.trial_timeout) for key in (
        "connect_p50_ms", "connect_p95_ms", "connect_first_trip_p95_ms")]
    cells = [f"{row['loss_pct']:g} %", f"{args.delay_ms:g} ms",
             f"{row['trials']} / {row['trials_timed_out']}", *times, clean,
             f"{row['connects']} / {row['connects_timed_out']}", *connects]
    return "| " + " | ".join(cells) + " |"


def report(args, link, summaries, baseline, baseline_source, capped, settings):
    link_name = ("netem on a veth pair" if link == "netem" else
                 "tun relay (userspace delay and loss; this kernel has no netem)")
    print(f"# Raw-TCP floor: {args.delay_ms:g} ms delay and random loss each way\n")
    print(f"Linux {platform.release()} kernel TCP ({settings.get('tcp_congestion_control', '?')},"
          f" tcp_syn_retries {settings.get('tcp_syn_retries', '?')}), link: {link_name}; "
          f"{time.strftime('%Y-%m-%d %H:%M %Z')}. Round trips: one TCP_NODELAY connection, "
          f"{MESSAGE_SIZE}-byte message echoed in full, {args.gap_ms:g} ms apart; connects: a "
          f"new connection and one round trip each. Times in ms; a trial or connect over "
          f"{args.trial_timeout:g} s counts as timed out (shown as "
          f"{ms(math.inf, args.trial_timeout)}). Clean: under 2 × the no-loss round trip "
          f"({baseline:.1f} ms, {baseline_source}).\n")
    print("| loss each way | delay each way | trials done / timed out | RTT p50 | RTT p95 "
          "| RTT p99 | RTT max | clean | connects done / timed out | connect p50 | connect p95 "
          "| connect + first trip p95 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in summaries:
        print(table_row(row, args))
    if capped:
        print(f"\nStopped at the --max-seconds cap ({args.max_seconds:g} s): the figures above "
              f"are what was measured by then; {', '.join(capped)}.")


def write_json(path, args, link, levels, summaries, baseline, baseline_source, capped):
    document = {
        "settings": {key: getattr(args, key) for key in (
            "loss", "delay_ms", "trials", "connects", "gap_ms", "trial_timeout", "max_seconds")},
        "message_bytes": MESSAGE_SIZE,
        "link": link,
        "kernel": platform.release(),
        "baseline_rtt_ms": baseline,
        "baseline_source": baseline_source,
        "capped": capped,
        "timed_out_as": "timeout",
        "levels": [dict(summary, raw=raw) for summary, (_, raw) in zip(summaries, levels)],
    }
    with open(path, "w") as fh:
        json.dump(strict_json(document), fh, indent=1)
        fh.write("\n")


def strict_json(value):
    """VALUE with every infinite time (a timeout) written as "timeout", which JSON allows."""
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [strict_json(item) for item in value]
    if isinstance(value, float) and math.isinf(value):
        return "timeout"
    return value


# --- the whole run ------------------------------------------------------------------------


def check_environment():
    if os.geteuid() != 0:
        print("tcp_floor: needs root (it creates network namespaces): "
              "sudo python3 bench/tcp_floor.py", file=sys.stderr)
        return False
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        print(f"tcp_floor: {' and '.join(missing)} not found: apt-get install -y iproute2",
              file=sys.stderr)
        return False
    return True


def measure_all(args, link, deadline):
    """[(loss, raw client figures)] and what the cap left out."""
    levels, capped = [], []
    for loss in args.loss:
        if time.time() >= deadline:
            capped.append(f"{loss:g} % loss not measured")
            continue
        print(f"tcp_floor: {loss:g} % loss each way, {args.delay_ms:g} ms delay each way",
              file=sys.stderr)
        with Testbed(link, loss, args.delay_ms) as testbed:
            raw = testbed.measure(args, deadline)
        levels.append((loss, raw))
        cut = [part for part in ("trips", "connects") if raw[part]["cut_by_cap"]]
        if cut:
            capped.append(f"{loss:g} % loss: {' and '.join(cut)} cut short")
    return levels, capped


def orchestrate(args):
    if not check_environment():
        return 2
    deadline = time.time() + args.max_seconds
    link = choose_link(args.link)
    levels, capped = measure_all(args, link, deadline)
    baseline, source = baseline_rtt(levels, args.delay_ms)
    summaries = [summarize(loss, raw, baseline) for loss, raw in levels]
    settings = levels[0][1]["kernel_settings"] if levels else {}
    report(args, link, summaries, baseline, source, capped, settings)
    if args.json:
        write_json(args.json, args, link, levels, summaries, baseline, source, capped)
    return 0


def play(args):
    """One of the roles inside a namespace."""
    roles = {"serve": serve, "relay": relay, "client": run_client}
    try:
        return roles[args.role](args)
    except (Failure, OSError) as failure:
        print(f"tcp_floor ({args.role}): {failure}", file=sys.stderr)
        return 1


def on_sigterm(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    args = parse_args(argv)
    if args.role:
        return play(args)
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        return orchestrate(args)
    except Failure as failure:
        print(f"tcp_floor: {failure}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("tcp_floor: interrupted; the namespaces are removed", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
