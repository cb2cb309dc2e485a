// Running one CGI program (RFC 3875) for one request: spawned without a shell, in a process group
// of its own, with exactly the environment shared/cgi.ts makes, the body on stdin. Its stdout is
// read up to a bound and parsed into the answer; its stderr goes to the log, bounded. At its
// timeout, or when the request is cancelled, the whole group gets SIGTERM, then SIGKILL after a
// grace, so a program's own children (`sleep 100 &`) end with it.
import { spawn } from 'node:child_process';
import { type CgiAnswer, parseCgiOutput } from '../../shared/cgi.ts';

/** After SIGTERM, how long the group has before SIGKILL. */
export const CGI_KILL_GRACE_MS = 500;
/** The most of a program's stderr one request logs. */
export const CGI_STDERR_BYTES_MAX = 4096;

export interface CgiRun {
  readonly file: string;
  readonly env: Record<string, string>;
  readonly body: Buffer;
  readonly timeoutMs: number;
  /** The most of its stdout read: past it the program is stopped and the answer refused. */
  readonly outputBytesMax: number;
  readonly cwd: string;
}

export type CgiOutcome =
  | { readonly kind: 'answer'; readonly answer: CgiAnswer; readonly exitCode: number | null; readonly stderr: string }
  | { readonly kind: 'timeout'; readonly stderr: string }
  | { readonly kind: 'too-large'; readonly stderr: string }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'spawn-failed'; readonly message: string };

export interface Running {
  readonly done: Promise<CgiOutcome>;
  /** Stop it (the client went away): the group is killed; `done` says cancelled. */
  cancel(): void;
}

export function runCgi(r: CgiRun): Running {
  let cancel: () => void = () => {};
  const done = new Promise<CgiOutcome>((resolve) => {
    let settled = false;
    let ending: CgiOutcome['kind'] | undefined;
    const finish = (o: CgiOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(killTimer);
      resolve(o);
    };
    const child = spawn(r.file, [], { cwd: r.cwd, env: r.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'], shell: false });
    const chunks: Buffer[] = [];
    let outBytes = 0;
    let err = '';
    let killTimer: NodeJS.Timeout | undefined;
    /** The whole group: the program and whatever it started. */
    const killGroup = (why: CgiOutcome['kind']) => {
      if (ending) return;
      ending = why;
      const signal = (s: NodeJS.Signals) => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, s);
        } catch {
          // the group is gone already
        }
      };
      signal('SIGTERM');
      killTimer = setTimeout(() => signal('SIGKILL'), CGI_KILL_GRACE_MS);
      killTimer.unref();
    };
    const timer = setTimeout(() => killGroup('timeout'), r.timeoutMs);
    cancel = () => killGroup('cancelled');
    child.on('error', (e) => finish({ kind: 'spawn-failed', message: e.message }));
    child.stdout.on('data', (d: Buffer) => {
      outBytes += d.length;
      if (outBytes > r.outputBytesMax) return killGroup('too-large');
      chunks.push(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      if (err.length < CGI_STDERR_BYTES_MAX) err += d.toString('utf8', 0, Math.min(d.length, CGI_STDERR_BYTES_MAX - err.length));
    });
    // A program that does not read its body must not fail the run.
    child.stdin.on('error', () => {});
    child.stdin.end(r.body);
    child.on('close', (code) => {
      // The program is gone; its group too (a child it left behind is killed with it).
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // nothing left
        }
      }
      if (ending === 'timeout') return finish({ kind: 'timeout', stderr: err });
      if (ending === 'too-large') return finish({ kind: 'too-large', stderr: err });
      if (ending === 'cancelled') return finish({ kind: 'cancelled' });
      finish({ kind: 'answer', answer: parseCgiOutput(Buffer.concat(chunks)), exitCode: code, stderr: err });
    });
  });
  return { done, cancel: () => cancel() };
}
