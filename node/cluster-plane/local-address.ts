// Whether this machine owns an address: a board started with another machine's address would
// answer for it, and with a VIP claim the cluster's address on this machine's interface.
import { networkInterfaces } from 'node:os';

/** Loopback (all of 127.0.0.0/8 on Linux) or an address on one of this machine's interfaces. */
export function ownsAddress(address: string, interfaces = networkInterfaces()): boolean {
  if (address.startsWith('127.')) return true;
  for (const list of Object.values(interfaces)) for (const a of list ?? []) if (a.address === address) return true;
  return false;
}

/** This machine's IPv4 addresses, for an error message. */
export function localAddresses(interfaces = networkInterfaces()): string[] {
  return Object.values(interfaces)
    .flatMap((l) => l ?? [])
    .filter((a) => a.family === 'IPv4')
    .map((a) => a.address);
}
