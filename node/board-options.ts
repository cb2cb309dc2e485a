// What a board is made from: its config, its identity, and the parts a host (ews start, the demo,
// a test) may bring in place of the system's.
import type { Clock } from '../shared/clock.ts';
import type { Config } from '../shared/config.ts';
import type { Transport } from './cluster-plane/transport.ts';
import type { PortFactory } from './devices/serial-line.ts';
import type { Logger } from './log.ts';
import type { TlsMaterial } from './tls-material.ts';

export interface BoardOptions {
  cfg: Config;
  /** The config file as JSON (backups carry it, secrets left out). */
  raw?: unknown;
  boardId: string;
  clock?: Clock;
  log?: Logger;
  /** How device ports are opened (real serial ports unless the demo brings simulators). */
  openPort?: PortFactory;
  /** The network (the system's unless the demo or a test brings one with a cable to pull). */
  transport?: Pick<Transport, 'accepting'>;
  /** A module (URL) the cluster plane's thread loads for its UDP transport (`planeTransport`); the system's if none. */
  planeTransport?: string;
  /** HTTPS on this board's port and to other boards (the `tls` files, read at start). */
  tls?: TlsMaterial;
  /** Where this board's state survives restarts (resolved at start: node/state/state-dir.ts); none: memory only. */
  stateDir?: string;
  /** Where a config pushed to it is written (its state directory's ID.config.json, else its config file), and how its host starts it again from there. */
  pushedConfigFile?: string;
  restart?: () => void;
  /** Stop and exit so the supervisor starts the release just installed (node/upgrade/); none: the board takes no release. */
  exit?: () => void;
}
