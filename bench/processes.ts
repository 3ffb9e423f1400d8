import { type ChildProcess, fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';

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
    execArgv: ['--import', 'tsx', ...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=/tmp/cpuprof'] : []), ...(process.env.BENCH_TRACE_GC && script === 'service-process.ts' ? ['--trace-gc'] : [])],
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

const root = path.resolve(import.meta.dirname, '..');
/** Linux reports CPU times in clock ticks of 1/100 s (`getconf CLK_TCK`). */
const ticksPerSecond = 100;

/** Peak and current RSS and CPU time of any process, from /proc. */
async function processUsage(pid: number): Promise<{ maxRssBytes: number; rssBytes: number; cpuMicros: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kilobytes = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  // Fields 14 and 15 of /proc/<pid>/stat (utime, stime) are the 12th and 13th after the name.
  const ticks = Number(stat[11]) + Number(stat[12]);
  return { maxRssBytes: kilobytes('VmHWM'), rssBytes: kilobytes('VmRSS'), cpuMicros: (ticks / ticksPerSecond) * 1e6 };
}

/** A line of the service's JSON log (pino: `time` is `Date.now()` when it was logged). */
export type ServiceLogEntry = { msg?: string; url?: string; level?: number; time?: number } & Record<string, unknown>;

/**
 * The service exactly as `npm start` runs it (`node dist/src/main.js`, built by `npm run
 * bench` first), its URL read from its start-up log line; usage comes from /proc. `onLog`
 * sees every log line, for benchmarks that time the service's own stages by them.
 */
export async function startServiceProcess(environment: Record<string, string>, onLog?: (entry: ServiceLogEntry) => void): Promise<BenchProcess> {
  // With a Discord token the service is ready once the bot is, which comes after the API.
  const readyMessage = environment.DISCORD_TOKEN ? 'Discord bot ready' : 'Likeness API listening';
  let apiUrl = '';
  const child = spawn(process.execPath, [...(process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir=/tmp/cpuprof-service'] : []), path.join(root, 'dist/src/main.js')], {
    cwd: root,
    // Learning asks the engine in the background: each benchmark measures its own path without it
    // (benchmark 12 measures learning, in process).
    env: { PATH: process.env.PATH, LEARNING: 'off', ...environment },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the service exited with ${code} before listening`)));
    lines.on('line', (line) => {
      try {
        const entry = JSON.parse(line) as ServiceLogEntry;
        onLog?.(entry);
        if (entry.msg === 'Likeness API listening' && entry.url) apiUrl = entry.url;
        if (entry.msg === readyMessage) resolve(apiUrl);
        else if ((entry.level ?? 0) >= 40) process.stderr.write(`${line}\n`);
      } catch {
        process.stderr.write(`${line}\n`);
      }
    });
  });
  return {
    url,
    child,
    usage: () => processUsage(child.pid!),
    ask: () => Promise.reject(new Error('the service process answers no questions')),
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
