/**
 * The three audiences and their entries: `switchyard` (the user's API), `switchyard/kernel`
 * (plugin authors and stack builders) and `switchyard/protocol` (protocol plugins: the codec's
 * internals). The protocol entry's names are in neither of the others, the top level holds no
 * plugin author's helper, and each entry holds what its audience reaches for.
 */
import { describe, expect, it } from 'vitest';
import * as top from '../../index.js';
import * as kernel from '../../kernel/index.js';
import * as protocol from '../../kernel/protocol.js';
import * as plugins from '../../plugins/index.js';

const names = (m: object): string[] => Object.keys(m);

function isClass(x: unknown): boolean {
  return typeof x === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(x));
}

describe('switchyard/protocol', () => {
  it('holds the codec internals named for protocol plugins', () => {
    const p = protocol as unknown as Record<string, unknown>;
    for (const name of ['HeadParser', 'FlowBody']) expect(isClass(p[name]), `${name} is a class`).toBe(true);
    for (const name of ['protocolRequest', 'protocolResponse', 'headersFromFields', 'serializeResponseHead', 'isH2Preface', 'dialTcp']) {
      expect(p[name], name).toBeTypeOf('function');
    }
    expect(protocol.HOLD_BYTES).toBe(4096);
    expect(protocol.H2_PREFACE.length).toBe(24);
    expect(typeof protocol.kBufferBody).toBe('symbol');
    expect(typeof protocol.kUnprocessed).toBe('symbol');
  });

  it('none of its names is exported by switchyard/kernel or switchyard', () => {
    const k = new Set(names(kernel));
    const t = new Set(names(top));
    expect(names(protocol).filter((n) => k.has(n))).toEqual([]);
    expect(names(protocol).filter((n) => t.has(n))).toEqual([]);
  });
});

describe('switchyard (the top level)', () => {
  it('leaves the plugin authors’ helpers to switchyard/kernel', () => {
    const t = new Set(names(top));
    for (const name of ['getCallOptions', 'checkPluginOptions', 'OptionChecks', 'checkOptionKeys', 'isPlugin', 'notAResponse', 'setDefaultClientKernel', 'upgradeRequest', 'eqIgnoreCase']) {
      expect(t.has(name), name).toBe(false);
      expect(names(kernel), name).toContain(name);
    }
  });

  it('re-exports the kernel’s values as the same objects (serve, listen and serveFetch wrap the kernel’s with the default kernel)', () => {
    const k = kernel as unknown as Record<string, unknown>;
    const own = new Set(['serve', 'listen', 'serveFetch']);
    for (const [name, value] of Object.entries(top)) if (name in k && !own.has(name)) expect(value, name).toBe(k[name]);
  });
});

describe('plugin errors', () => {
  it('come from their plugins: switchyard and switchyard/plugins export the same classes, switchyard/kernel none', () => {
    const t = top as unknown as Record<string, unknown>;
    const p = plugins as unknown as Record<string, unknown>;
    for (const name of ['TooManyRedirectsError', 'DecompressionLimitError', 'RequestRetryError']) {
      expect(isClass(p[name]), name).toBe(true);
      expect(t[name], name).toBe(p[name]);
      expect(names(kernel), name).not.toContain(name);
    }
  });
});
