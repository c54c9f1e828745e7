/**
 * Dotfiles and dot-directories (`.env`, `.git/config`, `sub/.htpasswd`) under each `dotfiles`
 * policy, sent as raw request lines (plain, `%2e`/`%2E`, double-encoded, absolute-form, with a
 * query or a trailing slash) and with curl `--path-as-is`: refused by default (404), 403 with
 * `'deny'`, served with `'allow'`; `.well-known/` served under every policy. Through
 * fileServer, under a prefix, through the plugin (with and without fallthrough), under a
 * stream handler and with spaFallback; and the option's validation.
 */
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgumentError, createKernel, Response, streamHandler } from '../../../kernel/index.js';
import { fileServer, fileserver, type DotfilesPolicy } from '../../../plugins/fileserver/index.js';
import { curlEnv, exchange, onCleanup, runCurl, startServer, startStreamServer, type ParsedResponse } from '../../helpers/server.js';

let root: string;
const SECRET = `SECRET-${Math.random().toString(36).slice(2)}`;
const FILES: Record<string, string> = {
  '.env': `API_KEY=${SECRET}\n`,
  '.git/config': `[remote "origin"] # ${SECRET}\n`,
  '.hidden/file.txt': `hidden ${SECRET}\n`,
  'sub/.htpasswd': `admin:${SECRET}\n`,
  '..dots': `two dots ${SECRET}\n`,
  '.well-known/.private': `inside well-known ${SECRET}\n`,
  '.well-known/security.txt': 'Contact: mailto:security@example.com\n',
  '.well-known/acme-challenge/token1': 'token1.thumbprint\n',
  'visible.txt': 'visible\n',
  'index.html': '<p>app</p>\n',
  // A file literally named `%2eenv`: what `/%252eenv` names once decoded (once).
  '%2eenv': 'literal percent name\n',
};

beforeAll(() => {
  root = fs.mkdtempSync(join(tmpdir(), 'swy-dotfiles-'));
  for (const [p, data] of Object.entries(FILES)) {
    fs.mkdirSync(join(root, p, '..'), { recursive: true });
    fs.writeFileSync(join(root, p), data);
  }
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Request targets naming a dotfile or something in a dot-directory, as written on the request line. */
const DOT_TARGETS: readonly string[] = [
  '/.env',
  '/%2eenv',
  '/%2Eenv',
  '/.env?x=1',
  '/.env/',
  '/.git/config',
  '/%2egit/config',
  '/%2Egit/config',
  '/.git',
  '/.git/',
  '/.hidden/file.txt',
  '/%2ehidden/file.txt',
  '/sub/.htpasswd',
  '/sub/%2ehtpasswd',
  '/sub/%2Ehtpasswd',
  '/..dots',
  '/%2e%2edots',
  '/.well-known/.private',
  '/.well-known/%2eprivate',
  'http://x/.env',
  'http://x/%2egit/config',
];

/** Targets that are served under every policy. */
const ALWAYS: Record<string, string> = {
  '/.well-known/security.txt': FILES['.well-known/security.txt']!,
  '/%2ewell-known/security.txt': FILES['.well-known/security.txt']!,
  '/.well-known/acme-challenge/token1': FILES['.well-known/acme-challenge/token1']!,
  '/visible.txt': FILES['visible.txt']!,
  // Decoded once: the literal name `%2eenv`, not `.env`.
  '/%252eenv': FILES['%2eenv']!,
};

async function get(port: number, target: string, method = 'GET'): Promise<ParsedResponse> {
  const { client, res } = await exchange(port, `${method} ${target} HTTP/1.1\r\nHost: x\r\n\r\n`, method);
  client.destroy();
  return res;
}

function expectRefused(res: ParsedResponse, status: number, target: string): void {
  expect(res.status, target).toBe(status);
  expect(res.text.includes(SECRET), `${target} leaked`).toBe(false);
}

describe('fileServer dotfiles', () => {
  it("refuses dotfiles and dot-directories with 404 by default ('ignore'), GET and HEAD, and serves .well-known", async () => {
    const { port } = await startServer(fileServer(root));
    for (const t of DOT_TARGETS) {
      expectRefused(await get(port, t), 404, t);
      expectRefused(await get(port, t, 'HEAD'), 404, `HEAD ${t}`);
    }
    for (const [t, body] of Object.entries(ALWAYS)) expect((await get(port, t)).text, t).toBe(body);
    // Double-encoded dot-directories name nothing: 404, never the directory.
    expectRefused(await get(port, '/%252egit/config'), 404, '/%252egit/config');
  });

  it("'deny' answers 403; 'ignore' as given is the default", async () => {
    const deny = await startServer(fileServer(root, { dotfiles: 'deny' }));
    for (const t of DOT_TARGETS) expectRefused(await get(deny.port, t), 403, t);
    for (const [t, body] of Object.entries(ALWAYS)) expect((await get(deny.port, t)).text, t).toBe(body);
    const ignore = await startServer(fileServer(root, { dotfiles: 'ignore' }));
    for (const t of DOT_TARGETS) expectRefused(await get(ignore.port, t), 404, t);
  });

  it("'allow' serves them", async () => {
    const { port } = await startServer(fileServer(root, { dotfiles: 'allow' }));
    expect((await get(port, '/.env')).text).toBe(FILES['.env']);
    expect((await get(port, '/%2Eenv')).text).toBe(FILES['.env']);
    expect((await get(port, '/%2egit/config')).text).toBe(FILES['.git/config']);
    expect((await get(port, '/sub/.htpasswd')).text).toBe(FILES['sub/.htpasswd']);
    expect((await get(port, '/.git')).status).toBe(301);
    for (const [t, body] of Object.entries(ALWAYS)) expect((await get(port, t)).text, t).toBe(body);
  });

  it('curl --path-as-is gets the same answers', async () => {
    const env = curlEnv();
    for (const [policy, status] of [
      ['ignore', 404],
      ['deny', 403],
      ['allow', 200],
    ] as [DotfilesPolicy, number][]) {
      const { port } = await startServer(fileServer(root, { dotfiles: policy }));
      for (const t of ['/.env', '/%2eenv', '/%2E%67it/config', '/sub/.htpasswd']) {
        const r = await runCurl(['-s', '--path-as-is', '-o', '/dev/null', '-w', '%{http_code}', `http://127.0.0.1:${port}${t}`], env);
        expect(Number(r.stdout.toString()), `${policy} ${t}`).toBe(status);
      }
      const wk = await runCurl(['-s', '--path-as-is', `http://127.0.0.1:${port}/.well-known/security.txt`], env);
      expect(wk.stdout.toString(), policy).toBe(FILES['.well-known/security.txt']);
    }
  });

  it('under a prefix the rule applies to the path below it', async () => {
    const { port } = await startServer(fileServer(root, { prefix: '/static' }));
    for (const t of DOT_TARGETS) if (t.startsWith('/')) expectRefused(await get(port, `/static${t}`), 404, `/static${t}`);
    expect((await get(port, '/static/.well-known/security.txt')).text).toBe(FILES['.well-known/security.txt']);
    expect((await get(port, '/static/visible.txt')).text).toBe(FILES['visible.txt']);
  });

  it('with spaFallback a dotfile is missing: the app page, never the file', async () => {
    const { port } = await startServer(fileServer(root, { spaFallback: 'index.html' }));
    for (const t of DOT_TARGETS) {
      const res = await get(port, t);
      expect(res.text.includes(SECRET), t).toBe(false);
      if (res.status === 200) expect(res.text, t).toBe(FILES['index.html']);
      else expect(res.status, t).toBe(404);
    }
  });

  it('under a stream handler', async () => {
    const { port } = await startStreamServer(streamHandler(fileServer(root)));
    for (const t of DOT_TARGETS) expectRefused(await get(port, t), 404, t);
    expect((await get(port, '/.well-known/security.txt')).text).toBe(FILES['.well-known/security.txt']);
  });

  it('the plugin: ignore falls through to the handler, deny answers 403, fallthrough: false answers 404', async () => {
    const boot = async (mount: object): Promise<number> => {
      const kernel = createKernel().register(fileserver, { root, ...mount });
      await kernel.ready();
      onCleanup(() => kernel.close());
      return (await startServer(() => new Response(200, 'handler'), { kernel })).port;
    };
    const through = await boot({});
    for (const t of DOT_TARGETS) expect((await get(through, t)).text, t).toBe('handler');
    expect((await get(through, '/.well-known/security.txt')).text).toBe(FILES['.well-known/security.txt']);
    const denied = await boot({ dotfiles: 'deny' });
    for (const t of DOT_TARGETS) expectRefused(await get(denied, t), 403, t);
    const own = await boot({ fallthrough: false });
    for (const t of DOT_TARGETS) expectRefused(await get(own, t), 404, t);
    const allowed = await boot({ mounts: [{ root, dotfiles: 'allow' }] });
    expect((await get(allowed, '/.env')).text).toBe(FILES['.env']);
  });

  it('refuses an unknown dotfiles value with ArgumentError', async () => {
    for (const v of ['hide', 'Allow', '', true, 0, null]) {
      expect(() => fileServer(root, { dotfiles: v as never }), String(v)).toThrow(ArgumentError);
    }
    expect(() => fileServer(root, { dotfiles: 'hide' as never })).toThrow(/dotfiles must be 'ignore' \(404, the default\), 'deny' \(403\) or 'allow', got "hide"/);
    const kernel = createKernel().register(fileserver, { root, dotfiles: 'nope' as never });
    onCleanup(() => kernel.close());
    // A plugin's failure at boot is a PluginError whose cause is the ArgumentError.
    const err = await kernel.ready().then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as Error).cause).toBeInstanceOf(ArgumentError);
  });
});
