import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../http/harness.js';

const root = path.resolve(import.meta.dirname, '../..');

/** One `src/main.ts` process, as `npm start` runs it, with its own port and data directory. */
export interface ServiceProcess {
  name: string;
  url: string;
  child: ChildProcess;
  output: () => string;
}

export async function startService(name: string, environment: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
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

export async function waitUntilServing(service: ServiceProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await fetch(`${service.url}/healthz`).catch(() => undefined))?.status !== 200) {
    if (Date.now() > deadline || service.child.exitCode !== null) throw new Error(`${service.name} did not start:\n${service.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Starts a service and waits until it serves, starting it again on another port when the one
 * `freePort` gave out was taken (by another test, or by a port the same process was also given)
 * before the child could bind it: that is the test's luck, not the service's failure.
 */
export async function startServing(name: string, environment: Record<string, string>, attempts = 3): Promise<ServiceProcess> {
  for (let attempt = 1; ; attempt++) {
    const service = await startService(name, environment);
    try {
      await waitUntilServing(service);
      return service;
    } catch (error) {
      if (attempt >= attempts || !service.output().includes('EADDRINUSE')) throw error;
      if (service.child.exitCode === null) service.child.kill();
    }
  }
}

/** Waits for `/readyz` to answer 200: every part up (for a shard manager, every shard ready). */
export async function waitUntilReady(service: ServiceProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
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
