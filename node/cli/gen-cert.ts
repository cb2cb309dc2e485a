// `ews gen-cert`: certificates for a cluster whose users have none. A CA of the cluster's own,
// name-constrained to the cluster's addresses and names (so even its key cannot make a
// certificate a browser would take for another site), signs one leaf for the boards (CA:FALSE,
// server and client authentication: boards verify each other, and the dispatch link takes only a
// connection that shows it). Browsers trust the CA once; the CA's key stays off the boards, so a
// board's stolen SD card gives a leaf key that can sign nothing. Made by the system's openssl:
// EC P-256 keys, cheap to handshake on a small board.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../../shared/config.ts';

export interface GenCertResult {
  /** For the boards: their certificate and key, and the CA they verify each other against. */
  certFile: string;
  keyFile: string;
  caFile: string;
  /** Not for the boards: kept by whoever may add a board (a new leaf) later. */
  caKeyFile: string;
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

function openssl(args: string[]): void {
  const r = spawnSync('openssl', args, { encoding: 'utf8', timeout: 30_000 });
  if (r.error) throw new Error(`cannot run openssl: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr.trim()}`);
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-sha256'];

export function genCert(cfg: Config, outDir: string, days: number): GenCertResult {
  const names = clusterNames(cfg);
  const f = (n: string) => join(outDir, n);
  const out: GenCertResult = { certFile: f('cluster-cert.pem'), keyFile: f('cluster-key.pem'), caFile: f('cluster-ca.pem'), caKeyFile: f('cluster-ca-key.pem'), names };
  for (const file of [out.certFile, out.keyFile, out.caFile, out.caKeyFile]) if (existsSync(file)) throw new Error(`${file} exists already: remove the old files first or choose another --out`);
  mkdirSync(outDir, { recursive: true });
  const san = names.map((n) => (isIP(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  const permitted = names.map((n) => (isIP(n) ? `permitted;IP:${n}/255.255.255.255` : `permitted;DNS:${n}`)).join(',');
  openssl([
    'req',
    '-x509',
    ...EC_KEY,
    '-days',
    String(days),
    '-keyout',
    out.caKeyFile,
    '-out',
    out.caFile,
    '-subj',
    `/CN=${cfg.cluster.name} cluster CA`,
    '-addext',
    'basicConstraints=critical,CA:TRUE,pathlen:0',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-addext',
    `nameConstraints=critical,${permitted}`,
  ]);
  chmodSync(out.caKeyFile, 0o600);
  openssl([
    'req',
    '-x509',
    '-CA',
    out.caFile,
    '-CAkey',
    out.caKeyFile,
    ...EC_KEY,
    '-days',
    String(days),
    '-keyout',
    out.keyFile,
    '-out',
    out.certFile,
    '-subj',
    `/CN=${cfg.cluster.name} boards`,
    '-addext',
    `subjectAltName=${san}`,
    '-addext',
    'basicConstraints=critical,CA:FALSE',
    '-addext',
    'keyUsage=critical,digitalSignature',
    '-addext',
    'extendedKeyUsage=serverAuth,clientAuth',
  ]);
  chmodSync(out.keyFile, 0o600);
  return out;
}
