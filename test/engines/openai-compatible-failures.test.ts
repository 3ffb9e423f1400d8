import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import type { ChatStreamPart } from '../../src/core/ports.js';
import { createOpenAICompatibleChatModel } from '../../src/engines/chat/openai-compatible.js';
import { collect, useFakeChat, userSays } from './chat-helpers.js';

/** The error a promise rejects with, failing the test when it resolves. */
async function failureOf(promise: Promise<unknown>): Promise<EngineError & { parts?: ChatStreamPart[] }> {
  const outcome = await promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ rejected: error }),
  );
  if (!('rejected' in outcome)) throw new Error(`expected a failure, got ${JSON.stringify(outcome.resolved)}`);
  expect(outcome.rejected).toBeInstanceOf(EngineError);
  return outcome.rejected as EngineError;
}

describe('OpenAI-compatible chat model: failures', () => {
  const context = useFakeChat();

  it('keeps the upstream status and error message of a refused request', async () => {
    context.fake.setScript({ failure: { kind: 'http', status: 503, message: 'model is loading', type: 'unavailable_error', code: 503 } });
    const error = await failureOf(collect(context.model().stream(userSays('hi'))));

    expect(error.upstream).toBe('Chat engine answered 503: model is loading');
    expect(error).toMatchObject({ status: 503, retryable: true, code: 'ENGINE_UNAVAILABLE', provider: 'openai-compatible' });
  });

  it('stops reading a whole answer past its byte limit instead of holding all of it', async () => {
    context.fake.setScript({ reply: 'z'.repeat(200_000) });
    const error = await failureOf(context.model({ maxJsonBytes: 100_000 }).generate(userSays('talk')));
    expect(error).toMatchObject({ code: 'ENGINE_FAILED', retryable: false });
    expect(error.upstream).toContain('larger than 100000 bytes');
    expect((await context.model().generate(userSays('talk'))).text).toHaveLength(200_000);
  });

  it('marks a client error as not retryable, for generate as well', async () => {
    context.fake.setScript({ failure: { kind: 'http', status: 400, message: 'context length exceeded', type: 'invalid_request_error' } });
    const error = await failureOf(context.model().generate(userSays('hi')));
    expect(error).toMatchObject({ status: 400, retryable: false, upstream: 'Chat engine answered 400: context length exceeded' });
  });

  it('falls back to the raw body, shortened, when the error is not JSON', async () => {
    context.fake.setScript({ failure: { kind: 'http', status: 502, message: '', rawBody: `<html>Bad Gateway${'.'.repeat(2000)}</html>` } });
    const error = await failureOf(collect(context.model().stream(userSays('hi'))));
    expect(error.upstream).toMatch(/^Chat engine answered 502: <html>Bad Gateway\.+…$/);
    expect(error.message.length).toBeLessThan(400);
  });

  it('reports a wrong API key with the upstream message', async () => {
    const { startFakeOpenAI } = await import('../fakes/fake-openai.js');
    const guarded = await startFakeOpenAI({ apiKey: 'right' });
    const model = createOpenAICompatibleChatModel({ baseURL: guarded.baseURL, apiKey: 'wrong', model: 'm' });
    try {
      const error = await failureOf(model.generate(userSays('hi')));
      expect(error).toMatchObject({ status: 401, retryable: false, upstream: 'Chat engine answered 401: Incorrect API key provided.' });
    } finally {
      await model.close();
      await guarded.close();
    }
  });

  it('fails on a mid-stream error event after the text already sent', async () => {
    context.fake.setScript({ tokens: ['a', 'b', 'c'], failure: { kind: 'error-event', afterTokens: 2, message: 'out of memory', code: 500 } });
    const error = await failureOf(collect(context.model().stream(userSays('x'))));

    expect(error.upstream).toBe('Chat engine failed mid-answer: out of memory');
    expect(error).toMatchObject({ status: 500, retryable: true });
    expect(error.parts).toEqual([{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }]);
  });

  it('fails on the legacy llama-server bare error line even though [DONE] follows', async () => {
    context.fake.setScript({ flavor: 'llama-server', tokens: ['a', 'b'], failure: { kind: 'legacy-error-line', afterTokens: 1, message: 'slot unavailable' } });
    const error = await failureOf(collect(context.model().stream(userSays('x'))));

    expect(error.upstream).toBe('Chat engine failed mid-answer: slot unavailable');
    expect(error.parts).toEqual([{ type: 'text', text: 'a' }]);
  });

  it('fails when the stream ends without [DONE] and without a finish reason', async () => {
    context.fake.setScript({ tokens: ['a', 'b'], failure: { kind: 'end-without-done' } });
    const error = await failureOf(collect(context.model().stream(userSays('x'))));
    expect(error.upstream).toMatch(/ended before \[DONE\]/);
    expect(error.retryable).toBe(true);
    expect(error.parts).toEqual([{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }]);
  });

  it('fails when the connection drops mid-stream', async () => {
    context.fake.setScript({ tokens: ['a', 'b', 'c'], failure: { kind: 'drop', afterTokens: 1 } });
    const error = await failureOf(collect(context.model().stream(userSays('x'))));
    expect(error.upstream).toMatch(/closed the connection before the answer was complete/);
    expect(error).toMatchObject({ code: 'ENGINE_FAILED', retryable: true });
  });

  it('fails on a malformed data event', async () => {
    context.fake.setScript({ tokens: ['a'], failure: { kind: 'malformed' } });
    const error = await failureOf(collect(context.model().stream(userSays('x'))));
    expect(error.upstream).toMatch(/^Chat engine sent a malformed stream event: \{"choices"/);
    expect(error.retryable).toBe(false);
  });

  it('times out when the engine never answers', async () => {
    context.fake.setScript({ failure: { kind: 'hang' } });
    const started = performance.now();
    const error = await failureOf(collect(context.model({ headersTimeoutMs: 200 }).stream(userSays('x'))));

    expect(error).toMatchObject({ code: 'ENGINE_TIMEOUT', retryable: true });
    expect(error.upstream).toMatch(/did not start answering within 200 ms/);
    // The engine never answers: any failure this side of the test's own bound is the timeout's.
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  it('times out when a stream stalls mid-answer, keeping the text already sent', async () => {
    context.fake.setScript({ tokens: ['a', 'b', 'c'], failure: { kind: 'stall', afterTokens: 2 } });
    const error = await failureOf(collect(context.model({ bodyTimeoutMs: 200 }).stream(userSays('x'))));

    expect(error).toMatchObject({ code: 'ENGINE_TIMEOUT' });
    expect(error.upstream).toMatch(/went silent for more than 200 ms/);
    expect(error.parts).toEqual([{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }]);
  });

  it('times out when a non-streamed answer stalls', async () => {
    context.fake.setScript({ failure: { kind: 'stall' } });
    const error = await failureOf(context.model({ bodyTimeoutMs: 200 }).generate(userSays('x')));
    expect(error.code).toBe('ENGINE_TIMEOUT');
  });

  it('reports a refused connection as unavailable, naming the base URL', async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const baseURL = `http://127.0.0.1:${closedPort}/v1`;
    const model = createOpenAICompatibleChatModel({ baseURL, model: 'm', connectTimeoutMs: 500 });
    try {
      const error = await failureOf(collect(model.stream(userSays('x'))));
      expect(error).toMatchObject({ code: 'ENGINE_UNAVAILABLE', retryable: true, status: undefined });
      expect(error.upstream).toContain(baseURL);
    } finally {
      await model.close();
    }
  });

  it('stops promptly with the abort reason when the signal fires mid-stream', async () => {
    context.fake.setScript({ tokens: ['a', 'b', 'c', 'd'], tokensPerSecond: 2 });
    const controller = new AbortController();
    const reason = new Error('the user left');
    const stream = context.model().stream(userSays('x'), { signal: controller.signal });
    const parts: ChatStreamPart[] = [];
    const outcome = (async () => {
      for await (const part of stream) {
        parts.push(part);
        controller.abort(reason);
      }
    })();

    await expect(outcome).rejects.toBe(reason);
    // Stopped before the next token came (two a second), and the engine saw the client go.
    expect(parts).toEqual([{ type: 'text', text: 'a' }]);
    expect(await context.fake.requests[0]?.outcome).toBe('client-closed');
  });

  it('stops with the abort reason while still waiting for headers', async () => {
    context.fake.setScript({ failure: { kind: 'hang' } });
    const reason = new Error('cancelled');
    const signal = AbortSignal.timeout(100);
    const controller = new AbortController();
    signal.addEventListener('abort', () => controller.abort(reason));
    await expect(context.model().generate(userSays('x'), { signal: controller.signal })).rejects.toBe(reason);
    await expect(collect(context.model().stream(userSays('x'), { signal: AbortSignal.abort(reason) }))).rejects.toBe(reason);
  });

  it('closes the request when the consumer stops reading early', async () => {
    context.fake.setScript({ tokens: Array.from({ length: 50 }, (_, index) => `t${index} `), tokensPerSecond: 50 });
    for await (const part of context.model().stream(userSays('x'))) {
      expect(part).toEqual({ type: 'text', text: 't0 ' });
      break;
    }
    const [received] = context.fake.requests;
    expect(await received?.outcome).toBe('client-closed');
    expect(context.fake.openResponses()).toBe(0);
  });
});
