// Line-protocol device: ASCII request, one line of answer, `ok` pattern, `parse` regexes, `{value}` templates.
import type { LineDevice } from '../../shared/device-config.ts';
import { EwsError } from '../../shared/errors.ts';
import { LineSplitter } from './line-splitter.ts';
import { withRetries, type PortIO } from './port-worker.ts';

async function ask(io: PortIO, dev: LineDevice, command: string): Promise<string> {
  const line = await withRetries(dev.retries, () => {
    const split = new LineSplitter(dev.eol);
    return io.transact<string>(Buffer.from(command + dev.eol, 'latin1'), (rx) => {
      split.reset();
      let lines: string[];
      try {
        lines = split.push(rx);
      } catch (e) {
        return { error: (e as Error).message };
      }
      if (lines.length === 0) return { more: true };
      if (lines.length > 1) return { error: `${lines.length} lines where one was expected` };
      if (/[^\x20-\x7e\t]/.test(lines[0]!)) return { error: 'garbage on the line' };
      return { value: lines[0]! };
    }, dev.timeoutMs);
  });
  if (dev.ok && !dev.ok.test(line)) throw new EwsError('DEVICE_ERROR', `device refused: ${line.slice(0, 120)}`);
  return line;
}

export async function readLine(io: PortIO, dev: LineDevice): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of dev.points) {
    const line = await ask(io, dev, p.query);
    const m = p.parse.exec(line);
    const v = m ? Number(m[1]) : NaN;
    if (!Number.isFinite(v)) throw new EwsError('DEVICE_ERROR', `answer to ${p.query} did not match: ${line.slice(0, 120)}`);
    out[p.name] = Math.round(v * p.scale * 1e6) / 1e6;
  }
  return out;
}

export async function sendLine(io: PortIO, dev: LineDevice, template: string, value: number | undefined): Promise<string> {
  return ask(io, dev, value === undefined ? template : template.replaceAll('{value}', String(value)));
}
