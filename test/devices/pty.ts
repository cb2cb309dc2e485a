// Real pseudo-terminal pairs from socat, and serial-port wires for simulators.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SerialPort } from 'serialport';
import type { Wire } from '../../dev/simulators/simulator.ts';

export interface PtyPair {
  a: string;
  b: string;
  proc: ChildProcess;
  kill(): Promise<void>;
  restart(): Promise<void>;
}

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The pairs' directories go when the test file's process ends (a pair may be killed and restarted). */
const pairDirs = new Set<string>();
process.once('exit', () => {
  for (const d of pairDirs) rmSync(d, { recursive: true, force: true });
});

/** Two linked ptys: the driver opens `a`, the device (simulator or pymodbus) opens `b`. */
export async function ptyPair(dir = mkdtempSync(join(tmpdir(), 'ews-pty-'))): Promise<PtyPair> {
  pairDirs.add(dir);
  const a = join(dir, 'ttyA'),
    b = join(dir, 'ttyB');
  const start = async () => {
    const proc = spawn('socat', [`pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`], { stdio: 'ignore' });
    await until('socat links', () => existsSync(a) && existsSync(b));
    return proc;
  };
  const pair: PtyPair = {
    a,
    b,
    proc: await start(),
    async kill() {
      const p = pair.proc;
      if (p.exitCode !== null || p.signalCode !== null) return;
      const gone = new Promise((r) => p.once('exit', r));
      p.kill('SIGKILL');
      await gone;
      await until('links removed', () => !existsSync(a) || !existsSync(b)).catch(() => undefined);
    },
    async restart() {
      await pair.kill();
      pair.proc = await start();
    },
  };
  return pair;
}

/** Open the device end of a pty as a simulator's wire. */
export async function ptyWire(path: string): Promise<{ wire: Wire; port: SerialPort; close(): Promise<void> }> {
  const port = new SerialPort({ path, baudRate: 9600, autoOpen: false });
  await new Promise<void>((res, rej) => port.open((e) => (e ? rej(e) : res())));
  port.on('error', () => {});
  const wire: Wire = { write: (d) => void port.write(d), onData: (cb) => port.on('data', cb) };
  return { wire, port, close: () => new Promise((r) => (port.isOpen ? port.close(() => r()) : r())) };
}

export { until };
