// Reading a password from the terminal without echo (asked twice when it is a new one), or one
// line from a pipe.
import { once } from 'node:events';

const LINE_MAX = 1024;

/** One line typed on the terminal, not echoed. Ctrl-C or Ctrl-D ends with undefined. */
async function hiddenLine(prompt: string): Promise<string | undefined> {
  const input = process.stdin;
  // Echo off before the prompt shows: whatever is typed once it is visible is never echoed.
  input.setRawMode(true);
  process.stderr.write(prompt);
  input.resume();
  let line = '';
  try {
    for (;;) {
      const [chunk] = (await once(input, 'data')) as [Buffer];
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return line;
        if (ch === '\u0003' || ch === '\u0004') return undefined;
        if (ch === '\u007f' || ch === '\b') line = line.slice(0, -1);
        else if (line.length < LINE_MAX && ch >= ' ') line += ch;
      }
    }
  } finally {
    input.setRawMode(false);
    input.pause();
    process.stderr.write('\n');
  }
}

/** The first line of standard input (a pipe): what follows it is not part of the password. */
async function firstLine(): Promise<string> {
  let text = '';
  for await (const c of process.stdin) {
    text += (c as Buffer).toString('utf8');
    const nl = text.search(/\r?\n/);
    if (nl >= 0) return text.slice(0, nl);
    if (text.length > LINE_MAX) break;
  }
  return text.slice(0, LINE_MAX);
}

/** A password: on a terminal typed without echo (twice if `confirm`), else the first line of stdin. */
export async function readPassword(confirm: boolean): Promise<string | Error> {
  if (!process.stdin.isTTY) return firstLine();
  const first = await hiddenLine('password: ');
  if (first === undefined) return new Error('cancelled');
  if (!confirm) return first;
  const again = await hiddenLine('again: ');
  if (again === undefined) return new Error('cancelled');
  return again === first ? first : new Error('the two passwords differ');
}
