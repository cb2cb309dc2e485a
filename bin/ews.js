#!/usr/bin/env node
// Runs the compiled bundle when it exists (boards), else the TypeScript sources through tsx (development).
import { existsSync } from 'node:fs';

const dist = new URL('../dist/ews.js', import.meta.url);
if (existsSync(dist)) {
  await import(dist.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(new URL('../node/cli.ts', import.meta.url).href);
}
