// The web UI's content levels (papers 000/002) as a board serves them: `npm run build` writes
// them to dist/site/<level>/ (deploy/site-bundle.ts); a board holds them in memory and serves
// only names in that map, so no request path can reach the filesystem.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';

import { CONTENT_LEVELS } from '../../shared/content-levels.ts';

export { CONTENT_LEVELS };
export const SITE_BYTES_MAX = 4 * 1024 * 1024;

export interface SiteFile {
  type: string;
  body: Buffer;
  etag: string;
}
export type LevelFiles = ReadonlyMap<string, SiteFile>;

const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

function toLevelFiles(files: Record<string, string | Buffer>): LevelFiles {
  const m = new Map<string, SiteFile>();
  for (const [name, content] of Object.entries(files)) {
    const body = Buffer.isBuffer(content) ? content : Buffer.from(content);
    m.set(name, { type: TYPES[extname(name)] ?? 'application/octet-stream', body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"` });
  }
  return m;
}

/** The levels as `npm run build` wrote them: next to the bundle (dist/site) or, in a checkout, in dist/site. Index = level - 1. */
export function loadSite(): LevelFiles[] {
  const here = import.meta.dirname;
  const built = [join(here, 'site'), join(here, '../../dist/site')].find((d) => existsSync(join(d, '1', 'index.html')));
  if (!built) throw new Error('the web UI is not built: run `npm run build`');
  let total = 0;
  return Array.from({ length: CONTENT_LEVELS }, (_, i) => {
    const dir = join(built, String(i + 1));
    const files: Record<string, Buffer> = {};
    for (const name of readdirSync(dir)) {
      const b = readFileSync(join(dir, name));
      total += b.length;
      if (total > SITE_BYTES_MAX) throw new Error(`site larger than ${SITE_BYTES_MAX} bytes`);
      files[name] = b;
    }
    return toLevelFiles(files);
  });
}
