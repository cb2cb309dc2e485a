// One logger for the process (pino: JSON lines, cheap when a level is off).
import { type Logger, pino } from 'pino';

export type { Logger };

export function createLogger(bindings: Record<string, string> = {}, level = process.env.EWS_LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { pid: process.pid, ...bindings } });
}

/** For tests and tools that want silence. */
export const silentLogger: Logger = pino({ level: 'silent' });
