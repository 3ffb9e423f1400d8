/**
 * The yardstick of the relay benchmark: a bare node:http server that forwards each chat
 * request to the engine and pipes the engine's bytes back untouched. Whatever latency it
 * shows is the machine's (loopback TCP, scheduling), not the service's.
 */
import { createServer, request } from 'node:http';

const engine = new URL(`${process.env.ENGINE_URL ?? ''}/chat/completions`);
const server = createServer((incoming, response) => {
  let body = '';
  incoming.setEncoding('utf8');
  incoming.on('data', (piece: string) => (body += piece));
  incoming.on('end', () => {
    const { data } = JSON.parse(body) as { data: string };
    const upstream = request(engine, { method: 'POST', headers: { 'content-type': 'application/json' } }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, { 'content-type': 'text/event-stream' });
      answer.pipe(response);
    });
    upstream.end(JSON.stringify({ model: 'fake', stream: true, messages: [{ role: 'user', content: data }] }));
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address() as { port: number };
  process.send?.({ type: 'ready', url: `http://127.0.0.1:${address.port}` });
});
process.on('message', (message: { type: string }) => {
  if (message.type === 'stop') server.close(() => process.exit(0));
});
