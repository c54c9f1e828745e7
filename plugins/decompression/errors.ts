/**
 * The error of the decompression plugin: a decoded body grew past one of its bounds.
 */
import { HTTPError } from '../../kernel/index.js';

/** Which bound a {@link DecompressionLimitError} reports: decoded bytes, or decoded bytes per compressed byte. */
export type DecompressionBound = 'size' | 'ratio';

/**
 * A decompressed response body grew past a bound of the decompression plugin: more decoded
 * bytes than `maxDecompressedBytes` (`bound` `'size'`), or more decoded bytes per compressed
 * byte than `maxDecompressionRatio` (`bound` `'ratio'`): a compression bomb, or a body larger
 * than the caller allows.
 */
export class DecompressionLimitError extends HTTPError {
  /** Always `SWY_ERR_DECOMPRESSION_LIMIT`. */
  readonly code = 'SWY_ERR_DECOMPRESSION_LIMIT';
  /** The bound that was passed: decoded bytes (`size`), or decoded bytes per compressed byte (`ratio`). */
  readonly limit: number;
  /** Which bound tripped. */
  readonly bound: DecompressionBound;
  /** Decoded bytes when it tripped. */
  readonly decoded: number;
  /** Compressed bytes of the body the decoder had taken when it tripped. */
  readonly compressed: number;
  constructor(limit: number, bound: DecompressionBound = 'size', decoded = 0, compressed = 0, message?: string) {
    super(message ?? decompressionMessage(limit, bound, decoded, compressed));
    this.limit = limit;
    this.bound = bound;
    this.decoded = decoded;
    this.compressed = compressed;
  }
}

function decompressionMessage(limit: number, bound: DecompressionBound, decoded: number, compressed: number): string {
  const escape = 'or pass decompress: false to read the compressed bytes';
  if (bound === 'ratio') {
    return `decompressed response body exceeds maxDecompressionRatio (${limit}:1): ${decoded} bytes from ${compressed} compressed, a compression bomb or unusually repetitive data; raise maxDecompressionRatio (0 = no bound) ${escape}`;
  }
  return `decompressed response body exceeds maxDecompressedBytes (${limit} bytes); raise maxDecompressedBytes (0 = no bound) ${escape}`;
}
