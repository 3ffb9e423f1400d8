import { type Server, createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { onFreePort } from './ports.js';

const listening: Server[] = [];
afterEach(async () => {
  await Promise.all(listening.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

function listen(port: number): Promise<Server> {
  const server = createServer();
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      listening.push(server);
      resolve(server);
    });
  });
}

describe('onFreePort', () => {
  it('starts again on another port when the one given out was taken before it was bound, in this process or in a child', async () => {
    const tried: number[] = [];
    const server = await onFreePort(async (port) => {
      tried.push(port);
      // Someone else binds the port first: on the first try in this process, on the second as a child's log says.
      if (tried.length === 1) await listen(port);
      if (tried.length === 2) throw new Error(`worker did not start:\n{"err":{"message":"listen EADDRINUSE: address already in use 127.0.0.1:${port}"}}`);
      return listen(port);
    });
    expect(tried).toHaveLength(3);
    expect(server.address()).toMatchObject({ port: tried[2] });
  });

  it('gives up on any other failure, a port other than its own taken included, and after its attempts', async () => {
    const other = await listen(0);
    const otherPort = (other.address() as { port: number }).port;
    let calls = 0;
    await expect(
      onFreePort(async () => {
        calls++;
        return listen(otherPort);
      }),
    ).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(calls).toBe(1);

    await expect(
      onFreePort(async (port) => {
        calls++;
        await listen(port);
        return listen(port);
      }, 2),
    ).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(calls).toBe(3);
  });
});
