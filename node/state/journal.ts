// An append-only file of JSON lines in stateDir, the one way a board keeps state on disk that
// changes often (intents, the audit log, alarm episodes, history). Appends made in one turn of
// the event loop share one write and one fsync (group commit); a line torn by a power cut, or
// any line that is not JSON, is skipped on reading. `rewrite` replaces the whole file atomically
// (write, fsync, rename, fsync the directory): after a power cut the file is the old one or the
// new one, never a mix. Bounded by its owner, which rewrites it to what it still holds.
import { closeSync, fsync, openSync, readFileSync, write } from 'node:fs';
import { writeDurably } from './boot-epoch.ts';

/** An append after the journal was closed: the board is stopping (what the others hold comes back at its next boot). */
export class JournalClosed extends Error {
  constructor(file: string) {
    super(`${file} is closed: the board is stopping`);
  }
}

export class Journal {
  private fd: number;
  private queue: string[] = [];
  private waiters: Array<(err: Error | null) => void> = [];
  private flushing = false;
  private pendingRewrite: (() => string) | undefined;
  /** Waiting for the queue to be empty and nothing being written (drained()). */
  private idleWaiters: Array<() => void> = [];
  /** Lines in the file and on their way to it (those read at open, those appended since). */
  lines = 0;
  /** Bytes appended since it was opened (what the flash has been given). */
  bytesWritten = 0;
  /** Closed (the board is stopping): appends are refused with JournalClosed, not written to a closed descriptor. */
  private closed = false;

  constructor(private readonly file: string) {
    this.fd = openSync(file, 'a', 0o600);
  }

  /** Every line that parses, in file order. */
  read(): unknown[] {
    let text = '';
    try {
      text = readFileSync(this.file, 'utf8');
    } catch {
      return [];
    }
    const out: unknown[] = [];
    for (const raw of text.split('\n')) {
      if (!raw) continue;
      try {
        out.push(JSON.parse(raw));
      } catch {
        /* a line torn by a power cut */
      }
    }
    this.lines = out.length;
    return out;
  }

  /** Resolves once the line is on disk. */
  append(line: unknown): Promise<void> {
    return this.appendAll([line]);
  }

  /** Several lines in the same write; resolves once they are on disk. */
  appendAll(lines: readonly unknown[]): Promise<void> {
    if (this.closed) return Promise.reject(new JournalClosed(this.file));
    for (const l of lines) this.queue.push(`${JSON.stringify(l)}\n`);
    this.lines += lines.length;
    const p = new Promise<void>((resolve, reject) => this.waiters.push((err) => (err ? reject(err) : resolve())));
    if (!this.flushing) this.flush();
    return p;
  }

  /**
   * Replace the file with `text()`, atomically, once the write under way is done. `text()` is the
   * owner's whole state at that moment, so it covers every line still queued: those are not
   * written again, and their appends resolve with the rewrite.
   */
  rewrite(text: () => string): void {
    if (this.closed) return;
    this.pendingRewrite = text;
    if (!this.flushing) this.flush();
  }

  /** Resolves once nothing is queued or being written. */
  drained(): Promise<void> {
    if (!this.flushing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** New appends are refused from now on; what is queued or being written still reaches the file, then the descriptor closes. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.flushing) closeSync(this.fd);
  }

  private flush(): void {
    if (this.pendingRewrite) {
      // The owner's state, taken now, holds everything queued so far: those lines are in the new file.
      const text = this.pendingRewrite();
      const covered = this.waiters;
      this.pendingRewrite = undefined;
      this.queue = [];
      this.waiters = [];
      closeSync(this.fd);
      let err: Error | null = null;
      try {
        writeDurably(this.file, text);
        this.bytesWritten += Buffer.byteLength(text);
        this.lines = text === '' ? 0 : text.split('\n').length - 1;
      } catch (e) {
        err = e as Error;
      } finally {
        this.fd = openSync(this.file, 'a', 0o600);
      }
      for (const w of covered) w(err);
    }
    if (this.queue.length === 0) {
      this.flushing = false;
      if (this.closed) closeSync(this.fd);
      const idle = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of idle) w();
      return;
    }
    this.flushing = true;
    const text = this.queue.join('');
    const waiters = this.waiters;
    this.queue = [];
    this.waiters = [];
    write(this.fd, text, null, 'utf8', (werr) => {
      const done = (err: Error | null) => {
        if (!err) this.bytesWritten += Buffer.byteLength(text);
        for (const w of waiters) w(err);
        this.flush();
      };
      if (werr) return done(werr);
      fsync(this.fd, (ferr) => done(ferr));
    });
  }
}

/** Lines as a journal's file text. */
export const journalText = (lines: readonly unknown[]): string => lines.map((l) => `${JSON.stringify(l)}\n`).join('');
