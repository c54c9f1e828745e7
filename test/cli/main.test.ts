/**
 * The command line's parts in-process (fast): the usage-error table through `main()` with
 * captured streams, the argument parser, and the progress line. The real binary is run by the
 * other files of this folder.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseArgs, type OptionSpec } from '../../cli/args.js';
import type { Io } from '../../cli/io.js';
import { main } from '../../cli/main.js';
import { formatCookieFile, parseCookieFile } from '../../cli/cookie-file.js';
import { formatBytes, formatDuration, renderProgress } from '../../cli/progress.js';
import { Cookies } from '../../plugins/cookies/index.js';

function capture(): { io: Io; out: () => string; err: () => string } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => (out += c.toString()));
  stderr.on('data', (c: Buffer) => (err += c.toString()));
  const stdin = new PassThrough();
  stdin.end();
  const io: Io = { stdin, stdout, stderr, env: {}, waitForInterrupt: () => new Promise(() => undefined) };
  return { io, out: () => out, err: () => err };
}

describe('usage errors: exit 2 and a message that says what was wrong', () => {
  const cases: [string, string[], RegExp][] = [
    ['an unknown long option', ['get', 'http://x/', '--frobnicate'], /^switchyard get: unknown option --frobnicate\nRun 'switchyard get --help' for its options\.\n$/],
    ['a near miss', ['get', 'http://x/', '--timout', '5'], /unknown option --timout \(did you mean --timeout\?\)/],
    ['a near miss of --max-time', ['get', 'http://x/', '--max-tme', '5'], /unknown option --max-tme \(did you mean --max-time\?\)/],
    ['a prefix of one option', ['get', 'http://x/', '--verb'], /unknown option --verb \(did you mean --verbose\?\)/],
    ['a long option with one dash', ['get', 'http://x/', '-timeout', '5'], /unknown option -t \(in "-timeout"\) \(did you mean --timeout\?\)/],
    ['a near miss on serve', ['serve', '--prot', '1'], /unknown option --prot \(did you mean --port\?\)/],
    ['a near miss on ws', ['ws', 'ws://x/', '--subprotcol', 'a'], /unknown option --subprotcol \(did you mean --subprotocol\?\)/],
    ['an unknown short option', ['get', 'http://x/', '-Z'], /unknown option -Z\n/],
    ['an unknown short option in a group', ['get', 'http://x/', '-vZ'], /unknown option -Z \(in "-vZ"\)/],
    ['a missing value', ['get', 'http://x/', '-H'], /option -H needs a value \('Name: value'\)/],
    ['no URL', ['get'], /no URL given/],
    ['two URLs', ['get', 'http://a/', 'http://b/'], /one URL expected, got 2: "http:\/\/a\/" "http:\/\/b\/"/],
    ['a bad header', ['get', 'http://x/', '-H', 'NoColon'], /-H "NoColon": expected 'Name: value'/],
    ['a header with a space in its name', ['get', 'http://x/', '-H', 'Bad Name: v'], /expected 'Name: value'/],
    ['a bad timeout', ['get', 'http://x/', '--timeout', 'soon'], /option --timeout needs a whole number, got "soon"/],
    ['a method that is not a token', ['get', 'http://x/', '-X', 'BAD METHOD'], /-X "BAD METHOD": a method is a token/],
    ['-I with data', ['get', 'http://x/', '-I', '-d', 'a=1'], /-I sends HEAD, which carries no -d or -F body/],
    ['-O without a file name in the URL', ['get', 'http://x/dir/', '-O'], /-O: http:\/\/x\/dir\/ has no file name at the end of its path; name the file with -o FILE/],
    ['-O with -o', ['get', 'http://x/f', '-O', '-o', 'g'], /-o and -O cannot be combined/],
    ['a bad --max-time', ['get', 'http://x/', '--max-time', 'soon'], /option --max-time needs a number of seconds \(such as 2 or 0\.5\), got "soon"/],
    ['a negative --max-time', ['get', 'http://x/', '--max-time=-1'], /option --max-time needs a number of seconds/],
    ['--max-time with --timeout', ['get', 'http://x/', '--max-time', '1', '--timeout', '1000'], /--max-time and --timeout cannot be combined/],
    ['a retry count out of range', ['get', 'http://x/', '--retry', '1000'], /option --retry must be from 0 to 100, got 1000/],
    ['both versions', ['get', 'http://x/', '--http1', '--http2'], /--http1 and --http2 cannot be combined/],
    ['-L with --no-follow', ['get', 'http://x/', '-L', '--no-follow'], /-L and --no-follow cannot be combined/],
    ['-d with -F', ['post', 'http://x/', '-d', 'a', '-F', 'b=c'], /-d and -F cannot be combined/],
    ['--json with -F', ['post', 'http://x/', '--json', '-F', 'b=c'], /--json and -F cannot be combined/],
    ['invalid JSON with --json', ['post', 'http://x/', '--json', '-d', '{nope'], /--json: the data is not valid JSON/],
    ['a -F without =', ['post', 'http://x/', '-F', 'novalue'], /-F "novalue": expected name=value or name=@file/],
    ['a -F with an unknown parameter', ['post', 'http://x/', '-F', 'f=@/etc/hostname;charset=x'], /unknown parameter "charset=x"/],
    ['a missing -F file', ['post', 'http://x/', '-F', 'f=@/nonexistent/file'], /-F f=@\/nonexistent\/file: cannot read the file \(ENOENT\)/],
    ['a missing -d file', ['post', 'http://x/', '-d', '@/nonexistent/file'], /-d @\/nonexistent\/file: cannot read the file \(ENOENT\)/],
    ['-u without a colon', ['get', 'http://x/', '-u', 'ann'], /-u needs USER:PASSWORD/],
    ['an invalid URL', ['get', 'http://[::1/'], /invalid URL "http:\/\/\[::1\/"/],
    ['a ws:// URL', ['get', 'ws://x/'], /unsupported URL scheme ws: .*switchyard ws/],
    ['an ftp:// URL', ['get', 'ftp://x/'], /unsupported URL scheme ftp: in "ftp:\/\/x\/": http and https only\n/],
    ['an unknown command', ['fetch', 'http://x/'], /^switchyard: unknown command "fetch": expected get, head, post, put, patch, delete, query, options, serve, ws\n/],
    [
      'a URL where the command goes',
      ['https://example.com/x', '-i'],
      /^switchyard: "https:\/\/example\.com\/x" is a URL, not a command: put the method first \(switchyard get https:\/\/example\.com\/x …\)\n/,
    ],
    ['a ws URL where the command goes', ['ws://example.com/'], /put the method first \(switchyard ws ws:\/\/example\.com\/ …\)/],
    ['an option before the command', ['-v', 'get', 'http://x/'], /^switchyard: -v before a command/],
    ['a value for a switch', ['get', 'http://x/', '--json=yes'], /option --json takes no value \(got "yes"\)/],
    ['a serve option on get', ['get', 'http://x/', '--port', '1'], /unknown option --port/],
    ['a bad port for serve', ['serve', '--port', '70000'], /option --port must be from 0 to 65535, got 70000/],
    ['a serve directory that does not exist', ['serve', '/nonexistent-dir'], /serve: \/nonexistent-dir is not a directory/],
    ['two directories for serve', ['serve', 'a', 'b'], /one directory expected, got 2/],
    ['ws without a URL', ['ws'], /no URL given/],
    ['two URLs for ws, each named', ['ws', 'ws://a/', 'ws://b/'], /ws: one URL expected, got 2: "ws:\/\/a\/" "ws:\/\/b\/"/],
    ['two directories for serve, each named', ['serve', 'a', 'b'], /serve: one directory expected, got 2: "a" "b"/],
    ['a bad --linger', ['ws', 'ws://x/', '--linger', '1s'], /option --linger needs a whole number, got "1s"/],
    ['ws with an http URL', ['ws', 'http://x/'], /ws needs a ws:\/\/ or wss:\/\/ URL/],
  ];
  for (const [what, args, re] of cases) {
    it(what, async () => {
      const c = capture();
      const code = await main(args, c.io);
      expect(c.err()).toMatch(re);
      expect(code).toBe(2);
      expect(c.out()).toBe('');
    });
  }
});

describe('parseArgs', () => {
  const specs: OptionSpec[] = [
    { name: 'header', short: 'H', kind: 'list', help: '' },
    { name: 'output', short: 'o', kind: 'value', help: '' },
    { name: 'verbose', short: 'v', kind: 'count', help: '' },
    { name: 'location', short: 'L', kind: 'flag', help: '' },
  ];

  it('reads long, short, attached, grouped, counted and repeated options, and -- ends them', () => {
    const p = parseArgs(['-vvL', 'url', '-Ha: 1', '--header', 'b: 2', '--output=f', '-o', 'g', '-v', '--', '--not-an-option', '-'], specs, 't');
    expect(p.options).toEqual({ verbose: 3, location: true, header: ['a: 1', 'b: 2'], output: 'g' });
    expect(p.positionals).toEqual(['url', '--not-an-option', '-']);
  });

  it('a lone - is a positional; a value may start with a dash', () => {
    const p = parseArgs(['-', '-o', '-'], specs, 't');
    expect(p.positionals).toEqual(['-']);
    expect(p.options.output).toBe('-');
  });
});

describe('progress line', () => {
  it('known size: bar, percentage, bytes, rate and ETA; done: elapsed', () => {
    const mid = renderProgress({ received: 5 * 1024 * 1024, total: 20 * 1024 * 1024, elapsedMs: 1000, columns: 100 });
    expect(mid).toBe(`[${'#'.repeat(10)}${'-'.repeat(30)}]  25%     5.0 MiB /   20.0 MiB     5.0 MiB/s  ETA 3s    `);
    const done = renderProgress({ received: 20 * 1024 * 1024, total: 20 * 1024 * 1024, elapsedMs: 4000, columns: 100 });
    expect(done).toMatch(/^\[#{40}\] 100% {4}20\.0 MiB \/ {3}20\.0 MiB {5}5\.0 MiB\/s {2}in 4s {5}$/);
  });

  it('keeps one width from frame to frame (the bar does not jump), known size or not', () => {
    for (const columns of [60, 80, 100, 200]) {
      for (const total of [1000, 5 * 1024 * 1024 * 1024, -1]) {
        const widths = new Set<number>();
        for (const [received, elapsedMs] of [
          [0, 0],
          [1, 3],
          [999, 10],
          [1000, 9999],
          [1023.9 * 1024, 1],
          [600 * 1024 * 1024, 50_000],
          [5 * 1024 * 1024 * 1024, 7_200_000],
        ] as const) {
          if (total >= 0 && received > total) continue;
          widths.add(renderProgress({ received, total, elapsedMs, columns }).length);
        }
        expect([columns, total, [...widths]]).toEqual([columns, total, [widths.values().next().value]]);
      }
    }
  });

  it('unknown size: bytes and rate; a narrow terminal drops the bar', () => {
    expect(renderProgress({ received: 1536, total: -1, elapsedMs: 1000, columns: 80 })).toBe('   1.5 KiB     1.5 KiB/s');
    const narrow = renderProgress({ received: 512, total: 1024, elapsedMs: 1000, columns: 40 });
    expect(narrow).toMatch(/^ 50% /);
    expect(narrow.length).toBeLessThan(40);
  });

  it('formats bytes and durations', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024 ** 3 * 1.5)).toBe('1.5 GiB');
    expect(formatDuration(59.4)).toBe('59s');
    expect(formatDuration(125)).toBe('2m05s');
    expect(formatDuration(3725)).toBe('1h02m');
    expect(formatDuration(99 * 3600 + 3599)).toBe('99h59m');
    expect(formatDuration(100 * 3600)).toBe('>99h');
  });
});

describe('help and version', () => {
  it('each command has --help with options and examples; --version prints the package version', async () => {
    for (const [cmd, flags] of [
      ['serve', ['--port', '--host', '--tls-self-signed', '--spa', '--cors', '--cert-out', '--no-list']],
      ['ws', ['--header', '--subprotocol', '--no-compress', '--cacert', '--linger ms']],
      [
        'get',
        [
          '--header',
          '--output',
          '--http2',
          '--proxy',
          '--cookies',
          '-X, --request METHOD',
          '-i, --include',
          '-I, --head',
          '-f, --fail',
          '-s, --silent',
          '-S, --show-error',
          '-A, --user-agent UA',
          '-O, --remote-name',
          '-m, --max-time SECONDS',
          '--timeout ms',
          '--compressed',
        ],
      ],
    ] as const) {
      const c = capture();
      expect(await main([cmd, '--help'], c.io)).toBe(0);
      expect(c.out()).toMatch(new RegExp(`^Usage: switchyard ${cmd} `));
      expect(c.out()).toMatch(/\nExamples:\n {2}# /);
      for (const f of flags) expect(c.out()).toContain(f);
    }
    const top = capture();
    expect(await main(['--help'], top.io)).toBe(0);
    for (const f of ['-X METHOD', '-m/--max-time SECONDS', '--compressed', 'directory listings', '130 stopped by Ctrl-C']) expect(top.out()).toContain(f);
    const v = capture();
    expect(await main(['--version'], v.io)).toBe(0);
    expect(v.out()).toMatch(/^switchyard \d+\.\d+\.\d+\n$/);
  });
});

describe('cookies.txt', () => {
  const now = Date.UTC(2030, 0, 1);

  it("reads curl's format: host-only and domain cookies, HttpOnly, secure, session and expiring cookies; skips expired and malformed lines", () => {
    const text = [
      '# Netscape HTTP Cookie File',
      '# https://curl.se/docs/http-cookies.html',
      '',
      'example.com\tFALSE\t/\tFALSE\t0\tsession\tone',
      '.example.com\tTRUE\t/app\tTRUE\t1999999999\tdomain\ttwo',
      '#HttpOnly_api.example.com\tFALSE\t/\tFALSE\t0\thidden\tthree',
      'example.com\tFALSE\t/\tFALSE\t1000\texpired\tx',
      'not a cookie line',
    ].join('\n');
    const jar = parseCookieFile(text, now);
    const names = (host: string, path: string, scheme = 'https'): string[] => Cookies.getCookies(jar, scheme, host, path, now).map((c) => `${c.name}=${c.value}`);
    expect(names('example.com', '/')).toEqual(['session=one']);
    expect(names('www.example.com', '/app/x')).toEqual(['domain=two']);
    expect(names('www.example.com', '/app/x', 'http')).toEqual([]); // secure
    expect(names('api.example.com', '/')).toEqual(['hidden=three']);
    const hidden = Cookies.getCookies(jar, 'https', 'api.example.com', '/', now)[0]!;
    expect(hidden.httpOnly).toBe(true);
  });

  it('skips a line whose cookie could not be sent back (a backslash, a bad name) and keeps the rest, quoted values included', () => {
    const text = ['example.com\tFALSE\t/\tFALSE\t0\tb\tx\\y', 'example.com\tFALSE\t/\tFALSE\t0\ta;b\tv', 'example.com\tFALSE\t/\tFALSE\t0\tq\t"quoted"', 'example.com\tFALSE\t/\tFALSE\t0\tok\t1'].join(
      '\n',
    );
    const jar = parseCookieFile(text, now);
    expect(Cookies.getCookies(jar, 'https', 'example.com', '/', now).map((c) => `${c.name}=${c.value}`)).toEqual(['q="quoted"', 'ok=1']);
  });

  it('writes what it reads (round trip), leaving expired cookies out', () => {
    const jar = parseCookieFile('', now);
    Cookies.setCookies(
      jar,
      'https',
      'shop.example.com',
      '/cart',
      [
        ['Set-Cookie', 'cart=42; Path=/; Domain=example.com; Secure; Max-Age=3600'],
        ['Set-Cookie', 'tmp=1; HttpOnly'],
        ['Set-Cookie', 'gone=1; Max-Age=0'],
      ],
      now,
    );
    const text = formatCookieFile(jar, now);
    expect(text.split('\n').filter((l) => l !== '' && !l.startsWith('# '))).toEqual([
      `.example.com\tTRUE\t/\tTRUE\t${now / 1000 + 3600}\tcart\t42`,
      '#HttpOnly_shop.example.com\tFALSE\t/\tFALSE\t0\ttmp\t1',
    ]);
    expect(formatCookieFile(parseCookieFile(text, now), now)).toBe(text);
  });
});
