// The content levels of the web UI (papers 000/002), built from one source: node/ui/page.ts's
// page and node/ui/src's modules, bundled by esbuild once per level with EWS_LEVEL defined, so
// dead-code elimination drops what a level does not have (the chart below 3, trends below 2).
// The error codes the page may retry on another board come from shared/errors.ts's table.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { indexHtml } from '../node/ui/page.ts';
import { CONTENT_LEVELS } from '../shared/content-levels.ts';
import { ERRORS, type ErrorCode } from '../shared/errors.ts';

const SRC = resolve(import.meta.dirname, '../node/ui/src');

/** Codes after which another board of the cluster may answer the same request. */
export const RETRY_CODES = (Object.keys(ERRORS) as ErrorCode[]).filter((c) => 'retry' in ERRORS[c] && ERRORS[c].retry === 'board');

/** One level's files (name → content). */
export async function bundleLevel(level: number): Promise<Record<string, string>> {
  const out = await build({
    entryPoints: [join(SRC, 'main.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    target: 'es2020',
    minifySyntax: true,
    minifyWhitespace: true,
    legalComments: 'none',
    define: { EWS_LEVEL: String(level), EWS_RETRY_CODES: JSON.stringify(RETRY_CODES) },
    logLevel: 'silent',
  });
  const files: Record<string, string> = { 'index.html': indexHtml(level), 'app.js': out.outputFiles[0]!.text };
  if (level >= 2) files['style.css'] = readFileSync(join(SRC, 'style.css'), 'utf8');
  if (level >= 3) files['logo.svg'] = readFileSync(join(SRC, 'logo.svg'), 'utf8');
  return files;
}

export async function bundleSite(): Promise<Array<Record<string, string>>> {
  return Promise.all(Array.from({ length: CONTENT_LEVELS }, (_, i) => bundleLevel(i + 1)));
}
