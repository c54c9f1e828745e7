"""Python `websockets` client sending empty messages and empty fragments to a switchyard echo server.

argv: url mode, mode one of takeover, client_nct, server_nct, both_nct (which sides offer
*_no_context_takeover). Prints one JSON line; exit 1 on a mismatch or a closed connection.
"""
import asyncio
import json
import sys

import websockets
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory

# Whole messages, then fragmented ones (a list: one fragment per item), each echoed whole.
MESSAGES = ['abc', '', b'', 'after the empty ones', b'\x00bin', '', 'x' * 3000, '', b'',
            ['frag', '', 'ment'], [b'', b''], ['', ''], ['', 'x'], ['y', ''], [b'\x01', b''], 'end']


async def main():
    url, mode = sys.argv[1], sys.argv[2]
    factory = ClientPerMessageDeflateFactory(
        client_no_context_takeover=mode in ('client_nct', 'both_nct'),
        server_no_context_takeover=mode in ('server_nct', 'both_nct'),
        client_max_window_bits=True)
    async with websockets.connect(url, compression=None, extensions=[factory], open_timeout=10) as ws:
        params = [str(e) for e in ws.extensions]
        for i, m in enumerate(MESSAGES):
            await ws.send(m)
            want = (b'' if isinstance(m[0], bytes) else '').join(m) if isinstance(m, list) else m
            got = await ws.recv()
            if got != want:
                print(json.dumps({'error': f'message {i}: sent {m!r}, got back {got!r}'}), flush=True)
                sys.exit(1)
        await ws.close()
        print(json.dumps({'echoed': len(MESSAGES), 'extensions': params}), flush=True)


asyncio.run(main())
