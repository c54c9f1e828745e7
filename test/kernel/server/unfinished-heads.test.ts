/**
 * Unfinished request heads: what a connection holds while a head arrives (its bytes and a small
 * constant: no string or record per line), and a server holding many of them.
 */
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { destroyAfter, killAfter } from '../../helpers/cleanup.js';
import { expectServing } from '../../helpers/server.js';
import { unfinishedHead } from './fixtures/unfinished-heads.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/unfinished-heads.ts', import.meta.url));
const NODE_ARGS = ['--expose-gc', '--import', 'tsx'];

function runParserChild(n: number, size: number, piece: number, maxHeaderBytes = 4 << 20, kind = 'request'): Promise<{ headBytes: number; perParser: number }> {
  const args = [String(n), String(size), String(piece), String(maxHeaderBytes), kind];
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [...NODE_ARGS, FIXTURE, 'parser', ...args], { timeout: 20_000 }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as { headBytes: number; perParser: number });
    });
    killAfter(child);
  });
}

describe('an unfinished head is held as its bytes', () => {
  // Its bytes, in a buffer that grows by at most 4 KiB or an eighth past them, and a few
  // hundred bytes of parser: under its size + 12 KiB. Records per line (about 32 bytes for a
  // 50-byte line) made it twice its size; strings cut per line, 2.7x and more.
  for (const [size, piece, limit] of [
    [60, 1024],
    [60, 200],
    [60, 16384],
    [60, 1024, 64],
    [20, 1],
    [200, 4096],
  ] as const) {
    const what = limit === undefined ? '' : ` (maxHeaderBytes ${limit} KiB)`;
    it(`a ${size} KiB head arriving in ${piece}-byte pieces costs the parser its size and a constant${what}`, async () => {
      const r = await runParserChild(100, size * 1024, piece, limit === undefined ? undefined : limit * 1024);
      expect(r.perParser - r.headBytes).toBeLessThan(Math.max(12 * 1024, r.headBytes / 8 + 4096));
    });
  }

  it('a 60 KiB trailer section arriving in 1024-byte pieces costs the parser its size and a constant', async () => {
    const r = await runParserChild(100, 60 * 1024, 1024, 4 << 20, 'trailers');
    expect(r.perParser - r.headBytes).toBeLessThan(12 * 1024);
  });

  it('200 connections each holding an unfinished 60 KiB head: the server serves others, then reclaims them', async () => {
    const child: ChildProcess = killAfter(fork(FIXTURE, ['server'], { execArgv: NODE_ARGS, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
    const [{ port }] = (await once(child, 'message')) as [{ port: number }];
    const stats = async (): Promise<{ rss: number; connections: number }> => {
      child.send('stats');
      return ((await once(child, 'message')) as [{ rss: number; connections: number }])[0];
    };
    const before = await stats();
    const head = unfinishedHead(60 * 1024);
    const socks: net.Socket[] = [];
    for (let i = 0; i < 200; i++) socks.push(destroyAfter(net.connect(port, '127.0.0.1')));
    await Promise.all(socks.map((s) => once(s, 'connect')));
    for (let off = 0; off < head.length; off += 1024) {
      // One piece per connection per round, each round acknowledged by a served request, so
      // the server reads every piece separately.
      for (const s of socks) s.write(head.subarray(off, off + 1024));
      const res = await expectServing(port);
      expect(res.status).toBe(200);
    }
    const held = await stats();
    // The last served client's connection may still be closing.
    expect(held.connections).toBeGreaterThanOrEqual(200);
    for (const s of socks) s.destroy();
    const deadline = performance.now() + 5000;
    let after = await stats();
    while (after.connections !== 0 && performance.now() < deadline) after = await stats();
    expect(after.connections).toBe(0);
    const perConn = (held.rss - before.rss) / 200;
    console.log(
      `unfinished 60 KiB heads: RSS ${(before.rss / 2 ** 20).toFixed(0)} MB -> ${(held.rss / 2 ** 20).toFixed(0)} MB held by 200 connections (${(perConn / 1024).toFixed(0)} KiB each), ${(after.rss / 2 ** 20).toFixed(0)} MB after they closed`,
    );
    // Loose: RSS also counts what the allocator keeps; the parser test above is the tight one.
    expect(perConn).toBeLessThan(1024 * 1024);
  });
});
