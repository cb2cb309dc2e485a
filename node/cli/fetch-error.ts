// What failed when the CLI could not reach a board, in words an operator can act on: fetch says
// only "fetch failed" for a refused connection, an unknown host and an untrusted certificate alike.

const CERT_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

function causeCode(e: unknown): string | undefined {
  for (let c: unknown = e, depth = 0; c && depth < 4; c = (c as { cause?: unknown }).cause, depth++) {
    const code = (c as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'ERR_INVALID_STATE') return code;
  }
  return undefined;
}

export function fetchError(url: string, e: unknown): string {
  const name = (e as { name?: string }).name;
  if (name === 'TimeoutError' || name === 'AbortError') return `${url}: no answer in time (a board on the way may be down, or the address is not a board's)`;
  const code = causeCode(e);
  if (code === 'ECONNREFUSED') return `${url}: connection refused: no board listens there (is \`ews start\` running, and is the port its httpPort?)`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `${url}: no such host`;
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `${url}: no route to the host (${code})`;
  if (code === 'ECONNRESET') return `${url}: the connection was reset (an http:// URL for an https board, or the board closed it)`;
  if (code && CERT_CODES.has(code))
    return `${url}: the board's certificate is not trusted (${code}): give the cluster's CA to this command, e.g. NODE_EXTRA_CA_CERTS=cluster-ca.pem ews …, the file ews gen-cert wrote`;
  return `${url}: ${(e as Error).message}${code ? ` (${code})` : ''}`;
}
