// A token-adding reverse proxy for scripts/conformance: the conformance
// suite cannot send a bearer token, so it talks to this proxy, which adds
// `Authorization: Bearer TOKEN` and forwards everything else as it came.
// A Host (or Origin) naming the proxy itself is rewritten to name toolgate,
// as if the suite had connected to toolgate; any other Host or Origin is
// forwarded as it is: the suite's DNS-rebinding scenario (a foreign Host or
// Origin) reaches toolgate itself and is answered there.
//
//   node token-proxy.mjs LISTEN_PORT TARGET_HOST:PORT TOKEN
//
// It prints "proxy listening on PORT" once it listens.
import http from 'node:http';

const [port, target, token] = process.argv.slice(2);
const [host, tport] = target.split(':');

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const self = [`127.0.0.1:${port}`, `localhost:${port}`];
  if (self.includes(headers.host)) headers.host = target;
  for (const s of self) {
    if (headers.origin === `http://${s}`) headers.origin = `http://${target}`;
  }
  const up = http.request({ host, port: Number(tport), method: req.method, path: req.url, headers }, (upRes) => {
    res.writeHead(upRes.statusCode, upRes.headers);
    upRes.pipe(res);
  });
  up.on('error', (err) => {
    if (!res.headersSent) res.writeHead(502);
    res.end(String(err));
  });
  // The client went away before the answer ended: so does the request.
  res.on('close', () => { if (!res.writableEnded) up.destroy(); });
  req.pipe(up);
});
server.listen(Number(port), '127.0.0.1', () => console.log(`proxy listening on ${port}`));
