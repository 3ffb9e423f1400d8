import { createServer } from 'node:net';

/**
 * A loopback port that was free a moment ago. Only a moment: until something binds it, another
 * test (or the next `freePort` call, or a connection's own port) may take it. Start servers on
 * it through `onFreePort`.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Runs `start` with a port from `freePort`, and again with another when that very port was
 * taken before `start` could bind it (EADDRINUSE naming it, in the error or in a child's output
 * the error carries): the test's luck, not a failure of what it starts. `start` must leave
 * nothing running when it throws.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await start(port);
    } catch (error) {
      if (attempt >= attempts || !tookPort(error, port)) throw error;
    }
  }
}

function tookPort(error: unknown, port: number): boolean {
  if (!(error instanceof Error)) return false;
  const { code, port: failed } = error as NodeJS.ErrnoException & { port?: number };
  if (code === 'EADDRINUSE') return failed === port;
  // A child process's log: "listen EADDRINUSE: address already in use 127.0.0.1:<port>".
  return new RegExp(`EADDRINUSE[^\\n]*:${port}\\b`).test(error.message);
}
