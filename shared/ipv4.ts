// IPv4 addresses as text and as 32-bit numbers, without the network stack.
const OCTETS = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

export function isIPv4(a: string): boolean {
  return OCTETS.test(a);
}

export function ipv4ToInt(a: string): number {
  return a.split('.').reduce((n, o) => ((n << 8) | Number(o)) >>> 0, 0);
}
