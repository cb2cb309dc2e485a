// bench/results as a reader finds it: every file a page names is there, and every generated page
// has its data beside it (the one hand-run notebook says so at its top). Run by `npm run lint`.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const DIR = resolve(import.meta.dirname, '../../bench/results');
const pages = readdirSync(DIR).filter((f) => f.endsWith('.md'));
const NOTEBOOKS = new Set(['dispatch-path.md']);

test('every file a results page names exists', () => {
  const missing: string[] = [];
  for (const page of pages) {
    const text = readFileSync(join(DIR, page), 'utf8');
    for (const m of text.matchAll(/(?:`|\]\(|\()((?:ui\/)?[a-z0-9][\w.-]*\.(?:json|md|svg|png))(?:`|\))/g)) {
      if (!existsSync(join(DIR, m[1]!))) missing.push(`${page} names ${m[1]}`);
    }
  }
  assert.deepEqual(missing, []);
});

test('every generated page has its JSON; a page without one says it is a notebook', () => {
  for (const page of pages) {
    if (page === 'README.md') continue;
    if (NOTEBOOKS.has(page)) {
      assert.match(readFileSync(join(DIR, page), 'utf8'), /A lab notebook, not a generated page/, page);
      continue;
    }
    assert.ok(existsSync(join(DIR, page.replace(/\.md$/, '.json'))), `${page} has no JSON beside it`);
  }
});
