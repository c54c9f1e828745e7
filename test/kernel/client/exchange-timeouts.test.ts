/**
 * The timeouts of one exchange are one declaration: a call, the client's upgrade handshake
 * (`upgradeRequest`) and `WebSockets.open` take the same names and refuse a bad value with the
 * same sentence, before anything is connected.
 */
import { describe, expect, it } from 'vitest';
import * as HTTP from '../../../index.js';
import { EXCHANGE_TIMEOUT_OPTIONS, Request, upgradeRequest } from '../../../kernel/index.js';
import { closeAfter } from '../../helpers/cleanup.js';

/** The message `p` rejects with (fails the test when it resolves). */
async function rejected(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(HTTP.ArgumentError);
    return (err as Error).message;
  }
  throw new Error('expected a rejection');
}

function upgrade(): Request {
  const req = new Request('GET', '/', { headers: { Upgrade: 'x', Connection: 'Upgrade' }, host: '127.0.0.1:9' });
  req.url = 'http://127.0.0.1:9/';
  return req;
}

describe('exchange timeouts', () => {
  it('are the same five names for a call, upgradeRequest and WebSockets.open', () => {
    expect([...EXCHANGE_TIMEOUT_OPTIONS]).toEqual(['connectTimeout', 'requestTimeout', 'responseHeaderTimeout', 'readIdleTimeout', 'writeIdleTimeout']);
  });

  for (const key of EXCHANGE_TIMEOUT_OPTIONS) {
    it(`${key}: a negative value is refused alike by all three`, async () => {
      const sentence = `${key} must be a number of milliseconds >= 0, got -1`;
      const client = closeAfter(new HTTP.Client());
      expect(await rejected(client.get('http://127.0.0.1:9/', { [key]: -1 }))).toBe(`request("GET", …): ${sentence}`);
      expect(await rejected(upgradeRequest(upgrade(), { [key]: -1 }))).toBe(sentence);
      expect(await rejected(HTTP.WebSockets.open('ws://127.0.0.1:9/', () => undefined, { [key]: -1 }))).toBe(sentence);
    });
  }
});
