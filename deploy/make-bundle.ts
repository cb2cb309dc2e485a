// npm run pack: dist/board (deploy/pack.sh) made into one signed release bundle,
// dist/ews-<version>.ewsb (shared/bundle.ts). The key: --key FILE or $EWS_SIGNING_KEY (a PEM from
// `ews gen-signing-key`). --version V raises the version without touching the code (a second
// bundle of the same code, as the upgrade test makes); --arch A marks it for one CPU (default:
// any, the package carries every Linux prebuild).
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { VERSION } from '../node/version.ts';
import { makeBundle } from '../shared/bundle.ts';
import { PROTOCOL_VERSION } from '../shared/protocol.ts';

const { values } = parseArgs({ options: { key: { type: 'string' }, version: { type: 'string' }, arch: { type: 'string' }, from: { type: 'string' }, out: { type: 'string' } } });
const keyFile = values.key ?? process.env.EWS_SIGNING_KEY;
if (!keyFile) {
  process.stderr.write('a signing key is required: --key FILE or EWS_SIGNING_KEY (make one with: ews gen-signing-key)\n');
  process.exit(2);
}
const from = values.from ?? 'dist/board';
const files: Array<{ path: string; mode: number; data: Buffer }> = [];
const walk = (dir: string): void => {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) walk(path);
    else if (st.isFile()) files.push({ path: relative(from, path), mode: st.mode & 0o777, data: readFileSync(path) });
  }
};
walk(from);
const version = values.version ?? VERSION;
// What the release reports as its version (node/version.ts reads it beside ews.js).
const i = files.findIndex((f) => f.path === 'release.json');
if (i >= 0) files.splice(i, 1);
files.push({ path: 'release.json', mode: 0o644, data: Buffer.from(`${JSON.stringify({ version })}\n`) });
const bundle = makeBundle({ version, arch: values.arch ?? 'any', protocol: PROTOCOL_VERSION }, files, readFileSync(keyFile, 'utf8'));
const out = values.out ?? `dist/ews-${version}.ewsb`;
writeFileSync(out, bundle);
process.stdout.write(`${out}: ${files.length} files, ${(bundle.length / 1e6).toFixed(1)} MB, version ${version}, signed\n`);
