/**
 * The light global Response: what it keeps, what it makes the platform's response for, and
 * that it passes for the platform's class both ways.
 */
import { describe, expect, it } from 'vitest';
import { installLightResponse, lightResponseClass } from '../../../kernel/web/index.js';
import { lightParts, nativeResponse } from '../../../kernel/web/light-response.js';
import { webBodySource } from '../../../kernel/web/from-web-response.js';
import { fetchHandler } from '../../../kernel/index.js';

// Taken before anything installs the light class.
const NativeResponse = nativeResponse();
const LightResponse = lightResponseClass();

describe('LightResponse', () => {
  it('keeps a string body and its init without making the platform response', () => {
    const r = new LightResponse('hello', { status: 201, statusText: 'Made' });
    expect(lightParts(r)).toEqual({ status: 201, statusText: 'Made', headers: null, body: 'hello' });
    expect([r.status, r.statusText, r.ok]).toEqual([201, 'Made', true]);
    expect(webBodySource(r)).toBe('hello');
  });

  it('answers like the platform: default content type, body mixins, clone, bodyUsed', async () => {
    const r = new LightResponse('{"a":1}');
    expect(r.headers.get('content-type')).toBe(new NativeResponse('x').headers.get('content-type'));
    const c = r.clone();
    expect(await r.json()).toEqual({ a: 1 });
    expect(r.bodyUsed).toBe(true);
    expect(lightParts(r)).toBe(null); // its platform response was made (and read)
    expect(await c.text()).toBe('{"a":1}');
    const b = new LightResponse(new Uint8Array([104, 105]), { headers: { 'x-a': '1' } });
    expect(b.headers.get('x-a')).toBe('1');
    expect(b.headers.has('content-type')).toBe(false);
    expect(await b.text()).toBe('hi');
  });

  it('headers read before the body are the ones the platform response gets', async () => {
    const r = new LightResponse('x', { headers: { 'x-a': '1' } });
    r.headers.set('x-b', '2');
    const body = r.body!; // makes the platform response
    expect([r.headers.get('x-a'), r.headers.get('x-b')]).toEqual(['1', '2']);
    expect(body).toBeInstanceOf(ReadableStream);
  });

  it('is instanceof the platform class and the platform responses are instanceof it', () => {
    expect(new LightResponse('x')).toBeInstanceOf(NativeResponse);
    expect(new NativeResponse('x')).toBeInstanceOf(LightResponse);
    expect(LightResponse.json({ a: 1 })).toBeInstanceOf(LightResponse);
    expect(Object.prototype.toString.call(new LightResponse('x'))).toBe('[object Response]');
    class Mine extends LightResponse {}
    expect(new Mine('x')).toBeInstanceOf(Mine);
    expect(new LightResponse('x')).not.toBeInstanceOf(Mine);
  });

  it('checks the status range at once, as the platform does, and needs new', () => {
    expect(() => new LightResponse('x', { status: 99 })).toThrow(RangeError);
    expect(() => new LightResponse('x', { status: 600 })).toThrow(RangeError);
    expect(() => (LightResponse as unknown as (b: string) => Response)('x')).toThrow(TypeError);
  });

  it('makes the platform response at once for other bodies (a stream)', async () => {
    const r = new LightResponse(
      new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(new Uint8Array([111, 107]));
          c.close();
        },
      }),
    );
    expect(lightParts(r)).toBe(null);
    expect(await r.text()).toBe('ok');
  });

  it('the platform takes it as init and as a whole response', async () => {
    const r = new LightResponse('body', { status: 202, headers: { 'x-a': '1' } });
    const copy = new NativeResponse('other', r);
    expect([copy.status, copy.headers.get('x-a')]).toEqual([202, '1']);
    expect(await NativeResponse.prototype.text.call(r)).toBe('body');
  });
});

describe('installLightResponse', () => {
  it('fetchHandler installs it unless lightResponse is false; unknown options are refused', () => {
    expect(globalThis.Response).toBe(NativeResponse);
    fetchHandler(() => new Response('x'), { lightResponse: false });
    expect(globalThis.Response).toBe(NativeResponse);
    expect(() => fetchHandler(() => new Response('x'), { lightResponce: true } as never)).toThrow(/lightResponce.*lightResponse/s);
    fetchHandler(() => new Response('x'));
    expect(globalThis.Response).toBe(LightResponse);
    installLightResponse();
    expect(globalThis.Response).toBe(LightResponse);
  });
});
