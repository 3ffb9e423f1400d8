/**
 * A listener that serves at most `threads` TCP connections at once, as llama-server's HTTP
 * thread pool does (`--threads-http`, one thread per open connection): a further connection is
 * accepted but left unread until a served one closes, whether the client closes it, the server
 * does, or its keep-alive times out. Idle kept-alive connections thus hold threads, and the
 * requests behind them wait (see shared/notes/engines-wire.md).
 */
import type { Server as HttpServer } from 'node:http';
import { type AddressInfo, type Server, type Socket, createServer } from 'node:net';

export interface HttpThreads {
  readonly port: number;
  /** Connections accepted so far, served or waiting. */
  accepted(): number;
  /** Connections being served now. */
  serving(): number;
  /** Connections accepted but not served yet. */
  waiting(): number;
  /** Stops listening and drops every connection, served or waiting. */
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 and hands connections to `server` (which must not listen itself). */
export async function listenWithThreads(server: HttpServer, threads = Number.POSITIVE_INFINITY): Promise<HttpThreads> {
  const queue: Socket[] = [];
  const served = new Set<Socket>();
  let accepted = 0;

  const serve = (socket: Socket): void => {
    served.add(socket);
    socket.once('close', () => {
      served.delete(socket);
      const next = queue.shift();
      if (next) serve(next);
    });
    server.emit('connection', socket);
    // Accepted paused (`pauseOnConnect`), so a waiting request stays unread until now.
    socket.resume();
  };

  const listener: Server = createServer({ pauseOnConnect: true }, (socket) => {
    accepted += 1;
    if (served.size < threads) return serve(socket);
    queue.push(socket);
    // A client that gives up while waiting frees its place in the queue.
    socket.once('close', () => {
      const index = queue.indexOf(socket);
      if (index >= 0) queue.splice(index, 1);
    });
  });
  await new Promise<void>((resolve) => listener.listen({ host: '127.0.0.1', port: 0, backlog: 4096 }, resolve));
  return {
    port: (listener.address() as AddressInfo).port,
    accepted: () => accepted,
    serving: () => served.size,
    waiting: () => queue.length,
    close: async () => {
      for (const socket of [...queue.splice(0), ...served]) socket.destroy();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
