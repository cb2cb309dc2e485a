// Splits a byte stream into lines at `eol`, with a bound on line length. Pure.
export class LineSplitter {
  private buf = '';
  constructor(
    private readonly eol: string,
    private readonly lineBytesMax = 1024,
  ) {}

  /** Complete lines in `chunk` (without eol); throws when a line outgrows the bound. */
  push(chunk: Buffer | string): string[] {
    this.buf += typeof chunk === 'string' ? chunk : chunk.toString('latin1');
    const lines: string[] = [];
    for (let i = this.buf.indexOf(this.eol); i >= 0; i = this.buf.indexOf(this.eol)) {
      lines.push(this.buf.slice(0, i).replace(/\r$/, ''));
      this.buf = this.buf.slice(i + this.eol.length);
    }
    if (this.buf.length > this.lineBytesMax) {
      this.buf = '';
      throw new Error(`line longer than ${this.lineBytesMax} bytes`);
    }
    return lines;
  }
  reset(): void {
    this.buf = '';
  }
}
