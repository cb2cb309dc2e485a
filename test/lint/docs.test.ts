// Documentation checks, run by `npm run lint` (not behaviour: the tests in test/unit and beyond are).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { ERRORS } from '../../shared/errors.ts';

const ROOT = resolve(import.meta.dirname, '../..');

test('every error code is documented in the README', () => {
  const readme = readFileSync(resolve(ROOT, 'README.md'), 'utf8');
  for (const code of Object.keys(ERRORS)) assert.ok(readme.includes(`\`${code}\``), `README lacks ${code}`);
});

test('the README and docs/ link nothing outside this repository', () => {
  for (const f of ['README.md', 'docs/design.md']) assert.doesNotMatch(readFileSync(resolve(ROOT, f), 'utf8'), /\.\.\/shared\/|SPEC §/, f);
});
