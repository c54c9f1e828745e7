/**
 * `switchyard get --cache DIR` against the project's server: the second run of the same
 * request is answered from the directory without reaching the server, a stale entry is
 * revalidated (the server sees the stored ETag and answers 304, the command prints the stored
 * body), a response the server marks no-store is fetched each time, and `--cache` without a
 * directory is a usage error.
 */
import { describe, expect, it } from 'vitest';
import { Response, type Request } from '../../kernel/index.js';
import { startServer } from '../helpers/server.js';
import { runCli, tempDir } from './helpers.js';

async function origin(): Promise<{ base: string; seen: Request[] }> {
  const seen: Request[] = [];
  const { port } = await startServer((req) => {
    seen.push(req);
    const n = seen.length;
    if (req.target === '/fresh')
      return new Response(
        200,
        [
          ['Cache-Control', 'max-age=600'],
          ['Content-Type', 'text/plain'],
        ],
        `fresh ${n}\n`,
      );
    if (req.target === '/stale') {
      if (req.headers.get('If-None-Match') === '"v1"')
        return new Response(
          304,
          [
            ['ETag', '"v1"'],
            ['Cache-Control', 'max-age=0'],
          ],
          null,
        );
      return new Response(
        200,
        [
          ['Cache-Control', 'max-age=0'],
          ['ETag', '"v1"'],
          ['Content-Type', 'text/plain'],
        ],
        `stale ${n}\n`,
      );
    }
    return new Response(
      200,
      [
        ['Cache-Control', 'no-store'],
        ['Content-Type', 'text/plain'],
      ],
      `no-store ${n}\n`,
    );
  });
  return { base: `http://127.0.0.1:${port}`, seen };
}

describe('switchyard get --cache DIR', () => {
  it('answers the second run of a fresh response from the directory, without the server', async () => {
    const o = await origin();
    const dir = await tempDir();
    const first = await runCli(['get', `${o.base}/fresh`, '--cache', dir]);
    expect(first.stderr).toBe('');
    expect(first.out).toBe('fresh 1\n');
    const second = await runCli(['get', '-i', '-v', `${o.base}/fresh`, '--cache', dir]);
    expect(second.code).toBe(0);
    expect(second.stderr).toMatch(/^switchyard ~ cache hit \(age \d+ s\) http:\/\/127\.0\.0\.1:\d+\/fresh$/m);
    expect(second.out).toMatch(/^HTTP\/1\.1 200 OK\n/);
    expect(second.out).toMatch(/\nAge: \d+\n/i);
    expect(second.out.endsWith('\nfresh 1\n')).toBe(true);
    expect(o.seen.length).toBe(1);
  });

  it('revalidates a stale entry with its ETag and prints the stored body after the 304', async () => {
    const o = await origin();
    const dir = await tempDir();
    expect((await runCli(['get', `${o.base}/stale`, '--cache', dir])).out).toBe('stale 1\n');
    const again = await runCli(['get', '-v', `${o.base}/stale`, '--cache', dir]);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/^switchyard ~ cache miss \(stale\) /m);
    expect(again.stderr).toMatch(/^switchyard ~ cache revalidated \(304\) /m);
    expect(again.out.endsWith('\nstale 1\n')).toBe(true);
    expect(o.seen.length).toBe(2);
    expect(o.seen[1]!.headers.get('If-None-Match')).toBe('"v1"');
  });

  it('fetches a no-store response every time, and stores nothing without --cache', async () => {
    const o = await origin();
    const dir = await tempDir();
    expect((await runCli(['get', `${o.base}/other`, '--cache', dir])).out).toBe('no-store 1\n');
    expect((await runCli(['get', `${o.base}/other`, '--cache', dir])).out).toBe('no-store 2\n');
    expect((await runCli(['get', `${o.base}/fresh`])).out).toBe('fresh 3\n');
    expect((await runCli(['get', `${o.base}/fresh`])).out).toBe('fresh 4\n');
  });

  it('--cache without a directory is a usage error', async () => {
    const r = await runCli(['get', 'http://127.0.0.1:9/', '--cache', '']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--cache needs a directory/);
  });
});
