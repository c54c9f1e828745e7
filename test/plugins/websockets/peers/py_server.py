"""Python `websockets` server for a switchyard client: echoes every message; `close:CODE` closes.

argv: compress(0|1). Prints its port on the first line, then serves until killed.
"""
import asyncio
import sys

import websockets


async def handler(ws, path=None):
    async for msg in ws:
        if isinstance(msg, str) and msg.startswith('close:'):
            await ws.close(code=int(msg[6:]), reason='asked')
            return
        if isinstance(msg, str) and msg == 'path':
            await ws.send(ws.path + ' ' + ','.join(e.name for e in ws.extensions) + ' ' + str(ws.subprotocol))
            continue
        await ws.send(msg)


async def main():
    compress = sys.argv[1] == '1'
    async with websockets.serve(handler, '127.0.0.1', 0, compression='deflate' if compress else None,
                                max_size=None, subprotocols=['chat']) as server:
        port = server.sockets[0].getsockname()[1]
        print(port, flush=True)
        await asyncio.Future()


asyncio.run(main())
