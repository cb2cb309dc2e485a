// An answer's headers as the HTTP lines a client reads (`name: value\r\n`…), without the headers
// that frame the message (the hop that writes it sets those). A board makes them once for an
// answer it sends over the dispatch link; the master copies them to its client as they are
// (node/http/lean-exchange.ts), or takes them apart for Node's HTTP server. Pure.

// Set by whoever writes the message to its client: never carried in the lines.
const FRAMING = new Set(['content-length', 'connection', 'keep-alive', 'transfer-encoding', 'date']);
const NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
// A value with CR, LF or NUL would split the answer; one outside latin1 would be mangled.
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Lines for [name, value, …] (names lower-case); framing headers and unsafe names or values are left out. */
export function headerLines(pairs: readonly string[]): Buffer {
  let text = '';
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const k = pairs[i]!,
      v = pairs[i + 1]!;
    if (!FRAMING.has(k) && NAME.test(k) && VALUE.test(v)) text += `${k}: ${v}\r\n`;
  }
  return Buffer.from(text, 'latin1');
}

/** [name, value, …] back from lines made by headerLines. */
export function headerPairs(lines: Buffer): string[] {
  const out: string[] = [];
  if (lines.length === 0) return out;
  for (const line of lines.toString('latin1', 0, lines.length - 2).split('\r\n')) {
    const c = line.indexOf(': ');
    if (c > 0) out.push(line.slice(0, c), line.slice(c + 2));
  }
  return out;
}
