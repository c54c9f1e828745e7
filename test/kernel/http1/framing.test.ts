/**
 * The framing decision for outgoing requests: what the head says about the body and how the
 * body bytes follow, for every kind of body and for framing headers the caller set.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentError } from '../../../kernel/errors.js';
import { Headers } from '../../../kernel/message/headers.js';
import { framingPlan, requestFraming, type FramingPlan } from '../../../kernel/http1/framing.js';

function plan(method: string, headers: [string, string][], length: number): FramingPlan {
  return { ...requestFraming(method, new Headers(headers), length) };
}

describe('requestFraming', () => {
  it('a known length gets Content-Length, an unknown one chunked', () => {
    expect(plan('POST', [], 5)).toEqual({ field: 5, kind: 'length', length: 5 });
    expect(plan('GET', [], 5)).toEqual({ field: 5, kind: 'length', length: 5 });
    expect(plan('POST', [], -1)).toEqual({ field: 'chunked', kind: 'chunked', length: -1 });
    expect(plan('GET', [], -1)).toEqual({ field: 'chunked', kind: 'chunked', length: -1 });
  });

  it('an empty body gets Content-Length: 0 only on methods that expect a body', () => {
    for (const m of ['POST', 'PUT', 'PATCH']) expect(plan(m, [], 0), m).toEqual({ field: 0, kind: 'length', length: 0 });
    for (const m of ['GET', 'HEAD', 'DELETE', 'OPTIONS', 'CONNECT', 'QUERY']) expect(plan(m, [], 0), m).toEqual({ field: 'none', kind: 'length', length: 0 });
  });

  it("the caller's consistent framing headers are kept and no second field is added", () => {
    expect(plan('POST', [['content-length', '3']], 3)).toEqual({ field: 'none', kind: 'length', length: 3 });
    expect(plan('POST', [['Content-Length', '3']], -1)).toEqual({ field: 'none', kind: 'length', length: 3 });
    expect(
      plan(
        'POST',
        [
          ['Content-Length', '3'],
          ['Content-Length', '3'],
        ],
        -1,
      ),
    ).toEqual({ field: 'none', kind: 'length', length: 3 });
    expect(plan('POST', [['Transfer-Encoding', 'chunked']], -1)).toEqual({ field: 'none', kind: 'chunked', length: -1 });
    expect(plan('POST', [['Transfer-Encoding', 'gzip, chunked']], 10)).toEqual({ field: 'none', kind: 'chunked', length: -1 });
  });

  it('inconsistent framing headers are an ArgumentError that says what is wrong', () => {
    const bad: [[string, string][], number, RegExp][] = [
      [[['Content-Length', '3']], 5, /Content-Length header 3 does not match the body length 5/],
      [
        [
          ['Content-Length', '3'],
          ['Transfer-Encoding', 'chunked'],
        ],
        -1,
        /both Content-Length and Transfer-Encoding/,
      ],
      [
        [
          ['Content-Length', '3'],
          ['Content-Length', '4'],
        ],
        -1,
        /invalid Content-Length header/,
      ],
      [[['Content-Length', '-1']], -1, /invalid Content-Length/],
      [[['Transfer-Encoding', 'gzip']], -1, /must end with chunked/],
      [[['Transfer-Encoding', 'chunked, gzip']], -1, /must end with chunked/],
      [
        [
          ['Transfer-Encoding', 'chunked'],
          ['Transfer-Encoding', 'chunked'],
        ],
        -1,
        /once/,
      ],
    ];
    for (const [headers, length, message] of bad) {
      expect(() => requestFraming('POST', new Headers(headers), length), JSON.stringify(headers)).toThrow(ArgumentError);
      expect(() => requestFraming('POST', new Headers(headers), length), JSON.stringify(headers)).toThrow(message);
    }
  });

  it('fills the plan it is given (a connection reuses one) and returns it', () => {
    const p = framingPlan();
    expect(requestFraming('POST', new Headers(), -1, p)).toBe(p);
    expect(p.kind).toBe('chunked');
    requestFraming('GET', new Headers(), 0, p);
    expect({ ...p }).toEqual({ field: 'none', kind: 'length', length: 0 });
  });
});
