import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import lockfile from 'proper-lockfile';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ModelFileError, resolveModelFile, type ModelFileState, type ResolveModelFileOptions } from '../../src/engines/chat/embedded/model-file.js';
import { modelBlob, startFakeModelHost, type FakeModelHost, type FakeModelHostOptions } from '../fakes/fake-model-host.js';

const repositoryRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const blob = modelBlob(3 * 1024 * 1024);
const silent = pino({ level: 'silent' });

let host: FakeModelHost | undefined;
let dataDir: string;
let directory: string;

beforeEach(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'model-file-'));
  directory = path.join(dataDir, 'models');
});

afterEach(async () => {
  await host?.close();
  host = undefined;
  await rm(dataDir, { recursive: true, force: true });
});

async function startHost(options: Partial<FakeModelHostOptions> = {}): Promise<FakeModelHost> {
  host = await startFakeModelHost({ files: { 'owner/repo/file.gguf': blob }, redirect: true, ...options });
  return host;
}

function resolveWith(model: string, options: Partial<ResolveModelFileOptions> = {}): Promise<string> {
  return resolveModelFile({
    model,
    directory,
    huggingFace: { endpoint: host?.url ?? 'http://127.0.0.1:9' },
    logger: silent,
    connectTimeoutMs: 2000,
    headersTimeoutMs: 2000,
    idleTimeoutMs: 2000,
    retryDelayMs: 0,
    ...options,
  });
}

/** Compared as buffers: vitest's deep equality walks megabytes byte by byte, for many seconds. */
async function expectWholeFile(file: string): Promise<void> {
  const bytes = await readFile(file);
  expect(bytes.length).toBe(blob.length);
  expect(bytes.equals(blob)).toBe(true);
}

async function failureOf(promise: Promise<unknown>): Promise<ModelFileError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ModelFileError);
  return error as ModelFileError;
}

/** A port on 127.0.0.1 that nothing listens on: connections are refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const fileTarget = (): string => path.join(directory, 'owner', 'repo', 'file.gguf');
const fileRequests = (fake: FakeModelHost) => fake.requests.filter((request) => request.status === 200 || request.status === 206);

describe('resolveModelFile: local paths and forms', () => {
  it('uses a local path as is, relative to the working directory or absolute', async () => {
    const file = path.join(dataDir, 'mine.gguf');
    await writeFile(file, blob.subarray(0, 64));
    expect(await resolveWith(file)).toBe(file);
    expect(await resolveWith(path.relative(process.cwd(), file))).toBe(file);
  });

  it('fails at once with MODEL_NOT_FOUND for a missing path, without any request', async () => {
    const fake = await startHost();
    const error = await failureOf(resolveWith('owner/repo/file.gguf'));
    expect(error.code).toBe('MODEL_NOT_FOUND');
    expect(error.message).toContain('did you mean hf:owner/repo/file.gguf?');
    expect(fake.requests).toHaveLength(0);
  });

  it('refuses other forms and names in paths that could leave the directory', async () => {
    for (const model of ['llama3.2', 'hf:owner/repo', 'hf:owner/../file.gguf', 'hf:owner/repo/../../x.gguf', 'http://127.0.0.1:9/model.bin', 'http://user:password@127.0.0.1:9/model.gguf']) {
      const error = await failureOf(resolveWith(model));
      expect(error.code, model).toBe('MODEL_INVALID');
    }
    const error = await failureOf(resolveWith('llama3.2'));
    expect(error.message).toContain('hf:owner/repo:QUANT');
  });
});

describe('resolveModelFile: downloads', () => {
  it('downloads hf:owner/repo/file.gguf through the CDN redirect, reporting progress up to 100%', async () => {
    const fake = await startHost({ token: 'hf_secret' });
    const states: ModelFileState[] = [];
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        callback();
      },
    });
    const file = await resolveWith('hf:owner/repo/file.gguf', { huggingFace: { endpoint: fake.url, token: 'hf_secret' }, onState: (state) => states.push(state), logger: pino(sink) });

    expect(file).toBe(fileTarget());
    await expectWholeFile(file);
    expect(existsSync(`${file}.part`)).toBe(false);
    expect(existsSync(`${file}.part.json`)).toBe(false);
    expect(states[0]).toEqual({ state: 'checking' });
    expect(states.at(-1)).toEqual({ state: 'ready', path: file });
    const downloading = states.flatMap((state) => (state.state === 'downloading' ? [state] : []));
    const percents = downloading.map((state) => state.percent ?? -1);
    expect(percents).toEqual([...percents].sort((a, b) => a - b));
    expect(percents.at(-1)).toBe(100);
    expect(downloading.at(-1)).toMatchObject({ receivedBytes: blob.length, totalBytes: blob.length });
    expect(downloading.some((state) => state.bytesPerSecond !== undefined && state.bytesPerSecond > 0)).toBe(true);
    // The token goes to the endpoint only, never to the CDN it redirects to.
    expect(fake.requests.map((request) => [request.server, request.headers.authorization])).toEqual([
      ['main', 'Bearer hf_secret'],
      ['cdn', undefined],
    ]);
    const progress = lines.find((line) => line['msg'] === 'model download progress' && line['percent'] === 100);
    expect(progress).toMatchObject({ model: 'hf:owner/repo/file.gguf', receivedBytes: blob.length, totalBytes: blob.length });
    expect(lines.some((line) => line['msg'] === 'model downloaded' && line['path'] === file)).toBe(true);
  });

  it('resumes a cut download with a Range request, ending byte-identical', async () => {
    const fake = await startHost();
    fake.script.push({ kind: 'cut', afterBytes: 1024 * 1024 });
    const file = await resolveWith('hf:owner/repo/file.gguf');
    await expectWholeFile(file);
    const [first, second] = fileRequests(fake);
    expect(first?.headers.range).toBeUndefined();
    expect(second?.status).toBe(206);
    expect(second?.headers.range).toMatch(/^bytes=[1-9]\d*-$/);
  });

  it('retries a 500 and then succeeds', async () => {
    const fake = await startHost({ redirect: false });
    fake.script.push({ kind: 'status', status: 500 });
    await expectWholeFile(await resolveWith('hf:owner/repo/file.gguf'));
    expect(fake.requests.map((request) => request.status)).toEqual([500, 200]);
  });

  it('refuses a file shorter than the size Hugging Face announced, leaving no final file', async () => {
    const fake = await startHost();
    fake.script.push({ kind: 'short', bytes: 1024 * 1024 });
    const error = await failureOf(resolveWith('hf:owner/repo/file.gguf'));
    expect(error.code).toBe('MODEL_DOWNLOAD_FAILED');
    expect(existsSync(fileTarget())).toBe(false);
  });

  it('gives up on a connection that keeps breaking without progress, keeping no final file', async () => {
    const fake = await startHost({ redirect: false });
    for (let cut = 0; cut < 10; cut += 1) fake.script.push({ kind: 'cut', afterBytes: 0 });
    const error = await failureOf(resolveWith('hf:owner/repo/file.gguf'));
    expect(error.code).toBe('MODEL_DOWNLOAD_FAILED');
    expect(error.message).toContain('npm run model:fetch');
    expect(fake.requests).toHaveLength(5);
    expect(existsSync(fileTarget())).toBe(false);
  });

  it('renames a part that was already whole when the host answers 416', async () => {
    const fake = await startHost({ redirect: false });
    await mkdir(path.dirname(fileTarget()), { recursive: true });
    await writeFile(`${fileTarget()}.part`, blob);
    await writeFile(`${fileTarget()}.part.json`, JSON.stringify({ source: 'x', totalBytes: blob.length }));
    await expectWholeFile(await resolveWith('hf:owner/repo/file.gguf'));
    expect(fake.requests.map((request) => request.status)).toEqual([416]);
  });

  it('refuses what is not a GGUF file', async () => {
    await startHost({ files: { 'owner/repo/file.gguf': Buffer.from('<!doctype html><p>Sign in</p>') } });
    const error = await failureOf(resolveWith('hf:owner/repo/file.gguf'));
    expect(error.code).toBe('MODEL_INVALID');
    expect(existsSync(fileTarget())).toBe(false);
  });

  it('downloads a plain URL under url/<host>/<path>', async () => {
    const fake = await startHost();
    const file = await resolveWith(`${fake.url}/direct/owner/repo/file.gguf`);
    expect(file).toBe(path.join(directory, 'url', new URL(fake.url).host.replace(':', '_'), 'direct', 'owner', 'repo', 'file.gguf'));
    await expectWholeFile(file);
  });

  it('returns a file already in place with no request at all', async () => {
    const fake = await startHost();
    const file = await resolveWith('hf:owner/repo/file.gguf');
    const before = fake.requests.length;
    expect(await resolveWith('hf:owner/repo/file.gguf')).toBe(file);
    expect(fake.requests).toHaveLength(before);
    // Offline too: the endpoint is a closed port.
    expect(await resolveWith('hf:owner/repo/file.gguf', { huggingFace: { endpoint: `http://127.0.0.1:${await closedPort()}` } })).toBe(file);
  });
});

describe('resolveModelFile: hf:owner/repo:QUANT', () => {
  it('picks the file of the quant from the listing, then finds it again offline', async () => {
    const fake = await startHost({
      files: { 'owner/repo/Model-Q4_K_M.gguf': blob },
      listedOnly: { 'owner/repo': ['Model-IQ4_K_M.gguf', 'Model-Q8_0.gguf', 'mmproj-Model-Q4_K_M.gguf', 'README.md'] },
    });
    const file = await resolveWith('hf:owner/repo:q4_k_m');
    expect(file).toBe(path.join(directory, 'owner', 'repo', 'Model-Q4_K_M.gguf'));
    await expectWholeFile(file);
    expect(fake.requests[0]?.path).toBe('/api/models/owner/repo');
    const before = fake.requests.length;
    expect(await resolveWith('hf:owner/repo:Q4_K_M', { huggingFace: { endpoint: `http://127.0.0.1:${await closedPort()}` } })).toBe(file);
    expect(fake.requests).toHaveLength(before);
  });

  it('refuses a split quant and names the quants of a repository without the one asked for', async () => {
    await startHost({ listedOnly: { 'owner/big': ['Big-Q4_K_M-00001-of-00002.gguf', 'Big-Q4_K_M-00002-of-00002.gguf', 'Big-Q2_K.gguf'] } });
    const split = await failureOf(resolveWith('hf:owner/big:Q4_K_M'));
    expect(split.code).toBe('MODEL_INVALID');
    expect(split.message).toContain('split');
    const missing = await failureOf(resolveWith('hf:owner/big:Q5_K_M'));
    expect(missing.code).toBe('MODEL_NOT_FOUND');
    expect(missing.message).toContain('Big-Q2_K.gguf');
  });
});

describe('resolveModelFile: refusals and unreachable hosts', () => {
  it('says to set HF_TOKEN when the host answers 401', async () => {
    const fake = await startHost({ token: 'hf_secret' });
    const error = await failureOf(resolveWith('hf:owner/repo/file.gguf'));
    expect(error.code).toBe('MODEL_DOWNLOAD_FAILED');
    expect(error.message).toContain('HF_TOKEN');
    expect(fake.requests).toHaveLength(1);
  });

  it('fails a missing file at once with MODEL_NOT_FOUND', async () => {
    const fake = await startHost();
    const error = await failureOf(resolveWith('hf:owner/repo/other.gguf'));
    expect(error.code).toBe('MODEL_NOT_FOUND');
    expect(fake.requests).toHaveLength(1);
  });

  it('fails with MODEL_HOST_UNREACHABLE when nothing listens on the port', async () => {
    const states: ModelFileState[] = [];
    const error = await failureOf(resolveWith('hf:owner/repo/file.gguf', { huggingFace: { endpoint: `http://127.0.0.1:${await closedPort()}` }, onState: (state) => states.push(state) }));
    expect(error.code).toBe('MODEL_HOST_UNREACHABLE');
    expect(error.message).toContain('HF_ENDPOINT');
    expect(states.at(-1)).toEqual({ state: 'failed', error });
  });

  it('fails with MODEL_HOST_UNREACHABLE when the host accepts but never answers', async () => {
    const fake = await startHost({ redirect: false });
    fake.script.push({ kind: 'hang' });
    const error = await failureOf(resolveWith('hf:owner/repo/file.gguf', { headersTimeoutMs: 200 }));
    expect(error.code).toBe('MODEL_HOST_UNREACHABLE');
  });
});

describe('resolveModelFile: abort and the lock', () => {
  it('stops a download when the signal aborts, leaving neither a final file nor the lock', async () => {
    const fake = await startHost();
    fake.script.push({ kind: 'pause', afterBytes: 512 * 1024, until: new Promise<void>(() => undefined) });
    const controller = new AbortController();
    const reason = new Error('stopped by the test');
    const promise = resolveWith('hf:owner/repo/file.gguf', {
      signal: controller.signal,
      onState: (state) => {
        if (state.state === 'downloading' && state.receivedBytes > 0) controller.abort(reason);
      },
    });
    await expect(promise).rejects.toBe(reason);
    expect(existsSync(fileTarget())).toBe(false);
    expect(existsSync(`${fileTarget()}.lock`)).toBe(false);
    // The next call takes it up (resuming whatever part reached the disk before the abort).
    await expectWholeFile(await resolveWith('hf:owner/repo/file.gguf'));
  });

  it('waits for another holder of the lock and returns the file it leaves, with no download', async () => {
    const fake = await startHost();
    await mkdir(path.dirname(fileTarget()), { recursive: true });
    const release = await lockfile.lock(fileTarget(), { realpath: false });
    const file = await resolveWith('hf:owner/repo/file.gguf', {
      onState: (state) => {
        if (state.state !== 'waiting-for-other-process') return;
        void writeFile(fileTarget(), blob).then(() => release());
      },
    });
    expect(file).toBe(fileTarget());
    expect(fileRequests(fake)).toHaveLength(0);
  });

  it('stops waiting for the lock when the signal aborts', async () => {
    await startHost();
    await mkdir(path.dirname(fileTarget()), { recursive: true });
    const release = await lockfile.lock(fileTarget(), { realpath: false });
    const controller = new AbortController();
    const reason = new Error('stopped while waiting');
    const promise = resolveWith('hf:owner/repo/file.gguf', { signal: controller.signal, onState: (state) => state.state === 'waiting-for-other-process' && controller.abort(reason) });
    await expect(promise).rejects.toBe(reason);
    await release();
  });

  it('takes over a stale lock and resumes the part its holder left', async () => {
    const fake = await startHost();
    const target = fileTarget();
    await mkdir(`${target}.lock`, { recursive: true });
    const longAgo = new Date(Date.now() - 60_000);
    await utimes(`${target}.lock`, longAgo, longAgo);
    await writeFile(`${target}.part`, blob.subarray(0, 1024 * 1024));
    await writeFile(`${target}.part.json`, JSON.stringify({ source: 'x', totalBytes: blob.length }));
    await expectWholeFile(await resolveWith('hf:owner/repo/file.gguf'));
    expect(fileRequests(fake)[0]?.headers.range).toBe(`bytes=${1024 * 1024}-`);
  });
});

describe('npm run model:fetch', () => {
  interface Run {
    code: number | null;
    stdout: string;
    stderr: string;
  }

  function runFetch(environment: Record<string, string>, onLine: (line: string) => void = () => undefined): Promise<Run> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/model-fetch.ts'], {
      cwd: repositoryRoot,
      env: { ...process.env, HF_TOKEN: '', LLM_BASE_URL: '', DATA_DIR: dataDir, ...environment },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
      for (const line of text.split('\n')) onLine(line);
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  }

  it('two processes fetching at once: the body is served once and both exit 0 with the same whole file', { timeout: 60_000 }, async () => {
    const fake = await startHost();
    let releaseBody: () => void = () => undefined;
    fake.script.push({ kind: 'pause', afterBytes: 256 * 1024, until: new Promise<void>((resolve) => (releaseBody = resolve)) });
    const environment = { LLM_MODEL: 'hf:owner/repo/file.gguf', HF_ENDPOINT: fake.url };
    // The first body stays paused until the other process says it is waiting for the lock.
    const onLine = (line: string): void => {
      if (line.includes('waiting')) releaseBody();
    };
    const runs = await Promise.all([runFetch(environment, onLine), runFetch(environment, onLine)]);

    for (const run of runs) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trim().split('\n').at(-1)).toBe(fileTarget());
    }
    expect(runs.some((run) => run.stdout.includes('100.0%'))).toBe(true);
    await expectWholeFile(fileTarget());
    expect(fileRequests(fake)).toHaveLength(1);
    expect(fake.servedBytes()).toBe(blob.length);
  });

  it('exits 1 with a message saying what to do when the host is unreachable', { timeout: 60_000 }, async () => {
    const run = await runFetch({ LLM_MODEL: 'hf:owner/repo/file.gguf', HF_ENDPOINT: `http://127.0.0.1:${await closedPort()}` });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('HF_ENDPOINT');
  });
});
