/**
 * Response bodies the server tests share.
 */
import { AbstractBody } from '../../kernel/index.js';

/** A body that sends `first` and then nothing until it is closed (an event stream, say). */
export class Endless extends AbstractBody {
  private sent = false;
  private ended = false;
  private wake: (() => void) | null = null;
  constructor(private readonly first: string) {
    super();
  }
  read(dst: Uint8Array): Promise<number> {
    if (!this.sent) {
      this.sent = true;
      return Promise.resolve(Buffer.from(this.first).copy(dst));
    }
    if (this.ended) return Promise.resolve(0);
    return new Promise((resolve) => (this.wake = () => resolve(0)));
  }
  close(): void {
    this.ended = true;
    this.wake?.();
  }
  get closed(): boolean {
    return this.ended;
  }
}
