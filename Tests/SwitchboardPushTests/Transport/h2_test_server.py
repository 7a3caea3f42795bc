#!/usr/bin/env python3
"""HTTP/2 test server for the SwitchboardPush transport tests (test tooling only; needs `pip install h2`).

Serves h2c with prior knowledge, or HTTP/2 over TLS (ALPN "h2") with --cert/--key, optionally requiring a client
certificate (--client-ca); --http1 serves HTTP/1.1 only over TLS (to check that the client refuses it).

Prints "listening PORT" on stdout once bound to 127.0.0.1, and exits on SIGTERM/SIGINT or when its stdin
closes, so it never outlives the test process that started it. On exit it drops every connection at once, like
a crashing or restarting server.

Routes (any method):
  /echo?status=N   status N (default 200); body = request body; headers apns-id (the request's or a fixed one),
                   x-echo-method
  /inspect         200; body = JSON {method, path, headers: [[name, value]...], body_b64} of the request
  /delay?ms=N      waits N ms, then 200 "late"
  /big?bytes=N     200 with N bytes (i % 251)
  /goaway          200, then GOAWAY (last stream = this one) and close the connection
  /stats           200; JSON {connections, open, requests, resets}
"""
import argparse
import asyncio
import base64
import json
import signal
import ssl
import sys
from urllib.parse import parse_qs, urlsplit

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

STATS = {"connections": 0, "open": 0, "requests": 0, "resets": 0}
PROTOCOLS = set()


class H2Protocol(asyncio.Protocol):
    def __init__(self, max_streams):
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.max_streams = max_streams
        self.transport = None
        self.requests = {}  # stream id -> (headers, bytearray)
        self.tasks = {}  # stream id -> asyncio.Task
        self.window_open = asyncio.Event()

    # asyncio.Protocol

    def connection_made(self, transport):
        STATS["connections"] += 1
        STATS["open"] += 1
        PROTOCOLS.add(self)
        self.transport = transport
        self.conn.initiate_connection()
        self.conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.max_streams})
        self.flush()

    def connection_lost(self, exc):
        STATS["open"] -= 1
        PROTOCOLS.discard(self)
        for task in self.tasks.values():
            task.cancel()
        self.tasks.clear()

    def data_received(self, data):
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.flush()
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.requests[event.stream_id] = (event.headers, bytearray())
            elif isinstance(event, h2.events.DataReceived):
                if event.stream_id in self.requests:
                    self.requests[event.stream_id][1].extend(event.data)
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                if event.stream_id in self.requests:
                    STATS["requests"] += 1
                    headers, body = self.requests.pop(event.stream_id)
                    task = asyncio.get_running_loop().create_task(self.handle(event.stream_id, headers, bytes(body)))
                    self.tasks[event.stream_id] = task
                    task.add_done_callback(lambda _, sid=event.stream_id: self.tasks.pop(sid, None))
            elif isinstance(event, h2.events.StreamReset):
                STATS["resets"] += 1
                self.requests.pop(event.stream_id, None)
                task = self.tasks.pop(event.stream_id, None)
                if task:
                    task.cancel()
            elif isinstance(event, h2.events.WindowUpdated):
                self.window_open.set()
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.flush()
                self.transport.close()
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data and self.transport and not self.transport.is_closing():
            self.transport.write(data)

    # Requests

    async def handle(self, stream_id, headers, body):
        fields = [(name, value) for name, value in headers]
        pseudo = dict((n, v) for n, v in fields if n.startswith(":"))
        method, target = pseudo.get(":method", ""), pseudo.get(":path", "/")
        split = urlsplit(target)
        query = {k: v[0] for k, v in parse_qs(split.query).items()}
        route = split.path
        try:
            if route == "/echo":
                apns_id = next((v for n, v in fields if n == "apns-id"), "00000000-0000-0000-0000-000000000000")
                await self.respond(stream_id, int(query.get("status", "200")),
                                   [("apns-id", apns_id), ("x-echo-method", method)], body)
            elif route == "/inspect":
                report = {"method": method, "path": target,
                          "headers": [[n, v] for n, v in fields if not n.startswith(":")],
                          "body_b64": base64.b64encode(body).decode()}
                await self.respond(stream_id, 200, [("content-type", "application/json")], json.dumps(report).encode())
            elif route == "/delay":
                await asyncio.sleep(int(query.get("ms", "1000")) / 1000)
                await self.respond(stream_id, 200, [], b"late")
            elif route == "/big":
                size = int(query.get("bytes", "0"))
                await self.respond(stream_id, 200, [], bytes(i % 251 for i in range(size)))
            elif route == "/goaway":
                await self.respond(stream_id, 200, [], b"bye")
                self.conn.close_connection(last_stream_id=stream_id)
                self.flush()
                self.transport.close()
            elif route == "/stats":
                await self.respond(stream_id, 200, [("content-type", "application/json")], json.dumps(STATS).encode())
            else:
                await self.respond(stream_id, 404, [], b"no such route")
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            pass  # the client reset the stream or the connection went away

    async def respond(self, stream_id, status, headers, body):
        response_headers = [(":status", str(status)), ("content-length", str(len(body)))] + headers
        self.conn.send_headers(stream_id, response_headers, end_stream=not body)
        self.flush()
        view = memoryview(body)
        while view:
            window = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            if window <= 0:
                self.window_open.clear()
                await self.window_open.wait()
                continue
            chunk, view = view[:window], view[window:]
            self.conn.send_data(stream_id, bytes(chunk), end_stream=not view)
            self.flush()


class HTTP1Protocol(asyncio.Protocol):
    """Just enough HTTP/1.1 to answer one request per connection (for the not-HTTP/2 check)."""

    def __init__(self):
        self.buffer = b""

    def connection_made(self, transport):
        STATS["connections"] += 1
        self.transport = transport

    def data_received(self, data):
        self.buffer += data
        head, sep, rest = self.buffer.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if len(rest) < length:
            return
        STATS["requests"] += 1
        self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
        self.transport.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--client-ca")
    parser.add_argument("--http1", action="store_true")
    parser.add_argument("--max-streams", type=int, default=1000)
    args = parser.parse_args()

    context = None
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        context.set_alpn_protocols(["http/1.1"] if args.http1 else ["h2"])
        if args.client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(args.client_ca)

    loop = asyncio.get_running_loop()
    factory = HTTP1Protocol if args.http1 else (lambda: H2Protocol(args.max_streams))
    server = await loop.create_server(factory, "127.0.0.1", args.port, ssl=context, reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    def stdin_readable():
        if not sys.stdin.buffer.read1(4096):
            stop.set()

    loop.add_reader(sys.stdin.fileno(), stdin_readable)
    print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
    await stop.wait()
    server.close()
    for protocol in list(PROTOCOLS):
        protocol.transport.abort()


if __name__ == "__main__":
    asyncio.run(main())
