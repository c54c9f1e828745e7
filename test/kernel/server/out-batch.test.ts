import { describe, expect, it } from 'vitest';
import { OutBatch } from '../../../kernel/server/out-batch.js';

const text = (pieces: Buffer[]): string => Buffer.concat(pieces).toString('latin1');

describe('OutBatch', () => {
  it('keeps every byte in order across slab boundaries', () => {
    const b = new OutBatch();
    let want = '';
    for (let i = 0; i < 300; i++) {
      const head = `HTTP/1.1 200 OK\r\nX-N: ${i}\r\n\r\n`;
      b.addMessage(head, `body ${i} é`);
      want += head + `body ${i} é`.replace('é', '\u00c3\u00a9');
      if (i % 7 === 0) {
        b.add(`chunk ${i}\r\n`);
        want += `chunk ${i}\r\n`;
      }
    }
    expect(b.bytes).toBe(Buffer.byteLength(want, 'latin1'));
    expect(text(b.take())).toBe(want);
    expect(b.bytes).toBe(0);
  });

  it('queues a large piece as it is, between the slab runs around it', () => {
    const b = new OutBatch();
    const big = Buffer.alloc(5000, 'x');
    b.add('before;');
    b.add(big);
    b.addMessage('head;', 'y'.repeat(3000));
    b.add('after');
    const pieces = b.take();
    expect(pieces).toContain(big);
    expect(text(pieces)).toBe('before;' + 'x'.repeat(5000) + 'head;' + 'y'.repeat(3000) + 'after');
  });

  it('keeps two batches apart when they fill the shared slab in turns', () => {
    const a = new OutBatch();
    const c = new OutBatch();
    let wantA = '';
    let wantC = '';
    for (let i = 0; i < 200; i++) {
      a.add(`a${i};`);
      wantA += `a${i};`;
      c.addMessage(`c${i}:`, 'z'.repeat(i % 50));
      wantC += `c${i}:` + 'z'.repeat(i % 50);
    }
    expect(text(a.take())).toBe(wantA);
    expect(text(c.take())).toBe(wantC);
  });

  it('never rewrites bytes handed out before', () => {
    const b = new OutBatch();
    b.add('first');
    const [first] = b.take();
    for (let i = 0; i < 1000; i++) b.add('overwrite?');
    b.take();
    expect(first!.toString('latin1')).toBe('first');
  });
});
