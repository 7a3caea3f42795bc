#!/usr/bin/env python3
"""Reference APNs client for the push benchmark: aioapns (PyPI) against the emulator.

Used by scripts/bench-push.sh, side by side with Benchmarks/PushBench (our
APNsProvider), against the same `switchboard-dev apns-emulator --tls`. It sends
the same pushes as push-bench: the VoIP payload of SPEC §3, the headers
apns-push-type voip, apns-topic <bundle>.voip, apns-priority 10,
apns-expiration, apns-collapse-id and a fresh apns-id per push, with a
provider token (ES256 JWT) from the same .p8 key, to --tokens device tokens
in turn, with --concurrency senders that each send their next push as soon
as the previous one was answered.

The client is aioapns (asyncio + the `h2` library + PyJWT), unmodified.
aioapns has no host or port option: it always dials api.push.apple.com:443
(APNS_SERVER / APNS_PORT on its connection protocol class). It is pointed at
the emulator by giving its connection pool a subclass of its own protocol
class with those two class attributes overridden; no aioapns code is
replaced. The emulator's self-signed CA is trusted through aioapns's public
`ssl_context` argument (with ALPN "h2": the emulator refuses TLS without
it, while aioapns's default context offers no ALPN).

aioapns opens a further connection only when one carries 1,000 streams (its
per-connection limit, or the server's SETTINGS_MAX_CONCURRENT_STREAMS), so
with fewer senders than that it always uses exactly one connection.

Only the given host and port are contacted. Every loop is bounded by the
push count, and the whole run by --max-seconds. One JSON object goes to
stdout (the same keys as push-bench); errors go to stderr.
Exit status: 0 when the run finished (figures are never asserted), 1 when
it failed, 2 on bad usage.
"""

import argparse
import asyncio
import json
import logging
import math
import ssl
import sys
import time
import uuid

try:
    import aioapns
    from aioapns import APNs, NotificationRequest, PushType
    from aioapns.connection import APNsProductionClientProtocol
except ImportError as error:  # the script installs it; say so when it could not
    sys.exit(f"apns_python_client: aioapns is not importable ({error}); "
             f"pip install aioapns")

# Same call as Benchmarks/PushBench/main.swift (Workload).
CALL_ID = "0b7c2f5e-6a61-4d47-9a3e-2f4c1d8e9b10"
PAYLOAD = {
    "aps": {},
    "callId": CALL_ID,
    "callerName": "Bench Caller",
    "mode": "audio",
    "scopeId": "9d1e4a7b-3c2f-4e5a-8b6d-1f0e2d3c4b5a",
    "scopeKind": "conversation",
}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="localhost",
                   help="emulator host; must match its certificate (localhost, 127.0.0.1)")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ca-file", required=True, help="the emulator's --ca-out certificate")
    p.add_argument("--team-id", required=True)
    p.add_argument("--key-id", required=True)
    p.add_argument("--key-file", required=True, help="the .p8 (PKCS#8 PEM) signing key")
    p.add_argument("--bundle-id", default="com.example.switchboard")
    p.add_argument("--count", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=200)
    p.add_argument("--warmup", type=int, default=2000)
    p.add_argument("--tokens", type=int, default=1000)
    p.add_argument("--max-seconds", type=float, default=120.0,
                   help="give up (exit 1) when warm-up plus run take longer")
    p.add_argument("--label", default=None)
    args = p.parse_args(argv)
    for name in ("count", "concurrency", "tokens", "port"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.warmup < 0:
        p.error("--warmup must be >= 0")
    return args


def percentile(sorted_values, fraction):
    """Nearest-rank percentile, as push-bench computes it (0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = math.ceil(fraction * len(sorted_values) - 1e-9)
    rank = min(max(rank, 1), len(sorted_values))
    return sorted_values[rank - 1]


class Tally:
    def __init__(self):
        self.latencies_ms = []
        self.statuses = {}
        self.failures = {}
        self.ok = 0

    def record(self, result, error, elapsed_ms):
        self.latencies_ms.append(elapsed_ms)
        if error is not None:
            name = type(error).__name__
            self.failures[name] = self.failures.get(name, 0) + 1
            return
        key = result.status if not result.description else f"{result.status} {result.description}"
        self.statuses[key] = self.statuses.get(key, 0) + 1
        if result.is_successful:
            self.ok += 1


def make_client(args, key_pem):
    context = ssl.create_default_context(cafile=args.ca_file)
    context.set_alpn_protocols(["h2"])
    client = APNs(
        key=key_pem, key_id=args.key_id, team_id=args.team_id,
        topic=f"{args.bundle_id}.voip", max_connections=1, use_sandbox=False,
        ssl_context=context)
    # aioapns dials protocol_class.APNS_SERVER:APNS_PORT; point those at the emulator.
    client.pool.protocol_class = type(
        "EmulatorClientProtocol", (APNsProductionClientProtocol,),
        {"APNS_SERVER": args.host, "APNS_PORT": args.port})
    return client


async def send_all(client, count, offset, concurrency, tokens):
    tally = Tally()
    next_index = 0

    async def sender():
        nonlocal next_index
        while True:  # bounded: each pass takes a new index, ends at count
            index = next_index
            next_index += 1
            if index >= count:
                return
            number = (offset + index) % len(tokens)
            request = NotificationRequest(
                device_token=tokens[number], message=PAYLOAD,
                notification_id=str(uuid.uuid4()), time_to_live=3600,
                priority=10, collapse_key=f"call_{CALL_ID}",
                push_type=PushType.VOIP)
            start = time.perf_counter_ns()
            result, error = None, None
            try:
                result = await client.send_notification(request)
            except Exception as exc:  # noqa: BLE001 - counted, never fatal
                error = exc
            tally.record(result, error, (time.perf_counter_ns() - start) / 1e6)

    await asyncio.gather(*(sender() for _ in range(min(concurrency, count))))
    return tally


async def run(args):
    with open(args.key_file, encoding="ascii") as fh:
        key_pem = fh.read()
    tokens = ["%064x" % n for n in range(1, args.tokens + 1)]
    client = make_client(args, key_pem)
    try:
        if args.warmup:
            warm = await send_all(client, args.warmup, 0, args.concurrency, tokens)
            if warm.ok == 0:
                raise RuntimeError(f"no push of the warm-up was answered 200: "
                                   f"statuses {warm.statuses}, failures {warm.failures}")
        cpu_before = time.process_time()
        started = time.perf_counter()
        tally = await send_all(client, args.count, args.warmup, args.concurrency, tokens)
        seconds = time.perf_counter() - started
        cpu_ms = (time.process_time() - cpu_before) * 1000
        connections = len(client.pool.connections)
    finally:
        client.pool.close()
        await asyncio.sleep(0)  # let the transports start closing
    latencies = sorted(tally.latencies_ms)
    figures = {
        "client": f"aioapns {getattr(aioapns, '__version__', '') or version_of('aioapns')} "
                  f"(Python {sys.version.split()[0]}, asyncio + h2 {version_of('h2')})",
        "label": args.label,
        "url": f"https://{args.host}:{args.port}",
        "count": args.count,
        "warmup": args.warmup,
        "concurrency": args.concurrency,
        "connections": connections,
        "device_tokens": args.tokens,
        "seconds": round(seconds, 3),
        "pushes_per_second": round(args.count / seconds) if seconds > 0 else 0,
        "p50_ms": round(percentile(latencies, 0.50), 3),
        "p90_ms": round(percentile(latencies, 0.90), 3),
        "p99_ms": round(percentile(latencies, 0.99), 3),
        "max_ms": round(latencies[-1], 3) if latencies else 0,
        "over_1s": sum(1 for value in latencies if value >= 1000),
        "ok": tally.ok,
        "statuses": dict(sorted(tally.statuses.items())),
        "failures": dict(sorted(tally.failures.items())),
        "client_cpu_ms": round(cpu_ms),
    }
    if figures["label"] is None:
        del figures["label"]
    return figures


def version_of(package):
    try:
        from importlib.metadata import version
        return version(package)
    except Exception:  # noqa: BLE001 - cosmetic only
        return "?"


def main(argv):
    args = parse_args(argv)
    # aioapns logs every non-200 answer at ERROR, which could be thousands of lines;
    # they are counted in "statuses" and "failures" instead.
    logging.basicConfig(level=logging.CRITICAL)
    try:
        figures = asyncio.run(asyncio.wait_for(run(args), timeout=args.max_seconds))
    except asyncio.TimeoutError:
        print(f"apns_python_client: did not finish within {args.max_seconds} s", file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 - reported, exit 1
        print(f"apns_python_client: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(json.dumps(figures, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
