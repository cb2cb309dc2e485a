// Cron expressions, parsed once at the config edge and matched against a second's local-time
// fields. Pure: no timers, and the time comes in as a number.
//
// The config checks expressions here, at its edge (pure, naming the field); node-cron runs them,
// and a test holds the two to the same matches. Grammar (node-cron 4's): 5 fields (minute hour day month weekday, at
// second 0) or 6 (second first); `*`, `?` (day and weekday), numbers, ranges (`a-b`, wrapping when
// a > b, e.g. `fri-mon`), steps (`*/n`, `a-b/n`, `a/n` = from a to the field's end), lists, month
// and weekday names, 7 = Sunday, `L` (the month's last day), `5L` (its last Friday), `1#2` (its
// second Monday), and @yearly @annually @monthly @weekly @daily @midnight @hourly. Not node-cron's
// `W` (nearest weekday) or `L-n`: the config refuses them, naming the field.
// Day and weekday must both match, as in node-cron (classic cron's "either" rule when both are
// restricted is not followed). Times are the board's local time: in an hour a DST change repeats,
// a matching second matches twice; in an hour it skips, not at all.

/** The longest expression accepted. */
export const CRON_CHARS_MAX = 200;

export interface CronSpec {
  readonly second: readonly boolean[];
  readonly minute: readonly boolean[];
  readonly hour: readonly boolean[];
  /** Index 1-31. */
  readonly day: readonly boolean[];
  /** `L`: the month's last day. */
  readonly lastDay: boolean;
  /** Index 1-12. */
  readonly month: readonly boolean[];
  /** Index 0-6, Sunday 0. */
  readonly weekday: readonly boolean[];
  /** `5L`: weekdays that match on their last occurrence in the month. */
  readonly lastWeekday: readonly boolean[];
  /** `1#2`: [weekday, n] pairs, the n-th such weekday of the month. */
  readonly nthWeekday: ReadonlyArray<readonly [number, number]>;
}

/** A second's fields in local time; `weekday` 0 = Sunday, `month` 1-12. */
export interface LocalTime {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
  readonly weekday: number;
}

const NICKNAMES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
// A name is taken whole or by its first three letters.
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

interface Field {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** The first is `min`'s name. */
  readonly names?: readonly string[];
}
const FIELDS: readonly Field[] = [
  { name: 'second', min: 0, max: 59 },
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  // 7 is Sunday too: read as 0-7, folded below.
  { name: 'weekday', min: 0, max: 7, names: WEEKDAYS },
];

/** The spec, or what is wrong with the expression (one line, naming the field). */
export function parseCron(expression: string): CronSpec | string {
  if (expression.length > CRON_CHARS_MAX) return `is longer than ${CRON_CHARS_MAX} characters`;
  const text = expression.trim();
  const expanded = text.startsWith('@') ? NICKNAMES[text.toLowerCase()] : text;
  if (expanded === undefined) return `"${text}" is not one of ${Object.keys(NICKNAMES).join(' ')}`;
  const parts = expanded.split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) return `has ${parts.length} fields: 5 (minute hour day month weekday) or 6 (second first)`;
  if (parts.length === 5) parts.unshift('0');
  const sets: boolean[][] = [];
  let lastDay = false;
  const lastWeekday = new Array<boolean>(7).fill(false);
  const nthWeekday: Array<readonly [number, number]> = [];
  for (let f = 0; f < 6; f++) {
    const field = FIELDS[f]!;
    const set = new Array<boolean>(field.max + 1).fill(false);
    for (const item of parts[f]!.split(',')) {
      const lower = item.toLowerCase();
      if (field.name === 'day' && lower === 'l') {
        lastDay = true;
        continue;
      }
      if (field.name === 'weekday') {
        const special = /^([a-z]+|[0-7])(l|#([1-5]))$/.exec(lower);
        if (special) {
          const wd = value(special[1]!, field);
          if (wd === undefined) return `${field.name} "${item}": "${special[1]}" is not a weekday`;
          if (special[3] === undefined) lastWeekday[wd % 7] = true;
          else nthWeekday.push([wd % 7, Number(special[3])]);
          continue;
        }
      }
      const bad = addItem(set, item, field);
      if (bad) return `${field.name} "${item}": ${bad}`;
    }
    sets.push(set);
  }
  const weekday = sets[5]!;
  if (weekday[7]) weekday[0] = true;
  weekday.length = 7;
  return { second: sets[0]!, minute: sets[1]!, hour: sets[2]!, day: sets[3]!, lastDay, month: sets[4]!, weekday, lastWeekday, nthWeekday };
}

/** One list item (`*`, `?`, `n`, `a-b`, each with an optional `/step`, or `a/step`) into `set`; a reason if it is not one. */
function addItem(set: boolean[], item: string, field: Field): string | undefined {
  const m = /^(\*|\?|[a-z0-9]+)(?:-([a-z0-9]+))?(?:\/(\d+))?$/i.exec(item);
  if (!m) return 'is not a value, range or step';
  const [, a, b, stepText] = m;
  if (a === '?' && field.name !== 'day' && field.name !== 'weekday') return '"?" is for day and weekday only';
  const any = a === '*' || a === '?';
  if (any && b !== undefined) return 'a range cannot start at "*"';
  const from = any ? field.min : value(a!, field);
  if (from === undefined) return notA(a!, field);
  let to = from;
  if (any || (b === undefined && stepText !== undefined)) to = field.max;
  else if (b !== undefined) {
    const v = value(b, field);
    if (v === undefined) return notA(b, field);
    to = v;
  }
  const step = stepText === undefined ? 1 : Number(stepText);
  const size = field.max - field.min + 1;
  if (!(step >= 1 && step <= size)) return `step ${stepText} is not 1-${size}`;
  // a > b wraps round the field's end (23-2 = 23, 0, 1, 2).
  const span = (((to - from) % size) + size) % size;
  for (let o = 0; o <= span; o += step) set[from + o > field.max ? from + o - size : from + o] = true;
  return undefined;
}

function value(text: string, field: Field): number | undefined {
  if (/^\d{1,2}$/.test(text)) {
    const n = Number(text);
    return n >= field.min && n <= field.max ? n : undefined;
  }
  if (!field.names) return undefined;
  const t = text.toLowerCase();
  const i = field.names.findIndex((name) => t === name || t === name.slice(0, 3));
  return i < 0 ? undefined : field.min + i;
}

const notA = (text: string, field: Field): string => `"${text}" is not a ${field.name} (${field.min}-${field.max}${field.names ? ' or a name' : ''})`;

/** The local-time fields of the second that starts at `epochS` (the process's time zone). */
export function localTime(epochS: number): LocalTime {
  const d = new Date(epochS * 1000);
  return { year: d.getFullYear(), month: d.getMonth() + 1, day: d.getDate(), hour: d.getHours(), minute: d.getMinutes(), second: d.getSeconds(), weekday: d.getDay() };
}

export function cronMatches(spec: CronSpec, t: LocalTime): boolean {
  if (!spec.second[t.second] || !spec.minute[t.minute] || !spec.hour[t.hour] || !spec.month[t.month]) return false;
  const monthDays = daysInMonth(t.year, t.month);
  if (!(spec.day[t.day] || (spec.lastDay && t.day === monthDays))) return false;
  if (spec.weekday[t.weekday]) return true;
  if (spec.lastWeekday[t.weekday] && t.day + 7 > monthDays) return true;
  const nth = Math.floor((t.day - 1) / 7) + 1;
  return spec.nthWeekday.some(([wd, n]) => wd === t.weekday && n === nth);
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}
