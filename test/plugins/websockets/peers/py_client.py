"""Python `websockets` client against a switchyard server: echo of text and binary messages.

argv: url compress(0|1) [subprotocol]. Prints one JSON line with what it saw; exit 1 on a mismatch.
"""
import asyncio
import json
import sys

import websockets

SIZES = [1, 125, 126, 65535, 65536, 1024 * 1024, 8 * 1024 * 1024]
PATTERN = bytes(range(256))


def payload(n):
    return (PATTERN * (n // 256 + 1))[:n]


async def main():
    url, compress = sys.argv[1], sys.argv[2] == '1'
    subprotocols = [sys.argv[3]] if len(sys.argv) > 3 else None
    async with websockets.connect(url, compression='deflate' if compress else None, max_size=None,
                                  subprotocols=subprotocols, open_timeout=10) as ws:
        seen = {'extensions': [e.name for e in ws.extensions], 'subprotocol': ws.subprotocol, 'echoed': 0}
        for n in SIZES:
            b = payload(n)
            await ws.send(b)
            got = await ws.recv()
            if got != b:
                print(json.dumps({'error': f'binary {n} mismatch'}), flush=True)
                sys.exit(1)
            t = 'é' * max(1, n // 2)
            await ws.send(t)
            got = await ws.recv()
            if got != t:
                print(json.dumps({'error': f'text {n} mismatch'}), flush=True)
                sys.exit(1)
            seen['echoed'] += 2
        pong = await ws.ping(b'py')
        await asyncio.wait_for(pong, 5)
        await ws.close(code=4000, reason='py done')
        seen['close_code'] = ws.close_code
        print(json.dumps(seen), flush=True)


asyncio.run(main())
