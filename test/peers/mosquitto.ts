// A real MQTT broker for tests: mosquitto on a loopback port, started and stopped by the test.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Broker {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function mosquitto(port: number): Promise<Broker> {
  const dir = mkdtempSync(join(tmpdir(), 'ews-mqtt-'));
  const conf = join(dir, 'mosquitto.conf');
  let proc: ChildProcess | undefined;
  const b: Broker = {
    url: `mqtt://127.0.0.1:${port}`,
    port,
    async start() {
      // Written at each start: stop() removes the directory.
      mkdirSync(dir, { recursive: true });
      writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n`);
      proc = spawn('mosquitto', ['-c', conf], { stdio: 'ignore' });
      const end = Date.now() + 5000;
      for (;;) {
        const up = await new Promise<boolean>((r) => {
          const s = net.connect(port, '127.0.0.1', () => {
            s.destroy();
            r(true);
          });
          s.on('error', () => r(false));
        });
        if (up) return;
        if (Date.now() > end) throw new Error('mosquitto did not start');
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stop() {
      const p = proc;
      if (p && p.exitCode === null) {
        const gone = new Promise((r) => p.once('exit', r));
        p.kill('SIGKILL');
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await b.start();
  return b;
}
