// A plain backend for the HAProxy side of the comparison: the same service model as an ews board
// (each request takes S ms), without ews's abort: like a CGI, it finishes what it started. It counts
// work done for clients that had gone. GET /stats answers its counters.
import http from 'node:http';

const port = Number(process.argv[2]);
let served = 0, wastedMs = 0;
http.createServer((req, res) => {
  if (req.url === '/stats') return void res.end(JSON.stringify({ served, wastedMs }));
  const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? 0);
  let gone = false;
  res.on('close', () => { if (!res.writableFinished) gone = true; });
  setTimeout(() => {
    served++;
    if (gone || res.destroyed) {
      wastedMs += ms;
      return;
    }
    const body = JSON.stringify({ ok: true, ms });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }, ms);
}).listen(port, '127.0.0.1');
