/**
 * The body of an HTTP/2 client response: the kernel's {@link FlowBody}, whose source is the
 * stream. Past the high-water mark the stream is paused, so node:http2 stops returning window
 * to the server (flow control holds the rest); closing the body before its end resets the
 * stream (CANCEL), leaving the connection to the other streams.
 */
import { FlowBody, type FlowSource } from '../../kernel/protocol.js';

/** What the body needs from its exchange. */
export type BodySource = FlowSource;

/** A streamed HTTP/2 response body (single use). */
export class H2ResponseBody extends FlowBody {
  /** @internal An error after the body ended (a late RST_STREAM, the session going) changes nothing. */
  override error(err: Error): void {
    if (this.ended) return;
    super.error(err);
  }
}
