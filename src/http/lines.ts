/**
 * Newline-delimited JSON streams (watches) split into lines. Only a new chunk can hold the next
 * newline, so each byte is scanned once: rescanning the pending part on every chunk would make a
 * long line arriving in small chunks cost time quadratic in its length.
 */
export class LineSplitter {
  private parts: string[] = [];
  private pendingLength = 0;

  /** @param maxLine the longest unfinished line kept before {@link overLimit} turns true */
  constructor(private readonly maxLine: number) {}

  /** The lines `chunk` completes, without their newline, in order (empty ones included). */
  push(chunk: string): string[] {
    let nl = chunk.indexOf('\n');
    if (nl < 0) {
      this.keep(chunk);
      return [];
    }
    this.parts.push(chunk.slice(0, nl));
    const lines = [this.parts.join('')];
    this.parts = [];
    this.pendingLength = 0;
    let start = nl + 1;
    while ((nl = chunk.indexOf('\n', start)) >= 0) {
      lines.push(chunk.slice(start, nl));
      start = nl + 1;
    }
    this.keep(chunk.slice(start));
    return lines;
  }

  /** Whether the unfinished line is longer than the bound: a server to stop reading from. */
  get overLimit(): boolean {
    return this.pendingLength > this.maxLine;
  }

  private keep(part: string): void {
    if (part === '') return;
    this.parts.push(part);
    this.pendingLength += part.length;
  }
}
