/**
 * A call's own options, on the path every such call takes: checking them makes no error text
 * unless one is wrong (the text then starts where they were given), and a client that reuses
 * the plan of its last call with options applies each call's own values all the same.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError, Response, ResponseTooLargeError } from '../../../kernel/index.js';
import { checkCallOptions } from '../../../kernel/client/options.js';
import { newClient, startServer, text } from '../../helpers/client.js';

describe('call options', () => {
  it('valid options are checked without making the error text; a wrong one is reported with it', () => {
    let made = 0;
    const where = (): string => {
      made++;
      return 'request("GET", …)';
    };
    checkCallOptions({ requestTimeout: 1000, statusException: false, maxResponseBytes: 10, verbose: 0 }, where);
    expect(made).toBe(0);
    expect(() => checkCallOptions({ requestTimeout: -1 }, where)).toThrow(new ArgumentError('request("GET", …): requestTimeout must be a number of milliseconds >= 0, got -1'));
    expect(() => checkCallOptions({ statusException: 'no' as never }, where)).toThrow(/^request\("GET", …\): statusException must be a boolean$/);
    expect(() => checkCallOptions({ requestTimout: 5 } as never, where)).toThrow(/^request\("GET", …\): unknown option "requestTimout"/);
    expect(made).toBe(3);
  });

  it('calls alternating their own options on one client each get their own bound and status rule', async () => {
    const s = await startServer((req) => new Response(req.target === '/missing' ? 404 : 200, 'x'.repeat(50)));
    const c = newClient();
    const small = { maxResponseBytes: 10 };
    const large = { maxResponseBytes: 100 };
    const lenient = { maxResponseBytes: 100, statusException: false };
    for (let i = 0; i < 3; i++) {
      await expect(c.get(`${s.origin}/`, small)).rejects.toBeInstanceOf(ResponseTooLargeError);
      expect(text(await c.get(`${s.origin}/`, large))).toBe('x'.repeat(50));
      expect((await c.get(`${s.origin}/missing`, lenient)).status).toBe(404);
    }
    // The same object changed between calls: its new value applies.
    small.maxResponseBytes = 1000;
    expect(text(await c.get(`${s.origin}/`, small))).toBe('x'.repeat(50));
  });
});
