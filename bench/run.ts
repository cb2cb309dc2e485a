// npm run bench: every benchmark, results into bench/results/.

import { runDeviceBench } from './devices.ts';
import { runDispatchBench, writeResults } from './dispatch.ts';

const only = process.argv[2];

if (!only || only === 'dispatch') {
  const d = (await runDispatchBench()) as {
    what: string;
    results: Record<string, { rps: number; p50Ms: number; p99Ms: number; errors: number }>;
    ratios: Record<string, number>;
    memory: { boardIdleRssMb: number[]; boardPeakRssUnderLoadMb: number };
    saturation: Record<string, unknown>;
  };
  const rows = Object.entries(d.results)
    .map(([k, r]) => `| ${k} | ${r.rps} | ${r.p50Ms} | ${r.p99Ms} | ${r.errors} |`)
    .join('\n');
  const md = `# Dispatch overhead (${new Date().toISOString()})

${d.what}. raw = a plain Node HTTP server giving the same answer; single = one board alone (intake,
classification, queue, local execution); cluster = 3 boards, the master forwards every request (masterWork forward).

| target | req/s | p50 ms | p99 ms | errors |
|---|---|---|---|---|
${rows}

Ratios: ${Object.entries(d.ratios)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}.

Memory: board RSS idle ${d.memory.boardIdleRssMb.join(' / ')} MB; peak under load ${d.memory.boardPeakRssUnderLoadMb} MB.

Saturation: ${JSON.stringify(d.saturation)}
`;
  writeResults('dispatch', d, md);
  process.stdout.write(md);
}

if (!only || only === 'devices') {
  const d = (await runDeviceBench()) as { what: string; cluster: Record<string, { p50Ms: number; p99Ms: number; errors: number }>; perPort: Record<string, unknown> };
  const rows = Object.entries(d.cluster)
    .map(([k, r]) => `| ${k} | ${r.p50Ms} | ${r.p99Ms} | ${r.errors} |`)
    .join('\n');
  const md = `# Devices (${new Date().toISOString()})

${d.what}.

| control round trip | p50 ms | p99 ms | errors |
|---|---|---|---|
${rows}

Per port: ${JSON.stringify(d.perPort)}
`;
  writeResults('devices', d, md);
  process.stdout.write(md);
}
