// The dependency direction, checked on every import of the runtime: shared/ (pure cores and wire
// formats) ← master/ (the master role's decisions) ← node/ (the board runtime, all I/O). Nothing
// in the runtime imports dev/, deploy/, bench/, test/ or hw-test/. No file imports itself through
// others (type-only imports count: a circle of types is a circle of concepts). node/ keeps its
// composition root and a few files at its top; the rest live in rooms. Run by `npm run lint`.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../..');
const RUNTIME = ['shared', 'master', 'node'] as const;
/** What each folder may import from (besides itself, node: builtins and packages). */
const ALLOWED: Record<(typeof RUNTIME)[number], readonly string[]> = { shared: [], master: ['shared'], node: ['shared', 'master'] };
/** Files that may be imported but not import I/O: the pure folders must not touch these modules. */
const IO_MODULES = /^(node:(fs|net|dgram|http|https|child_process|worker_threads|tls)|pino|serialport|@serialport\/.*|mqtt)$/;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return files(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

const IMPORT = /^\s*(import|export)\s(type\s)?[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'|import\('([^']+)'\)/gm;

/** Every module a file imports; `typeOnly`: erased at build time (no code is loaded). */
function imports(file: string): Array<{ spec: string; typeOnly: boolean }> {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => ({ spec: m[3] ?? m[4] ?? m[5]!, typeOnly: m[2] !== undefined }));
}

test('layering: shared ← master ← node; the runtime imports no deploy, bench or test code', () => {
  const problems: string[] = [];
  for (const top of RUNTIME) {
    for (const file of files(join(ROOT, top))) {
      const rel = relative(ROOT, file);
      for (const { spec, typeOnly } of imports(file)) {
        if (spec.startsWith('.')) {
          const target = relative(ROOT, resolve(dirname(file), spec));
          const folder = target.split('/')[0]!;
          if (folder !== top && !ALLOWED[top].includes(folder)) problems.push(`${rel} imports ${target} (${top}/ may use ${[top, ...ALLOWED[top]].join(', ')})`);
        } else if (top !== 'node' && !typeOnly && IO_MODULES.test(spec)) {
          problems.push(`${rel} imports ${spec}: ${top}/ is pure (no I/O)`);
        }
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('limits on files: nothing in the runtime over 350 lines, the composition root under 200', () => {
  const lines = (f: string) => readFileSync(f, 'utf8').split('\n').length;
  const long = RUNTIME.flatMap((top) => files(join(ROOT, top)))
    .map((f) => [relative(ROOT, f), lines(f)] as const)
    .filter(([, n]) => n > 350);
  assert.deepEqual(long, []);
  assert.ok(lines(join(ROOT, 'node/board.ts')) <= 200, 'node/board.ts is wiring only');
});

/** Every circle among the runtime's files (Tarjan's strongly connected components), type-only imports included. */
function circles(): string[][] {
  const graph = new Map<string, string[]>();
  for (const top of RUNTIME) {
    for (const file of files(join(ROOT, top))) {
      const deps = imports(file)
        .filter(({ spec }) => spec.startsWith('.'))
        .map(({ spec }) => relative(ROOT, resolve(dirname(file), spec)));
      graph.set(relative(ROOT, file), deps);
    }
  }
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || graph.get(v)!.includes(v)) found.push(scc.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

test('no import circles in shared/, master/ or node/, type-only imports included', () => {
  assert.deepEqual(circles(), []);
});

test('node/ has rooms: at most 8 source files at its top', () => {
  const top = readdirSync(join(ROOT, 'node')).filter((n) => n.endsWith('.ts'));
  assert.ok(top.length <= 8, `node/ has ${top.length} files at its top: ${top.join(', ')}`);
});

test('the web UI sources run in the browser: they import only each other, and none is over 300 lines', () => {
  const dir = join(ROOT, 'node/ui/src');
  const problems: string[] = [];
  for (const file of files(dir)) {
    const rel = relative(ROOT, file);
    for (const { spec } of imports(file)) {
      const inside = spec.startsWith('./') && !relative(dir, resolve(dirname(file), spec)).startsWith('..');
      if (!inside) problems.push(`${rel} imports ${spec}`);
    }
    const n = readFileSync(file, 'utf8').split('\n').length;
    if (n > 300) problems.push(`${rel} has ${n} lines`);
  }
  assert.deepEqual(problems, []);
});

test('the cluster plane runs in a thread of its own: its room imports only shared/, the logger and itself', () => {
  const room = join(ROOT, 'node/cluster-plane');
  const problems: string[] = [];
  for (const file of files(room)) {
    for (const { spec } of imports(file)) {
      if (!spec.startsWith('.')) continue;
      const target = relative(ROOT, resolve(dirname(file), spec));
      if (!(target.startsWith('shared/') || target.startsWith('node/cluster-plane/') || target === 'node/log.ts')) problems.push(`${relative(ROOT, file)} imports ${target}`);
    }
  }
  assert.deepEqual(problems, []);
});
