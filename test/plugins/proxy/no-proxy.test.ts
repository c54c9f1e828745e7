/**
 * NoProxy: the NO_PROXY table (names, suffixes, ports, CIDR v4 and v6, `*`, case, trailing
 * dots, the always-direct localhost and loopback rule) and the entries it refuses.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/index.js';
import { NoProxy } from '../../../plugins/proxy/index.js';

// [spec, host, port, expected]
const TABLE: [string, string, number, boolean][] = [
  // names and domain suffixes (curl: with or without the leading dot, the bare name too)
  ['example.com', 'example.com', 80, true],
  ['example.com', 'www.example.com', 80, true],
  ['example.com', 'a.b.example.com', 443, true],
  ['example.com', 'notexample.com', 80, false],
  ['example.com', 'example.com.evil.net', 80, false],
  ['.example.com', 'www.example.com', 80, true],
  ['.example.com', 'example.com', 80, true],
  ['*.example.com', 'www.example.com', 80, true],
  ['*.example.com', 'example.com', 80, true],
  ['example.com', 'example.org', 80, false],
  // case and trailing dots, on either side
  ['Example.COM', 'www.example.com', 80, true],
  ['example.com', 'WWW.EXAMPLE.COM', 80, true],
  ['example.com.', 'www.example.com', 80, true],
  ['example.com', 'www.example.com.', 80, true],
  // ports
  ['example.com:8080', 'example.com', 8080, true],
  ['example.com:8080', 'example.com', 80, false],
  ['example.com:443', 'sub.example.com', 443, true],
  ['10.1.2.3:8443', '10.1.2.3', 8443, true],
  ['10.1.2.3:8443', '10.1.2.3', 443, false],
  ['[2001:db8::1]:8080', '2001:db8::1', 8080, true],
  ['[2001:db8::1]:8080', '2001:db8::1', 80, false],
  // IP addresses: exact, never by resolving a name
  ['10.1.2.3', '10.1.2.3', 80, true],
  ['10.1.2.3', '10.1.2.4', 80, false],
  ['2001:db8::1', '[2001:db8::1]', 80, true],
  ['2001:db8::1', '2001:db8:0:0:0:0:0:1', 80, true],
  ['2001:db8::1', '2001:db8::2', 80, false],
  ['[2001:db8::1]', '2001:db8::1', 80, true],
  ['10.1.2.3', 'host-10-1-2-3.example', 80, false],
  // CIDR v4
  ['10.0.0.0/8', '10.200.3.4', 80, true],
  ['10.0.0.0/8', '11.0.0.1', 80, false],
  ['192.168.1.0/24', '192.168.1.255', 80, true],
  ['192.168.1.0/24', '192.168.2.1', 80, false],
  ['172.16.0.0/12', '172.31.255.1', 80, true],
  ['172.16.0.0/12', '172.32.0.1', 80, false],
  ['10.1.2.3/32', '10.1.2.3', 80, true],
  ['0.0.0.0/0', '203.0.113.9', 80, true],
  ['10.0.0.0/8', '::ffff:10.9.9.9', 80, true],
  ['10.1.2.99/24', '10.1.2.7', 80, true],
  // CIDR v6
  ['2001:db8::/32', '2001:db8:ffff::1', 80, true],
  ['2001:db8::/32', '2001:db9::1', 80, false],
  ['fd00::/8', 'fdab:cdef::1', 443, true],
  ['fd00::/8', 'fe80::1', 443, false],
  ['[fd00::]/8:443', 'fd12::1', 443, true],
  ['[fd00::]/8:443', 'fd12::1', 80, false],
  ['fe80::/10', 'febf::1', 80, true],
  ['fe80::/10', 'fec0::1', 80, false],
  // `*`, lists, spaces
  ['*', 'anything.example', 80, true],
  ['*', '203.0.113.9', 443, true],
  ['a.test, b.test ,c.test', 'x.b.test', 80, true],
  ['a.test,,c.test', 'b.test', 80, false],
  ['', 'example.com', 80, false],
  // a name entry does not match IP hosts, nor an IP entry names
  ['example.com', '93.184.216.34', 80, false],
  // localhost and loopback: always direct
  ['', 'localhost', 80, true],
  ['', 'LOCALHOST.', 80, true],
  ['', 'app.localhost', 80, true],
  ['', '127.0.0.1', 80, true],
  ['', '127.8.9.10', 8080, true],
  ['', '::1', 80, true],
  ['', '[::1]', 80, true],
  ['', '::ffff:127.0.0.1', 80, true],
  ['', 'localhost.example.com', 80, false],
  ['', '0.0.0.0', 80, false],
];

describe('NoProxy table', () => {
  it.each(TABLE)('NoProxy(%j) matches %s:%i → %s', (spec, host, port, expected) => {
    expect(new NoProxy(spec).matches(host, port)).toBe(expected);
  });

  it('has the cases of the NO_PROXY grammar (at least 25)', () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(25);
  });

  it('takes an array of entries, each possibly comma-separated', () => {
    const np = new NoProxy(['a.test', 'b.test,10.0.0.0/8']);
    expect(np.entries).toEqual(['a.test', 'b.test', '10.0.0.0/8']);
    expect(np.matches('x.a.test', 80)).toBe(true);
    expect(np.matches('10.2.3.4', 80)).toBe(true);
    expect(np.matches('c.test', 80)).toBe(false);
    expect(np.toString()).toBe('a.test,b.test,10.0.0.0/8');
  });

  it('NoProxy() holds only the localhost and loopback rule', () => {
    const np = new NoProxy();
    expect(np.entries).toEqual([]);
    expect(np.matches('localhost')).toBe(true);
    expect(np.matches('example.com')).toBe(false);
  });

  it('port 0 (unknown) matches entries with any port', () => {
    expect(new NoProxy('example.com:8080').matches('example.com')).toBe(true);
  });
});

describe('NoProxy refuses entries it cannot read', () => {
  it.each([
    ['example.com:0', /port "0"/],
    ['example.com:http', /port "http"/],
    ['example.com:70000', /port "70000"/],
    ['10.0.0.0/33', /prefix length 33 is larger than 32/],
    ['fd00::/129', /prefix length 129 is larger than 128/],
    ['10.0.0.0/x', /prefix length "x"/],
    ['example.com/8', /not an IP address/],
    ['[::1', /missing "]"/],
    ['[example.com]', /not an IPv6 address/],
    ['a b', /not a host name/],
  ])('%j', (entry, message) => {
    let err: unknown;
    try {
      new NoProxy(entry);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ArgumentError);
    expect((err as Error).message).toContain(JSON.stringify(entry));
    expect((err as Error).message).toMatch(message);
  });

  it('lenient (environment) mode skips them and keeps the rest', () => {
    const np = new NoProxy('10.0.0.0/33, good.test, bad:port', { lenient: true });
    expect(np.entries).toEqual(['good.test']);
    expect(np.matches('good.test', 80)).toBe(true);
  });

  it('rejects values that are not strings', () => {
    expect(() => new NoProxy(42 as unknown as string)).toThrow(ArgumentError);
    expect(() => new NoProxy([1] as unknown as string[])).toThrow(ArgumentError);
  });
});
