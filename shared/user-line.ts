// Who is asking, as the master's guard established it, on its way to the board that runs the
// request (the `x-ews-user` header of a dispatch frame, never taken from a client): one line,
// `name role via`. Made and read here only. Pure.
import { ROLES, type Role } from './routes.ts';

export interface UserLine {
  readonly name: string;
  readonly role: Role;
  readonly via: 'cookie' | 'bearer';
}

export function userLine(u: UserLine): string {
  return `${u.name} ${u.role} ${u.via}`;
}

/** The line read back; undefined for anything else. */
export function parseUserLine(line: string | undefined): UserLine | undefined {
  const m = line === undefined ? null : /^(\S+) (\S+) (cookie|bearer)$/.exec(line);
  if (!m || !ROLES.includes(m[2] as Role)) return undefined;
  return { name: m[1]!, role: m[2] as Role, via: m[3] as 'cookie' | 'bearer' };
}
