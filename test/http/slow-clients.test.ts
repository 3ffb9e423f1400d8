import { connect, type Socket } from 'node:net';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, type ServerLimits, listen } from '../../src/http/server.js';

const limits: ServerLimits = { headersTimeoutMs: 600, requestTimeoutMs: 1_500, bodyIdleTimeoutMs: 800, keepAliveTimeoutMs: 300, maxConnections: 4 };

function app() {
  const hono = new Hono<{ Variables: object }>();
  // A body cut off by a deadline fails its read; the app's own error handler is not under test.
  hono.onError((_error, context) => context.text('cut off', 400));
  hono.post('/echo', async (context) => context.text(await context.req.text()));
  hono.get('/ping', (context) => context.text('pong'));
  // A slow engine: nothing for longer than every deadline, then the answer.
  hono.get('/slow', async (context) => {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    return context.text('late but whole');
  });
  // A streamed reply longer than every deadline, with gaps longer than the idle one.
  hono.get('/stream', (context) =>
    streamSSE(context, async (stream) => {
      for (let index = 0; index < 4; index += 1) {
        await stream.writeSSE({ data: `piece ${index}` });
        await stream.sleep(900);
      }
      await stream.writeSSE({ data: '[DONE]' });
    }),
  );
  return hono;
}

/** A raw client: what arrived, and when the server closed the connection (ms after opening). */
function open(url: string): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(Number(port), hostname);
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('error', () => {});
    const closed = new Promise<number>((done) => socket.once('close', () => done(performance.now() - started)));
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
    socket.once('error', reject);
  });
}

describe('the HTTP server against slow and idle clients', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await listen(app(), { host: '127.0.0.1', port: 0, limits });
  });
  afterAll(async () => server.close(100));

  it('cuts a body trickled a byte at a time at the request deadline', async () => {
    const client = await open(server.url);
    client.socket.write('POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n');
    // Often enough that the idle deadline never fires: only the whole-request one can.
    const trickle = setInterval(() => client.socket.writable && client.socket.write('x'), 300);
    const closedAfter = await client.closed;
    clearInterval(trickle);
    expect(closedAfter).toBeGreaterThan(limits.requestTimeoutMs - 100);
    expect(closedAfter).toBeLessThan(limits.requestTimeoutMs + 3_000);
    expect(client.received()).not.toContain('200 OK');
  });

  it('cuts headers that promise a body that never comes at the idle deadline', async () => {
    const client = await open(server.url);
    client.socket.write('POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n');
    const closedAfter = await client.closed;
    expect(closedAfter).toBeGreaterThan(limits.bodyIdleTimeoutMs - 100);
    expect(closedAfter).toBeLessThan(limits.requestTimeoutMs + 1_000);
  });

  it('cuts headers that never end at the headers deadline', async () => {
    const client = await open(server.url);
    client.socket.write('GET /ping HTTP/1.1\r\nHost: test\r\n');
    const trickle = setInterval(() => client.socket.writable && client.socket.write('X-Slow: 1\r\n'), 200);
    const closedAfter = await client.closed;
    clearInterval(trickle);
    expect(closedAfter).toBeLessThan(limits.headersTimeoutMs + 2_000);
    expect(client.received()).not.toContain('pong');
  });

  it('closes an idle kept-alive connection', async () => {
    const client = await open(server.url);
    client.socket.write('GET /ping HTTP/1.1\r\nHost: test\r\n\r\n');
    const closedAfter = await client.closed;
    expect(client.received()).toContain('pong');
    // Node adds a second to the advertised keep-alive time against races with clients.
    expect(closedAfter).toBeLessThan(limits.keepAliveTimeoutMs + 2_500);
  });

  it('closes connections beyond the cap at once', async () => {
    const held = await Promise.all(Array.from({ length: limits.maxConnections }, () => open(server.url)));
    for (const client of held) client.socket.write('GET /ping HTTP/1.1\r\nHost: test\r\n');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const extra = await open(server.url);
    extra.socket.write('GET /ping HTTP/1.1\r\nHost: test\r\n\r\n');
    expect(await extra.closed).toBeLessThan(500);
    expect(extra.received()).toBe('');
    for (const client of held) client.socket.destroy();
    await Promise.all(held.map((client) => client.closed));
  });

  it('lets a response take longer than every deadline, silent or streamed', async () => {
    const slow = await fetch(`${server.url}/slow`);
    expect(await slow.text()).toBe('late but whole');
    const streamed = await fetch(`${server.url}/stream`);
    const text = await streamed.text();
    expect(text).toContain('piece 3');
    expect(text).toContain('[DONE]');
  });

  it('lets an upload that arrives steadily within the request deadline through', async () => {
    const body = 'y'.repeat(64 * 1024);
    const answer = await fetch(`${server.url}/echo`, { method: 'POST', body });
    expect(await answer.text()).toBe(body);
  });
});
