/**
 * The `ImageEngine` contract, run against every adapter and its fake engine on 127.0.0.1:
 * what the job runner relies on whichever engine is configured.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImageEngine, ImageRequest } from '../../src/core/ports.js';
import { createA1111ImageEngine } from '../../src/engines/image/a1111.js';
import { createCogImageEngine } from '../../src/engines/image/cog.js';
import { createReplicateImageEngine } from '../../src/engines/image/replicate.js';
import { startFakeA1111 } from '../fakes/images/fake-a1111.js';
import { startFakeCog } from '../fakes/images/fake-cog.js';
import { startFakeReplicate } from '../fakes/images/fake-replicate.js';
import { TestAbort, engineFailure, pngSize, recordingRun, rejection, samplePayload, waitFor } from './image-helpers.js';

interface FakeEngine {
  hold(): void;
  release(): void;
  failNext(message: string): void;
  readonly running: number;
  close(): Promise<void>;
}

interface Subject {
  engine: ImageEngine;
  fake: FakeEngine;
  /** The same adapter pointed at a loopback port nothing listens on. */
  unreachable: ImageEngine;
}

/** A loopback URL that refuses connections: a port that was just released. */
async function closedPortURL(): Promise<string> {
  const server = createServer();
  const { port } = await new Promise<AddressInfo>((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo)));
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

const subjects: Record<string, () => Promise<Subject>> = {
  automatic1111: async () => {
    const fake = await startFakeA1111({ stepMs: 2 });
    const options = { pollIntervalMs: 5 };
    return { fake, engine: createA1111ImageEngine({ baseURL: fake.url, ...options }), unreachable: createA1111ImageEngine({ baseURL: await closedPortURL(), ...options }) };
  },
  replicate: async () => {
    const fake = await startFakeReplicate({ startingMs: 5, stepMs: 3 });
    const options = { apiToken: 'test-token', model: 'stability-ai/sdxl', pollIntervalMs: 5 };
    return {
      fake,
      engine: createReplicateImageEngine({ baseURL: fake.apiURL, ...options }),
      unreachable: createReplicateImageEngine({ baseURL: `${await closedPortURL()}/v1`, ...options }),
    };
  },
  cog: async () => {
    const fake = await startFakeCog({ stepMs: 3 });
    const options = { pollIntervalMs: 5 };
    return { fake, engine: createCogImageEngine({ baseURL: fake.url, ...options }), unreachable: createCogImageEngine({ baseURL: await closedPortURL(), ...options }) };
  },
};

describe.each(Object.keys(subjects))('ImageEngine contract: %s', (name) => {
  let subject: Subject;
  let jobs = 0;
  const request = (overrides: Partial<ImageRequest> = {}): ImageRequest => ({ jobId: `contract-${++jobs}`, payload: samplePayload(), faceModel: null, ...overrides });

  beforeAll(async () => {
    subject = await subjects[name]!();
  });
  afterAll(async () => {
    subject.fake.release();
    await Promise.all([subject.engine.close(), subject.unreachable.close()]);
    await subject.fake.close();
  });

  it('names itself and how many runs it takes at once', () => {
    expect(subject.engine.provider).toBe(name);
    expect(Number.isInteger(subject.engine.concurrency) && subject.engine.concurrency >= 1).toBe(true);
  });

  it('makes one PNG per output at the asked size, announcing its run once', async () => {
    const run = recordingRun();
    const images = await subject.engine.generate(request({ payload: samplePayload({ samples: 3 }) }), run);
    expect(images.map(pngSize)).toEqual(Array.from({ length: 3 }, () => ({ width: 96, height: 64 })));
    expect(new Set(images.map((image) => Buffer.from(image.data).toString('base64'))).size).toBe(3);
    expect(run.submittedIds).toHaveLength(1);
    expect(run.submittedIds[0]).not.toBe('');
  });

  it('gives the same images for the same payload and others for another seed', async () => {
    const first = await subject.engine.generate(request(), recordingRun());
    const again = await subject.engine.generate(request(), recordingRun());
    const other = await subject.engine.generate(request({ payload: samplePayload({ seed: 77 }) }), recordingRun());
    expect(Buffer.from(again[0]!.data).equals(Buffer.from(first[0]!.data))).toBe(true);
    expect(Buffer.from(other[0]!.data).equals(Buffer.from(first[0]!.data))).toBe(false);
  });

  it('resumes an announced run without announcing it again, ending with the same images', async () => {
    const job = request();
    const first = recordingRun();
    const images = await subject.engine.generate(job, first);
    const resumed = recordingRun({ resumeId: first.submittedIds[0]! });
    const again = await subject.engine.generate(job, resumed);
    expect(resumed.submittedIds).toEqual([]);
    expect(Buffer.from(again[0]!.data).equals(Buffer.from(images[0]!.data))).toBe(true);
  });

  it('rejects with the reason of a signal aborted before it starts, touching nothing', async () => {
    const run = recordingRun();
    const reason = new TestAbort('canceled before start');
    run.controller.abort(reason);
    expect(await rejection(subject.engine.generate(request(), run))).toBe(reason);
    expect(run.submittedIds).toEqual([]);
  });

  it('rejects with the abort reason mid-run and stops the work at the engine', async () => {
    subject.fake.hold();
    const run = recordingRun();
    const outcome = rejection(subject.engine.generate(request(), run));
    await waitFor(() => subject.fake.running === 1);
    const reason = new TestAbort('time limit reached');
    run.controller.abort(reason);
    expect(await outcome).toBe(reason);
    subject.fake.release();
    await waitFor(() => subject.fake.running === 0);
  });

  it('reports an engine failure as an EngineError carrying the engine\'s reason', async () => {
    subject.fake.failNext('the GPU fell off the bus');
    const error = await engineFailure(subject.engine.generate(request(), recordingRun()));
    expect(error.provider).toBe(subject.engine.provider);
    expect(error.upstream).toContain('the GPU fell off the bus');
  });

  it('reports an unreachable engine as unavailable and worth retrying', async () => {
    const error = await engineFailure(subject.unreachable.generate(request(), recordingRun()));
    expect(error).toMatchObject({ code: 'ENGINE_UNAVAILABLE', retryable: true, provider: subject.engine.provider });
  });
});
