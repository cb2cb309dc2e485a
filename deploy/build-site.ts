// `npm run build`: the content levels from node/ui into dist/site/<level>/.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { bundleSite } from './site-bundle.ts';

const out = resolve(import.meta.dirname, '../dist/site');
rmSync(out, { recursive: true, force: true });
const levels = await bundleSite();
for (const [i, files] of levels.entries()) {
  const dir = join(out, String(i + 1));
  mkdirSync(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
}
process.stdout.write(`dist/site: content levels 1-${levels.length} written\n`);
