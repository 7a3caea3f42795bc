#!/usr/bin/env python3
"""An independent WebSocket peer (the `websockets` package) for the interoperability tests.

client URL  drives our server's echo endpoint and prints one JSON object of what it saw.
server      serves an echo endpoint that pings every 0.2 s, prints its port, handles one
            connection and prints what it saw as JSON when that connection ends.
Every step is bounded; the process ends by itself within a minute.
"""
import asyncio
import json
import sys

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed


async def client(url):
    seen = {}
    async with connect(url, max_size=None, open_timeout=20, ping_interval=None) as ws:
        await ws.send("héllo")
        seen["text"] = await ws.recv()
        sizes = []
        for size in (0, 125, 126, 65535, 65536, 200000):
            payload = bytes((i * 7) % 256 for i in range(size))
            await ws.send(payload)
            echoed = await ws.recv()
            sizes.append(len(echoed) if echoed == payload else -1)
        seen["binary"] = sizes
        await ws.send(["ab", "cd", "ef"])  # one message in three fragments
        seen["fragmented"] = await ws.recv()
        pong = await ws.ping(b"xyz")
        await asyncio.wait_for(pong, 20)
        seen["pong"] = True
        await ws.send("close:4001:done")
        try:
            await ws.recv()
        except ConnectionClosed as closed:
            seen["serverClose"] = [closed.rcvd.code, closed.rcvd.reason] if closed.rcvd else None
    async with connect(url, max_size=None, open_timeout=20, ping_interval=None) as ws:
        await ws.close(4000, "bye")
        seen["clientClose"] = [ws.protocol.close_rcvd.code] if ws.protocol.close_rcvd else None
    async with connect(url, max_size=None, open_timeout=20, ping_interval=None) as ws:
        await ws.send(bytes(300000))
        try:
            await ws.recv()
        except ConnectionClosed as closed:
            seen["tooBig"] = closed.rcvd.code if closed.rcvd else None
    print(json.dumps(seen), flush=True)


async def server():
    seen = {"messages": []}
    done = asyncio.Event()

    async def echo(ws):
        try:
            async for message in ws:
                seen["messages"].append(len(message))
                await ws.send(message)
        except ConnectionClosed:
            pass
        seen["closeCode"] = ws.protocol.close_rcvd.code if ws.protocol.close_rcvd else None
        done.set()

    async with serve(echo, "127.0.0.1", 0, ping_interval=0.2, ping_timeout=5, max_size=None) as running:
        port = running.sockets[0].getsockname()[1]
        print(port, flush=True)
        try:
            await asyncio.wait_for(done.wait(), 50)
        except asyncio.TimeoutError:
            seen["timedOut"] = True
    print(json.dumps(seen), flush=True)


async def main():
    if sys.argv[1] == "client":
        await asyncio.wait_for(client(sys.argv[2]), 50)
    else:
        await server()


asyncio.run(main())
