// `ews gen-cert`: one certificate for the whole cluster, for users who have none. It names every
// board's address, the VIP and the names in cluster.hosts, and is its own CA (boards verify each
// other against it; browsers are told to trust it once). Made by the system's openssl: an EC
// P-256 key, cheap to handshake on a small board.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../shared/config.ts';

export interface GenCertResult {
  certFile: string;
  keyFile: string;
  names: string[];
}

/** The subjectAltName entries the cluster needs. */
export function clusterNames(cfg: Config): string[] {
  const names = new Set<string>();
  for (const b of cfg.boards) names.add(b.address);
  if (cfg.cluster.vip) names.add(cfg.cluster.vip.address);
  for (const h of cfg.cluster.hosts) names.add(h);
  if (cfg.boards.some((b) => b.address.startsWith('127.'))) names.add('localhost');
  return [...names];
}

export function genCert(cfg: Config, outDir: string, days: number): GenCertResult {
  const names = clusterNames(cfg);
  const certFile = join(outDir, 'cluster-cert.pem'),
    keyFile = join(outDir, 'cluster-key.pem');
  if (existsSync(certFile) || existsSync(keyFile)) throw new Error(`${certFile} or ${keyFile} exists already: remove them first or choose another --out`);
  mkdirSync(outDir, { recursive: true });
  const san = names.map((n) => (isIP(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  const r = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-sha256',
      '-days',
      String(days),
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-subj',
      `/CN=${cfg.cluster.name} cluster`,
      '-addext',
      `subjectAltName=${san}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE,pathlen:0',
      '-addext',
      'keyUsage=critical,digitalSignature,keyCertSign',
      '-addext',
      'extendedKeyUsage=serverAuth',
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  if (r.error) throw new Error(`cannot run openssl: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr.trim()}`);
  chmodSync(keyFile, 0o600);
  return { certFile, keyFile, names };
}
