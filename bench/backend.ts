// A plain backend for the HAProxy side of the comparison: the same service model as an ews board
// (each request takes S ms), without ews's abort: like a CGI, it finishes what it started. It counts
// work done for clients that had gone. GET /stats answers its counters. /cgi-bin/burn?ms=N burns
// N ms of CPU instead of waiting. Its answers are a board's: the same body, content type and
// cache header; with --front (it is the entry itself, no HAProxy in front) also the security
// headers every answer of a board carries (behind HAProxy, HAProxy adds them).
import http from 'node:http';
import { securityHeaders } from '../shared/security-headers.ts';

const port = Number(process.argv[2]);
const front = process.argv.includes('--front');
/** What every answer carries besides its content length. */
const HEADERS: Record<string, string> = {
  ...(front ? Object.fromEntries(securityHeaders(`http://127.0.0.1:${port} http://localhost:${port}`, false)) : {}),
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
};
let served = 0,
  wastedMs = 0;
http
  .createServer((req, res) => {
    if (req.url === '/stats') return void res.end(JSON.stringify({ served, wastedMs }));
    const u = new URL(req.url ?? '/', 'http://x');
    const ms = Number(u.searchParams.get('ms') ?? 0);
    if (u.pathname === '/cgi-bin/burn') {
      // The CPU-bound CGI, as an ews board's benchmark handler burns it.
      const cpu = (): number => {
        const c = process.cpuUsage();
        return c.user + c.system;
      };
      const until = cpu() + ms * 1000;
      let x = 0;
      while (cpu() < until) for (let i = 0; i < 1000; i++) x += Math.sqrt(i);
      served++;
      const body = JSON.stringify({ ok: true, board: 'plain', burnedMs: ms, x: x > 0 });
      res.writeHead(200, { ...HEADERS, 'content-length': Buffer.byteLength(body) });
      return void res.end(body);
    }
    const answer = (): void => {
      const body = JSON.stringify({ ok: true, board: 'plain', ms, bytes: 0 });
      res.writeHead(200, { ...HEADERS, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    // ms=0 answers at once, as an ews board does: no timer for a wait of nothing.
    if (ms === 0) {
      served++;
      return answer();
    }
    let gone = false;
    res.on('close', () => {
      if (!res.writableFinished) gone = true;
    });
    setTimeout(() => {
      served++;
      if (gone || res.destroyed) {
        wastedMs += ms;
        return;
      }
      answer();
    }, ms);
  })
  .listen(port, '127.0.0.1');
