import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';

export interface BenchProcess {
  url: string;
  child: ChildProcess;
  usage(): Promise<{ maxRssBytes: number; rssBytes: number; cpuMicros: number }>;
  /** Sends `{type}` and waits for the answer of the same type. */
  ask<T>(type: string): Promise<T>;
  stop(): Promise<void>;
}

/** Starts `bench/<script>` under tsx in a child process and waits until it listens. */
export async function startProcess(script: string, environment: Record<string, string>): Promise<BenchProcess> {
  const child = fork(path.join(import.meta.dirname, script), {
    execArgv: ['--import', 'tsx', ...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=/tmp/cpuprof'] : [])],
    env: { PATH: process.env.PATH, ...environment },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const [ready] = (await Promise.race([
    once(child, 'message'),
    once(child, 'exit').then(() => {
      throw new Error(`${script} exited before it was ready`);
    }),
  ])) as [{ type: string; url: string }];
  const ask = async <T>(type: string): Promise<T> => {
    child.send({ type });
    for (;;) {
      const [message] = (await once(child, 'message')) as [T & { type: string }];
      if (message.type === type) return message;
    }
  };
  return {
    url: ready.url,
    child,
    usage: () => ask('usage'),
    ask,
    async stop() {
      const exited = once(child, 'exit');
      child.send({ type: 'stop' });
      await exited;
    },
  };
}
