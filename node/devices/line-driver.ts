// Line-protocol device: ASCII request, one line of answer, `ok` pattern, `parse` regexes, `{value}` templates.
import type { LineAction, LineDevice } from '../../shared/device-config.ts';
import { EwsError } from '../../shared/errors.ts';
import { plainDecimal } from './action-input.ts';
import { LineSplitter } from './line-splitter.ts';
import { type PortIO, withRetries } from './port-worker.ts';

/** `retries`: how often a timeout or garbled reply is asked again (0 for a command that must not run twice). */
async function ask(io: PortIO, dev: LineDevice, command: string, retries: number): Promise<string> {
  const line = await withRetries(retries, () => {
    const split = new LineSplitter(dev.eol);
    return io.transact<string>(
      Buffer.from(command + dev.eol, 'latin1'),
      (rx) => {
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
      },
      dev.timeoutMs,
    );
  });
  if (dev.ok && !dev.ok.test(line)) throw new EwsError('DEVICE_ERROR', `device refused: ${line.slice(0, 120)}`);
  return line;
}

export async function readLine(io: PortIO, dev: LineDevice): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of dev.points) {
    const line = await ask(io, dev, p.query, dev.retries);
    const m = p.parse.exec(line);
    const v = m ? Number(m[1]) : NaN;
    if (!Number.isFinite(v)) throw new EwsError('DEVICE_ERROR', `answer to ${p.query} did not match: ${line.slice(0, 120)}`);
    out[p.name] = Math.round(v * p.scale * 1e6) / 1e6;
  }
  return out;
}

/**
 * An action: once the command is on the wire it may have run, so a late or garbled reply is not
 * answered by sending it again (the device would run it twice) unless it is declared idempotent.
 */
export async function sendLine(io: PortIO, dev: LineDevice, action: LineAction, value: number | undefined): Promise<string> {
  return ask(io, dev, value === undefined ? action.send : action.send.replaceAll('{value}', plainDecimal(value)), action.idempotent ? dev.retries : 0);
}
