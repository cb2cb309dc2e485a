// The `upgrade` section: how a board takes a new release (node/upgrade/). Pure.
import { parsePublicKey } from './bundle.ts';
import type { Raw, Reader } from './config-reader.ts';

export interface UpgradeConfig {
  /** The Ed25519 key release bundles must be signed with (base64 of its raw 32 bytes); none: the cluster takes no upgrade. */
  readonly publicKey: string | undefined;
  /** How long a board on a new release has to come back healthy (rejoined, runstate 1, the new version, its self-test) before it goes back. */
  readonly healthS: number;
  /** Where the releases live (`releases/`, `current`, `previous`); none: the directory above `current` the board runs from. */
  readonly prefix: string | undefined;
}

export function readUpgrade(r: Reader, raw: Raw): UpgradeConfig {
  const u = r.obj(raw, 'upgrade', '', ['publicKey', 'healthS', 'prefix'], false) ?? {};
  const publicKey = u.publicKey === undefined ? undefined : r.str(u, 'publicKey', 'upgrade');
  if (publicKey !== undefined) {
    const k = parsePublicKey(publicKey);
    if (typeof k === 'string') r.bad('upgrade.publicKey', k);
  }
  const prefix = u.prefix === undefined ? undefined : r.str(u, 'prefix', 'upgrade');
  if (prefix !== undefined && !prefix.startsWith('/')) r.bad('upgrade.prefix', 'must be an absolute path');
  return { publicKey, healthS: r.int(u, 'healthS', 'upgrade', 60, 5, 3600), prefix };
}
