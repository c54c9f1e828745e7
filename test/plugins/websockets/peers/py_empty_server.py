"""Python `websockets` echo server for a switchyard client, with permessage-deflate as `mode` says.

argv: mode (takeover, client_nct, server_nct, both_nct: which *_no_context_takeover the server
asks for). The message `frags` is answered with fragmented messages whose fragments are empty.
Prints its port on the first line, then serves until killed.
"""
import asyncio
import sys

import websockets
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory

FRAGMENTED = [['frag', '', 'ment'], [b'', b''], ['', ''], ['y', ''], [b'', b'\x02']]


async def handler(ws, path=None):
    async for msg in ws:
        if msg == 'frags':
            for m in FRAGMENTED:
                await ws.send(m)
            await ws.send('frags done')
            continue
        await ws.send(msg)


async def main():
    mode = sys.argv[1]
    factory = ServerPerMessageDeflateFactory(
        client_no_context_takeover=mode in ('client_nct', 'both_nct'),
        server_no_context_takeover=mode in ('server_nct', 'both_nct'))
    async with websockets.serve(handler, '127.0.0.1', 0, compression=None, extensions=[factory]) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()


asyncio.run(main())
