import { describe, expect, it } from 'vitest';
// Every error a user meets, kernel and plugins alike, by name at the top level.
import * as errors from '../../../index.js';
import {
  AddressInUseError,
  ArgumentError,
  CanceledError,
  ConnectError,
  DNSError,
  HTTPError,
  HTTPTimeoutError,
  ParseError,
  ProtocolError,
  TLSHandshakeError,
  TLSTransportError,
  TimeoutError,
} from '../../../kernel/errors.js';
import { StatusError } from '../../../kernel/index.js';
import { RequestRetryError, TooManyRedirectsError } from '../../../plugins/index.js';
import { Request, Response } from '../../../kernel/message/index.js';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' });
const badCert = new Error('unable to verify the first certificate');
const reset = new Error('read ECONNRESET');

function notFoundResponse(): Response {
  const req = new Request('GET', '/missing');
  const res = new Response(404, 'not here', { request: req });
  res.url = 'https://example.com/missing';
  return res;
}

type Case = {
  name: string;
  make: () => Error;
  code: string;
  /** Fields the error must carry, compared with toBe. */
  fields: Record<string, unknown>;
  /** Fragments the message must contain so a person can act on it. */
  mentions: string[];
  cause?: unknown;
};

const redirect = new Response(302, { headers: { Location: '/again' } });
const statusRes = notFoundResponse();

const cases: Case[] = [
  { name: 'ParseError', make: () => new ParseError('invalid status line "HTTP/1.1 abc"'), code: 'SWY_ERR_PARSE', fields: {}, mentions: ['invalid status line'] },
  {
    name: 'ProtocolError',
    make: () => new ProtocolError('conflicting Content-Length values 5 and 6'),
    code: 'SWY_ERR_PROTOCOL',
    fields: {},
    mentions: ['Content-Length', '5', '6'],
  },
  { name: 'CanceledError', make: () => new CanceledError('user navigated away'), code: 'SWY_ERR_CANCELED', fields: { message: 'user navigated away' }, mentions: ['user navigated away'] },
  {
    name: 'TimeoutError',
    make: () => new TimeoutError('connect', 30_000, 30_004),
    code: 'SWY_ERR_TIMEOUT',
    fields: { operation: 'connect', timeoutMs: 30_000, elapsedMs: 30_004 },
    mentions: ['connect', 'timed out', '30000 ms'],
  },
  {
    name: 'StatusError',
    make: () => new StatusError(404, statusRes),
    code: 'SWY_ERR_STATUS',
    fields: { status: 404, response: statusRes },
    mentions: ['404', 'GET', 'https://example.com/missing'],
  },
  {
    name: 'TooManyRedirectsError',
    make: () => new TooManyRedirectsError(3, redirect),
    code: 'SWY_ERR_TOO_MANY_REDIRECTS',
    fields: { limit: 3, response: redirect },
    mentions: ['redirect', '3'],
  },
  {
    name: 'ConnectError',
    make: () => new ConnectError('127.0.0.1:9', refused),
    code: 'SWY_ERR_CONNECT',
    fields: { address: '127.0.0.1:9' },
    mentions: ['127.0.0.1:9', 'ECONNREFUSED'],
    cause: refused,
  },
  {
    name: 'DNSError',
    make: () => new DNSError('nowhere.invalid', notFound),
    code: 'SWY_ERR_DNS',
    fields: { hostname: 'nowhere.invalid' },
    mentions: ['nowhere.invalid', 'ENOTFOUND', 'resolve'],
    cause: notFound,
  },
  {
    name: 'TLSHandshakeError',
    make: () => new TLSHandshakeError(badCert),
    code: 'SWY_ERR_TLS_HANDSHAKE',
    fields: {},
    mentions: ['TLS handshake', 'unable to verify the first certificate'],
    cause: badCert,
  },
  {
    name: 'TLSTransportError',
    make: () => new TLSTransportError(reset),
    code: 'SWY_ERR_TLS_TRANSPORT',
    fields: {},
    mentions: ['TLS', 'ECONNRESET'],
    cause: reset,
  },
  {
    name: 'AddressInUseError',
    make: () => new AddressInUseError('0.0.0.0:8080'),
    code: 'SWY_ERR_ADDRESS_IN_USE',
    fields: { address: '0.0.0.0:8080' },
    mentions: ['0.0.0.0:8080', 'in use'],
  },
  {
    name: 'RequestRetryError',
    make: () => new RequestRetryError(reset),
    code: 'SWY_ERR_REQUEST_RETRY',
    fields: { err: reset },
    mentions: ['ECONNRESET'],
    cause: reset,
  },
  {
    name: 'ArgumentError',
    make: () => new ArgumentError('client is closed; create a new Client'),
    code: 'SWY_ERR_ARGUMENT',
    fields: {},
    mentions: ['client is closed'],
  },
];

describe('error classes', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s is exported by name', (name) => {
    expect(typeof (errors as Record<string, unknown>)[name]).toBe('function');
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s: name, code, fields, cause, message', (name, c) => {
    const err = c.make();
    expect(err).toBeInstanceOf(Error);
    expect(err).toBeInstanceOf((errors as Record<string, unknown>)[name] as new () => Error);
    expect(err.name).toBe(name);
    expect((err as Error & { code: string }).code).toBe(c.code);
    for (const [k, v] of Object.entries(c.fields)) expect((err as unknown as Record<string, unknown>)[k]).toBe(v);
    for (const m of c.mentions) expect(err.message).toContain(m);
    if (c.cause !== undefined) expect(err.cause).toBe(c.cause);
    expect(typeof err.stack).toBe('string');
    expect(String(err)).toContain(name);
  });

  it('codes are distinct', () => {
    const codes = cases.map((c) => c.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('every HTTP error is an HTTPError; ArgumentError is not', () => {
    for (const c of cases) {
      const err = c.make();
      expect(err instanceof HTTPError).toBe(c.name !== 'ArgumentError');
    }
  });

  it('catching HTTPError catches a subclass', () => {
    const run = () => {
      throw new DNSError('x.invalid', notFound);
    };
    let caught: unknown;
    try {
      run();
    } catch (e) {
      if (e instanceof HTTPError) caught = e;
    }
    expect(caught).toBeInstanceOf(DNSError);
  });
});

describe('CanceledError', () => {
  it('defaults its message to "request canceled"', () => {
    expect(new CanceledError().message).toBe('request canceled');
  });
});

describe('TimeoutError', () => {
  it('HTTPTimeoutError is the same class', () => {
    expect(HTTPTimeoutError).toBe(TimeoutError);
    const e = new HTTPTimeoutError('request', 5, 6);
    expect(e).toBeInstanceOf(TimeoutError);
    expect(e.operation).toBe('request');
  });

  it.each(['connect', 'tls_handshake', 'websocket handshake', 'request'] as const)('takes the operation %j and names it in the message', (op) => {
    const e = new TimeoutError(op, 1500, 1502);
    expect(e.operation).toBe(op);
    expect(e.message).toContain(op);
    expect(e.message).toContain('1500 ms');
  });

  it('timeoutMs and elapsedMs are 0 when unknown, and the message still reads well', () => {
    const e = new TimeoutError('request');
    expect(e.timeoutMs).toBe(0);
    expect(e.elapsedMs).toBe(0);
    expect(e.message).toBe('request timed out');
  });

  it('takes a custom message', () => {
    expect(new TimeoutError('request', 0, 0, 'request deadline expired').message).toBe('request deadline expired');
  });
});

describe('StatusError', () => {
  it('carries the whole response, body included', () => {
    const res = notFoundResponse();
    const e = new StatusError(404, res);
    expect(e.response.body).toBe('not here');
    expect(e.response.request?.target).toBe('/missing');
  });

  it('names the request target when the response has no url', () => {
    const res = new Response(500, { request: new Request('POST', '/api/items') });
    const e = new StatusError(500, res);
    expect(e.message).toContain('POST');
    expect(e.message).toContain('/api/items');
    expect(e.message).toContain('500');
  });

  it('works for a response without a request', () => {
    const e = new StatusError(503, new Response(503));
    expect(e.message).toContain('503');
    expect(e.status).toBe(503);
  });
});

describe('errors with a non-Error cause', () => {
  it.each([
    ['ConnectError', () => new ConnectError('h:1', 'refused'), 'refused'],
    ['DNSError', () => new DNSError('h', 42), '42'],
    ['TLSHandshakeError', () => new TLSHandshakeError('alert 40'), 'alert 40'],
    ['RequestRetryError', () => new RequestRetryError('oops'), 'oops'],
  ] as const)('%s describes it in the message', (_name, make, fragment) => {
    expect(make().message).toContain(fragment);
  });

  it('AddressInUseError keeps an optional cause', () => {
    const cause = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    const e = new AddressInUseError('127.0.0.1:80', cause);
    expect(e.cause).toBe(cause);
    expect(new AddressInUseError('127.0.0.1:80').cause).toBeUndefined();
  });
});
