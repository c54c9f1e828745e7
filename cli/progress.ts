/**
 * The download progress bar: one line on stderr, redrawn in place (`\r`) at most ten times a
 * second, with bytes, percentage, rate and ETA when the size is known, and bytes and rate when
 * it is not (chunked or decoded bodies). Shown only when stderr is a terminal and the body goes
 * to a file (`-o`); the caller decides that.
 */

/** What one progress line shows. */
export interface ProgressState {
  /** Bytes written so far. */
  received: number;
  /** Expected bytes, or -1 when unknown. */
  total: number;
  /** Since the first byte was expected, ms. */
  elapsedMs: number;
  /** Terminal width in columns. */
  columns: number;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** `512 B`, `1.5 KiB`, `20.0 MiB`. */
export function formatBytes(n: number): string {
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${UNITS[u]}`;
}

/** `7s`, `2m05s`, `1h02m`; `>99h` past that, to keep the field's width. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s >= 100 * 3600) return '>99h';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

// Field widths: the widest each field gets (`1023.9 KiB`, `1023.9 KiB/s`, `ETA 59m59s`), so
// the line keeps one length from frame to frame and the bar does not jump.
const BYTES_W = 10;
const RATE_W = 12;
const ETA_W = 10;

/**
 * The progress line (without `\r`), fitted to `columns`. Every field is padded to a fixed width,
 * so for one terminal width every frame of a download has the same length.
 */
export function renderProgress(p: ProgressState): string {
  const rate = p.elapsedMs > 0 ? (p.received * 1000) / p.elapsedMs : 0;
  const rateText = `${formatBytes(Math.round(rate))}/s`.padStart(RATE_W);
  const received = formatBytes(p.received).padStart(BYTES_W);
  if (p.total < 0) return `${received}  ${rateText}`.slice(0, Math.max(0, p.columns - 1));
  const frac = p.total === 0 ? 1 : Math.min(1, p.received / p.total);
  const pct = `${Math.floor(frac * 100)}%`.padStart(4);
  const done = p.received >= p.total;
  const eta = (done ? `in ${formatDuration(p.elapsedMs / 1000)}` : rate > 0 ? `ETA ${formatDuration((p.total - p.received) / rate)}` : 'ETA --').padEnd(ETA_W);
  const tail = ` ${pct}  ${received} / ${formatBytes(p.total).padStart(BYTES_W)}  ${rateText}  ${eta}`;
  // The bar takes what the numbers leave, between 10 and 40 cells; none on a very narrow terminal.
  const room = p.columns - 1 - tail.length - 2;
  if (room < 10) return tail.slice(1).slice(0, Math.max(0, p.columns - 1));
  const cells = Math.min(40, room);
  const full = Math.floor(frac * cells);
  return `[${'#'.repeat(full)}${'-'.repeat(cells - full)}]${tail}`;
}

/** Where the bar is drawn: a terminal stream. */
export interface ProgressOutput {
  write(text: string): unknown;
  /** Width of the terminal; 80 when unknown or 0. */
  readonly columns?: number;
}

/** A live progress bar. */
export class ProgressBar {
  private received = 0;
  private total = -1;
  private readonly started = performance.now();
  private lastDraw = 0;
  private drawn = false;
  private ended = false;

  constructor(private readonly out: ProgressOutput) {}

  /** Sets the expected size (-1 for unknown) and starts counting again (a new response after a redirect or retry). */
  reset(total: number): void {
    this.total = total;
    this.received = 0;
  }

  /** Counts `n` more bytes and redraws when the last draw is 100 ms old. */
  add(n: number): void {
    this.received += n;
    const now = performance.now();
    if (now - this.lastDraw >= 100) {
      this.lastDraw = now;
      this.draw();
    }
  }

  /** Draws the last state and ends the line (when anything was drawn, or `always`). */
  finish(always = true): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.drawn && !always) return;
    this.draw();
    this.out.write('\n');
  }

  private draw(): void {
    this.drawn = true;
    // A pty nobody sized (0 columns, as under `script` without a terminal) counts as 80 wide.
    const columns = this.out.columns !== undefined && this.out.columns > 0 ? this.out.columns : 80;
    const line = renderProgress({ received: this.received, total: this.total, elapsedMs: performance.now() - this.started, columns });
    // `\x1b[K` clears what a longer previous line left behind.
    this.out.write(`\r${line}\x1b[K`);
  }
}
