// The `cgi` section: where a board's programs live and how each runs. Checked once at the edge.
import { programNameProblem } from './cgi.ts';
import { isObj, type Raw, type Reader } from './config-reader.ts';
import type { DeviceConfig } from './device-config.ts';

/** Where a board looks for programs when neither `cgi.dir` nor `boards[].cgiDir` says. */
export const CGI_DIR_DEFAULT = '/etc/ews/cgi-bin';
/** The most programs one config may configure. */
export const CGI_PROGRAMS_MAX = 256;

export interface CgiProgramConfig {
  /** `control`: HIGH, as the paper's CGI programs; `page`: LOW. */
  readonly class: 'control' | 'page';
  readonly timeoutMs: number;
  /** Runs at once per board; more wait in the master's queue. */
  readonly concurrencyMax: number;
  /** A device port the program has for itself while it runs. */
  readonly port: string | undefined;
}

export interface CgiConfig {
  readonly dir: string;
  readonly programs: Readonly<Record<string, CgiProgramConfig>>;
}

export const PROGRAM_DEFAULTS: CgiProgramConfig = { class: 'control', timeoutMs: 10_000, concurrencyMax: 2, port: undefined };

export function readCgi(r: Reader, raw: Raw, devices: readonly DeviceConfig[]): CgiConfig {
  const c = r.obj(raw, 'cgi', '', ['dir', 'programs'], false) ?? {};
  const dir = r.str(c, 'dir', 'cgi', CGI_DIR_DEFAULT);
  if (!dir.startsWith('/')) r.bad('cgi.dir', 'must be an absolute path');
  const programs: Record<string, CgiProgramConfig> = {};
  const list = c.programs === undefined ? {} : c.programs;
  if (!isObj(list)) {
    r.bad('cgi.programs', 'must be an object: { "NAME": { "class", "timeoutMs", "concurrencyMax", "port" } }');
    return { dir, programs };
  }
  const ports = new Set(devices.flatMap((d) => d.attach.map((a) => a.port)));
  const names = Object.keys(list);
  if (names.length > CGI_PROGRAMS_MAX) r.bad('cgi.programs', `at most ${CGI_PROGRAMS_MAX} programs`);
  for (const name of names) {
    const p = `cgi.programs.${name}`;
    const problem = programNameProblem(name);
    if (problem) r.bad(p, problem);
    const o = list[name];
    if (!isObj(o)) {
      r.bad(p, 'must be an object');
      continue;
    }
    r.noUnknown(o, p, ['class', 'timeoutMs', 'concurrencyMax', 'port']);
    const cls = r.str(o, 'class', p, 'control');
    if (cls !== 'control' && cls !== 'page') r.bad(`${p}.class`, 'must be "control" (HIGH) or "page" (LOW)');
    const port = o.port === undefined ? undefined : r.str(o, 'port', p);
    if (port !== undefined && !ports.has(port)) r.bad(`${p}.port`, `"${port}" is no device's port (devices[].attach[].port)`);
    programs[name] = {
      class: cls === 'page' ? 'page' : 'control',
      timeoutMs: r.int(o, 'timeoutMs', p, PROGRAM_DEFAULTS.timeoutMs, 100, 600_000),
      concurrencyMax: r.int(o, 'concurrencyMax', p, PROGRAM_DEFAULTS.concurrencyMax, 1, 64),
      port,
    };
  }
  return { dir, programs };
}
