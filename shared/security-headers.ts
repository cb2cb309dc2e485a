// The headers every answer of the cluster carries, made in one place: the router sends them, and
// the benchmarks' plain baselines send the same bytes (a baseline answers what a board answers).
// The page may load only its own code, call only the cluster's own origins (the UI fails over
// between boards), and be framed by no one.

/** The header pairs; `connectSrc` lists the other boards' origins, `tls` adds HSTS. */
export function securityHeaders(connectSrc: string, tls: boolean): Array<[string, string]> {
  return [
    [
      'content-security-policy',
      `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ${connectSrc}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'`,
    ],
    ['x-content-type-options', 'nosniff'],
    ['x-frame-options', 'DENY'],
    ['referrer-policy', 'same-origin'],
    ['cross-origin-opener-policy', 'same-origin'],
    // With TLS a browser that has seen the cluster once never tries it in clear text again.
    ...(tls ? [['strict-transport-security', 'max-age=31536000'] as [string, string]] : []),
  ];
}
