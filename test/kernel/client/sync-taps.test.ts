/**
 * Per-attempt hooks (`onRequest`, `onResponseHead`, `onRetry`) whose taps are all synchronous
 * run as plain calls on the pooled path: a call whose taps have nothing to do costs what a call
 * on a bare kernel costs (counted in promises made, which does not depend on timing), and where
 * a tap does act (answers, redirects, throws, decides a retry) the call goes on in the attempt
 * loop exactly as before, each tap run once per attempt.
 */
import { describe, expect, it } from 'vitest';
import { createKernel, definePlugin, Request, Response, type RetryDecision } from '../../../kernel/index.js';
import { presets, redirects } from '../../../plugins/index.js';
import { closeKernelAfter } from '../../helpers/cleanup.js';
import { newClient, startServer, text } from '../../helpers/client.js';
import { promisesPerCall } from '../../helpers/promises.js';

describe('synchronous per-attempt taps', () => {
  it('a default-preset call whose taps have nothing to do makes no more promises than a bare kernel call', async () => {
    const s = await startServer(() => new Response(200, 'hello'));
    const bare = newClient({ kernel: closeKernelAfter(await createKernel().ready()) });
    const preset = newClient({ kernel: closeKernelAfter(await createKernel().register(presets.defaults).ready()) });
    const b = await promisesPerCall(() => bare.get(`${s.origin}/`));
    const p = await promisesPerCall(() => preset.get(`${s.origin}/`));
    expect(p).toBeLessThanOrEqual(b);
  });

  it('each tap runs once per attempt, in the loop order, where the taps answer, redirect, throw and decide', async () => {
    let served = 0;
    const s = await startServer((req) => {
      served++;
      if (req.target === '/moved') return new Response(302, '', { headers: [['Location', '/flaky']] });
      return new Response(200, req.target);
    });
    const log: string[] = [];
    let throwOnce = true;
    const plugin = definePlugin({
      name: 'watch',
      register(kernel) {
        kernel.hooks.client.onRequest.tap('watch', (req) => {
          log.push(`request ${req.target}`);
          if (req.target === '/local') return new Response(200, 'answered');
        });
        kernel.hooks.client.onResponseHead.tap('watch', (res) => {
          log.push(`head ${res.status}`);
          if (res.request?.target === '/flaky' && throwOnce) {
            throwOnce = false;
            throw new Error('tap failed');
          }
        });
        kernel.hooks.client.onRetry.tap('watch', (state): RetryDecision | undefined => {
          log.push(`retry ${state.attempt} ${state.error === null ? 'ok' : (state.error as Error).message}`);
          return state.error !== null ? { retry: true } : undefined;
        });
      },
    });
    const c = newClient({ kernel: closeKernelAfter(await createKernel().register(plugin).register(redirects).ready()) });
    await c.get(`${s.origin}/warm`);
    log.length = 0;
    served = 0;
    expect(text(await c.get(`${s.origin}/local`))).toBe('answered');
    expect(served).toBe(0);
    expect(log).toEqual(['request /local', 'head 200', 'retry 1 ok']);
    log.length = 0;
    expect(text(await c.get(`${s.origin}/moved`))).toBe('/flaky');
    expect(log).toEqual(['request /moved', 'head 302', 'request /flaky', 'head 200', 'retry 1 tap failed', 'request /flaky', 'head 200', 'retry 2 ok']);
    expect(served).toBe(3);
  });

  it('an onRequest tap that returns a promise is awaited, as the hook would', async () => {
    const s = await startServer((req) => new Response(200, req.target));
    const plugin = definePlugin({
      name: 'late',
      register(kernel) {
        kernel.hooks.client.onRequest.tap('late', (req) => (req.target === '/late' ? (Promise.resolve(new Response(201, 'late')) as unknown as Response) : undefined));
      },
    });
    const c = newClient({ kernel: closeKernelAfter(await createKernel().register(plugin).ready()) });
    const res = await c.get(`${s.origin}/late`);
    expect([res.status, text(res)]).toEqual([201, 'late']);
    expect(text(await c.get(`${s.origin}/net`))).toBe('/net');
    expect(res.request).toBeInstanceOf(Request);
  });
});
