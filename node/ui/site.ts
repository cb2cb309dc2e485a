// Content trees (papers 000/002): the site at M quality levels, generated from one source.
// Level 3 full (styles, images, the chart), 2 light (styles, no chart or images), 1 text only.
// `npm run build` writes them to dist/site/<level>/; a board holds them in memory and serves
// only names in that map, so no request path can reach the filesystem.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { extname, join } from 'node:path';

import { TREES } from '../../shared/content-levels.ts';

export { TREES };
export const SITE_BYTES_MAX = 4 * 1024 * 1024;

export interface SiteFile {
  type: string;
  body: Buffer;
  etag: string;
}
export type Tree = ReadonlyMap<string, SiteFile>;

const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };
/** Which source files a level has. */
const FILES_AT: Record<string, number> = { 'index.html': 1, 'app.js': 1, 'style.css': 2, 'logo.svg': 3 };

function strip(text: string, level: number, open: RegExp, close: string): string {
  // Blocks marked for higher levels go; markers go everywhere.
  let out = text;
  for (;;) {
    const m = open.exec(out);
    if (!m) return out;
    const end = out.indexOf(close, m.index);
    if (end < 0) throw new Error(`unclosed level marker at ${m.index}`);
    const inner = out.slice(m.index + m[0].length, end);
    out = out.slice(0, m.index) + (level >= Number(m[1]) ? inner : '') + out.slice(end + close.length);
  }
}

/** One level of the site from the sources (name -> text). Pure. */
export function buildTree(level: number, src: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, minLevel] of Object.entries(FILES_AT)) {
    if (level < minLevel) continue;
    let text = src[name];
    if (text === undefined) throw new Error(`site source ${name} missing`);
    if (name.endsWith('.html')) text = strip(text, level, /<!--level>=(\d)-->/, '<!--/level-->').replaceAll('{{level}}', String(level));
    if (name.endsWith('.js')) text = strip(text, level, /\/\*level>=(\d)\*\//, '/*/level*/');
    out[name] = text;
  }
  return out;
}

function toTree(files: Record<string, string | Buffer>): Tree {
  const m = new Map<string, SiteFile>();
  for (const [name, content] of Object.entries(files)) {
    const body = Buffer.isBuffer(content) ? content : Buffer.from(content);
    m.set(name, { type: TYPES[extname(name)] ?? 'application/octet-stream', body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"` });
  }
  return m;
}

export function readSources(dir: string): Record<string, string> {
  const src: Record<string, string> = {};
  for (const name of Object.keys(FILES_AT)) src[name] = readFileSync(join(dir, name), 'utf8');
  return src;
}

/** The trees, from the sources (a checkout) or from dist/site (the bundle). Index = level - 1. */
export function loadSite(): Tree[] {
  const here = import.meta.dirname;
  const srcDir = join(here, 'src');
  if (existsSync(join(srcDir, 'index.html'))) {
    const src = readSources(srcDir);
    return Array.from({ length: TREES }, (_, i) => toTree(buildTree(i + 1, src)));
  }
  const built = join(here, 'site');
  let total = 0;
  return Array.from({ length: TREES }, (_, i) => {
    const dir = join(built, String(i + 1));
    const files: Record<string, Buffer> = {};
    if (existsSync(dir)) {
      for (const name of readdirSync(dir)) {
        const b = readFileSync(join(dir, name));
        total += b.length;
        if (total > SITE_BYTES_MAX) throw new Error(`site larger than ${SITE_BYTES_MAX} bytes`);
        files[name] = b;
      }
    }
    return toTree(files);
  });
}

/** Build time: write every level to outDir/<level>/. */
export function writeSite(srcDir: string, outDir: string): void {
  const src = readSources(srcDir);
  for (let level = 1; level <= TREES; level++) {
    const dir = join(outDir, String(level));
    mkdirSync(dir, { recursive: true });
    for (const [name, text] of Object.entries(buildTree(level, src))) writeFileSync(join(dir, name), text);
  }
}
