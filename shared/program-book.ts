// Which boards have which CGI programs, as they announce them (PROGRAMS packets, each a part of a
// board's list, all parts carrying the same generation; a new generation replaces the board's
// list). Pure and bounded: at most PROGRAMS_PER_BOARD_MAX names per board.
export const PROGRAMS_PER_BOARD_MAX = 256;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const HASH_RE = /^[0-9a-f]{16}$/;

export class ProgramBook {
  private readonly boards: Array<{ gen: number; programs: Map<string, string> }>;

  constructor(n: number) {
    this.boards = Array.from({ length: n }, () => ({ gen: -1, programs: new Map() }));
  }

  /** A part of board `b`'s list; false when the body is malformed (dropped, nothing changes). */
  apply(b: number, body: Record<string, unknown>): boolean {
    const entry = this.boards[b];
    const { gen, list } = body;
    if (!entry || typeof gen !== 'number' || !Number.isInteger(gen) || gen < 0 || !Array.isArray(list)) return false;
    const parsed: Array<[string, string]> = [];
    for (const e of list) {
      if (!Array.isArray(e) || e.length !== 2 || typeof e[0] !== 'string' || typeof e[1] !== 'string' || !NAME_RE.test(e[0]) || !HASH_RE.test(e[1])) return false;
      parsed.push([e[0], e[1]]);
    }
    if (gen !== entry.gen) {
      entry.gen = gen;
      entry.programs.clear();
    }
    for (const [name, hash] of parsed) if (entry.programs.size < PROGRAMS_PER_BOARD_MAX || entry.programs.has(name)) entry.programs.set(name, hash);
    return true;
  }

  /** The boards that have `name`; undefined when no board has announced it. */
  boardsWith(name: string): number[] | undefined {
    const out = this.boards.flatMap((e, i) => (e.programs.has(name) ? [i] : []));
    return out.length > 0 ? out : undefined;
  }

  /** Board b's programs and their hashes. */
  of(b: number): ReadonlyMap<string, string> {
    return this.boards[b]?.programs ?? new Map();
  }
}
