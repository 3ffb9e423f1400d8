import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { onFreePort } from '../support/ports.js';
import { patient } from '../support/patience.js';

const root = path.resolve(import.meta.dirname, '../..');

/** One `src/main.ts` process, as `npm start` runs it, with its own port and data directory. */
export interface ServiceProcess {
  name: string;
  url: string;
  child: ChildProcess;
  output: () => string;
}

/** Spawns one service process on `port`; `startServing` waits until it serves. */
async function spawnService(name: string, environment: Record<string, string>, port: number): Promise<ServiceProcess> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `likeness-${name}-`));
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'warn', LEARNING: 'off', ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  child.once('exit', () => void rm(dataDir, { recursive: true, force: true }));
  return { name, url: `http://127.0.0.1:${port}`, child, output: () => output };
}

/** Waits for `/healthz` to answer 200; throws with the process's output if it exits first or takes two minutes (a child started on a loaded machine compiles all of src with tsx first). */
export async function waitUntilServing(service: Pick<ServiceProcess, 'name' | 'url' | 'child' | 'output'>): Promise<void> {
  const deadline = Date.now() + patient(120_000);
  while ((await fetch(`${service.url}/healthz`).catch(() => undefined))?.status !== 200) {
    if (Date.now() > deadline || service.child.exitCode !== null) throw new Error(`${service.name} did not start:\n${service.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Starts one `src/main.ts` process on a port of its own and waits until it serves, starting it
 * again on another port when that one was taken before the child bound it (`onFreePort`).
 */
export function startServing(name: string, environment: Record<string, string>): Promise<ServiceProcess> {
  return onFreePort(async (port) => {
    const service = await spawnService(name, environment, port);
    try {
      await waitUntilServing(service);
      return service;
    } catch (error) {
      if (service.child.exitCode === null) service.child.kill();
      throw error;
    }
  });
}

/** Waits for `/readyz` to answer 200: every part up (for a shard manager, every shard ready). */
export async function waitUntilReady(service: ServiceProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + patient(timeoutMs);
  while ((await fetch(`${service.url}/readyz`)).status !== 200) {
    if (Date.now() > deadline) throw new Error(`${service.name} did not become ready:\n${service.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export async function call(service: ServiceProcess, method: string, route: string, key: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${service.url}/api/v0${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}


/** Stops the service with SIGTERM and waits for it to exit. */
export async function stopService(service: ServiceProcess): Promise<void> {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return;
  const exited = once(service.child, 'exit');
  service.child.kill('SIGTERM');
  await exited;
}
