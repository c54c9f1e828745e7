import { describe, expect, it } from 'vitest';
import { Headers } from '../../../kernel/message/index.js';
import { fromWebHeaders, toWebHeaders } from '../../../kernel/web/index.js';

describe('web headers', () => {
  it('carry every field across, Set-Cookie fields apart', () => {
    const h = new Headers();
    for (const [n, v] of [
      ['Content-Type', 'text/plain'],
      ['Set-Cookie', 'a=1'],
      ['Set-Cookie', 'b=2'],
      ['Vary', 'Accept'],
      ['Vary', 'Origin'],
    ] as const)
      h.push(n, v);
    const web = toWebHeaders(h);
    expect(web.get('content-type')).toBe('text/plain');
    expect(web.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(web.get('vary')).toBe('Accept, Origin');
    const back = fromWebHeaders(web);
    expect(back.getAll('set-cookie')).toEqual(['a=1', 'b=2']);
    expect(back.get('Content-Type')).toBe('text/plain');
    expect(back.get('vary')).toBe('Accept, Origin');
  });

  it('refuse what the web type refuses, with its TypeError', () => {
    const h = new Headers();
    h.push('Bad Name', 'x');
    expect(() => toWebHeaders(h)).toThrow(TypeError);
  });
});
