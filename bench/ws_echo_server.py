#!/usr/bin/env python3
"""The anchor of the WebSocket comparison in `switchboard-dev bench relay`: an echo server on
Python's `websockets` (the independent implementation the interoperability tests use). Binds
127.0.0.1 on a free port, prints it, echoes every message, and exits when its stdin closes."""
import asyncio
import sys

from websockets.asyncio.server import serve


async def echo(ws):
    async for message in ws:
        await ws.send(message)


async def main():
    async with serve(echo, "127.0.0.1", 0, max_size=None, compression=None) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)


asyncio.run(main())
