/**
 * The SOCKS5 client handshake (RFC 1928) with username/password authentication (RFC 1929).
 *
 * `socks5://` and `socks5h://` behave the same, as the reference says: a host name is sent
 * to the proxy as a name (address type 3) and the proxy resolves it; only IP literals go as
 * addresses. This differs from curl, whose `socks5://` resolves names locally and sends the
 * address (curl's `socks5h://` is what both schemes do here). Names never leak to the local
 * resolver, and a name only the proxy can resolve works with either scheme.
 */
import { Buffer } from 'node:buffer';
import { isIPv4, isIPv6 } from 'node:net';
import type net from 'node:net';
import { ParseError, hostPort } from '../../kernel/index.js';
import type { ProxyEndpoint } from './endpoint.js';
import { ProxyError, Socks5Error, socks5ReplyText } from './errors.js';
import { parseIP } from './ip.js';
import { SocketReader } from './handshake.js';

const VERSION = 0x05;
const NO_AUTH = 0x00;
const USER_PASS = 0x02;
const NO_ACCEPTABLE = 0xff;
const CMD_CONNECT = 0x01;
const ATYP_IPV4 = 0x01;
const ATYP_NAME = 0x03;
const ATYP_IPV6 = 0x04;

/** Runs the SOCKS5 handshake on `socket` (connected to `proxy`) for a tunnel to `host:port`; resolves once it is open. */
export async function socks5Connect(socket: net.Socket, proxy: ProxyEndpoint, host: string, port: number): Promise<void> {
  const target = hostPort(host, port);
  const request = connectRequest(proxy, host, port);
  const reader = new SocketReader(socket, proxy, 'the SOCKS5 greeting');
  const auth = proxy.username !== '';
  socket.write(Buffer.from(auth ? [VERSION, 2, NO_AUTH, USER_PASS] : [VERSION, 1, NO_AUTH]));

  const choice = await reader.read(2);
  if (choice[0] !== VERSION) throw garbage(proxy, 'greeting', choice[0]!, VERSION);
  const method = choice[1]!;
  if (method === USER_PASS && auth) {
    reader.step = 'SOCKS5 authentication';
    const user = Buffer.from(proxy.username, 'utf8');
    const pass = Buffer.from(proxy.password, 'utf8');
    socket.write(Buffer.concat([Buffer.from([0x01, user.length]), user, Buffer.from([pass.length]), pass]));
    const status = await reader.read(2);
    // RFC 1929 says version 1; some servers answer with 5. Anything else is not SOCKS.
    if (status[0] !== 0x01 && status[0] !== VERSION) throw garbage(proxy, 'authentication answer', status[0]!, 0x01);
    if (status[1] !== 0x00) {
      throw new Socks5Error(proxy.href, 'authentication', -1, `SOCKS5 proxy ${proxy.href} rejected the user name and password (status 0x${status[1]!.toString(16).padStart(2, '0')})`);
    }
  } else if (method !== NO_AUTH) {
    const offered = auth ? 'no authentication or user name/password' : 'no authentication (give user:password in the proxy URL if it needs them)';
    const why = method === NO_ACCEPTABLE ? 'accepts none of the offered authentication methods' : `chose authentication method 0x${method.toString(16).padStart(2, '0')}, which was not offered`;
    throw new Socks5Error(proxy.href, 'greeting', -1, `SOCKS5 proxy ${proxy.href} ${why} (offered: ${offered})`);
  }

  reader.step = `the SOCKS5 CONNECT to ${target}`;
  socket.write(request);
  const head = await reader.read(5);
  if (head[0] !== VERSION) throw garbage(proxy, 'CONNECT reply', head[0]!, VERSION);
  const rep = head[1]!;
  if (rep !== 0x00)
    throw new Socks5Error(proxy.href, 'connect', rep, `SOCKS5 proxy ${proxy.href} could not connect to ${target}: ${socks5ReplyText(rep)} (reply 0x${rep.toString(16).padStart(2, '0')})`);
  // The bound address: skip it. Its length depends on its type; 4 of its bytes are already read.
  const atyp = head[3]!;
  const rest = atyp === ATYP_IPV4 ? 4 - 1 + 2 : atyp === ATYP_IPV6 ? 16 - 1 + 2 : atyp === ATYP_NAME ? head[4]! + 2 : -1;
  if (rest < 0) throw new ParseError(`SOCKS5 proxy ${proxy.href} sent a CONNECT reply with unknown address type 0x${atyp.toString(16).padStart(2, '0')}`);
  await reader.read(rest);
  reader.release();
}

/** The CONNECT request: names as names (type 3), IP literals as addresses. */
function connectRequest(proxy: ProxyEndpoint, host: string, port: number): Buffer {
  let addr: Buffer;
  if (isIPv4(host)) addr = Buffer.from([ATYP_IPV4, ...parseIP(host)!.subarray(12)]);
  else if (isIPv6(host)) addr = Buffer.from([ATYP_IPV6, ...parseIP(host)!]);
  else {
    const name = Buffer.from(host, 'utf8');
    if (name.length > 255) throw new ProxyError(proxy.href, `host name ${host.slice(0, 40)}… is longer than the 255 bytes SOCKS5 can carry`);
    addr = Buffer.concat([Buffer.from([ATYP_NAME, name.length]), name]);
  }
  return Buffer.concat([Buffer.from([VERSION, CMD_CONNECT, 0x00]), addr, Buffer.from([port >> 8, port & 0xff])]);
}

/** A reply that is not SOCKS5 at all; an HTTP answer ('H') gets a hint. */
function garbage(proxy: ProxyEndpoint, what: string, got: number, expected: number): ParseError {
  const hint = got === 0x48 ? ' (it looks like an HTTP answer: is this an HTTP proxy? use http://)' : '';
  return new ParseError(`SOCKS5 proxy ${proxy.href} sent an invalid ${what}: version byte 0x${got.toString(16).padStart(2, '0')}, expected 0x${expected.toString(16).padStart(2, '0')}${hint}`);
}
