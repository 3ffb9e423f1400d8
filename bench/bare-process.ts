/** A bare node:http server answering every request with the same bytes: the yardstick of benchmark 1. */
import { createServer } from 'node:http';

const body = Buffer.from(process.env.BARE_BODY_BASE64 ?? '', 'base64');
const contentType = process.env.BARE_CONTENT_TYPE ?? 'application/json';
const server = createServer((request, response) => {
  request.resume();
  response.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
  response.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address() as { port: number };
  process.send?.({ type: 'ready', url: `http://127.0.0.1:${address.port}` });
});
process.on('message', (message: { type: string }) => {
  if (message.type === 'stop') server.close(() => process.exit(0));
});
