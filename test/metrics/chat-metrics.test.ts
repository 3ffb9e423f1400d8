/**
 * The chat decorator around the real OpenAI-compatible adapter, talking to the fake engine over
 * loopback: first-token time, speed and each outcome, read back from a real scrape.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics/metrics.js';
import { withChatMetrics } from '../../src/metrics/chat-metrics.js';
import { startMetricsServer, type RunningMetricsServer } from '../../src/metrics/metrics-server.js';
import { collect, useFakeChat, userSays } from '../engines/chat-helpers.js';
import { scrape, valueOf } from './exposition.js';

describe('chat engine metrics', () => {
  const context = useFakeChat();
  const metrics = new Metrics({ processMetrics: false });
  let server: RunningMetricsServer;
  beforeAll(async () => {
    server = await startMetricsServer(metrics, { host: '127.0.0.1', port: 0 });
  });
  afterAll(() => server.close());

  it('records time to first token, speed and outcomes of streams and calls', async () => {
    const model = withChatMetrics(context.model({ headersTimeoutMs: 300, bodyTimeoutMs: 300 }), metrics);
    const provider = model.provider;

    context.fake.setScript({ tokens: ['one ', 'two ', 'three ', 'four ', 'five'], firstTokenDelayMs: 120, tokensPerSecond: 100 });
    expect((await collect(model.stream(userSays('count')))).text).toBe('one two three four five');

    context.fake.setScript({ failure: { kind: 'http', status: 400, message: 'context length exceeded', type: 'invalid_request_error' } });
    await expect(collect(model.stream(userSays('a long story')))).rejects.toMatchObject({ code: 'ENGINE_CONTEXT_EXCEEDED' });

    context.fake.setScript({ tokens: ['a', 'b', 'c'], failure: { kind: 'stall', afterTokens: 2 } });
    await expect(collect(model.stream(userSays('x')))).rejects.toMatchObject({ code: 'ENGINE_TIMEOUT' });

    context.fake.setScript({ failure: { kind: 'http', status: 500, message: 'boom' } });
    await expect(model.generate(userSays('x'))).rejects.toMatchObject({ code: 'ENGINE_FAILED' });

    context.fake.setScript({ tokens: ['a', 'b', 'c'], tokensPerSecond: 20 });
    const stop = new AbortController();
    const stream = model.stream(userSays('x'), { signal: stop.signal });
    await expect(
      (async () => {
        for await (const part of stream) if (part.type === 'text') stop.abort();
      })(),
    ).rejects.toThrow();

    const exposition = await scrape(server.url);
    const outcome = (name: string) => valueOf(exposition, 'likeness_chat_requests_total', { provider, outcome: name });
    expect({ ok: outcome('ok'), context: outcome('context_exceeded'), timeout: outcome('timeout'), failed: outcome('failed'), canceled: outcome('canceled') }).toEqual({
      ok: 1,
      context: 1,
      timeout: 1,
      failed: 1,
      canceled: 1,
    });
    // The ok stream, the stalled one and the canceled one each sent a first token.
    expect(valueOf(exposition, 'likeness_chat_time_to_first_token_seconds_count', { provider })).toBe(3);
    expect(valueOf(exposition, 'likeness_chat_time_to_first_token_seconds_bucket', { provider, le: '0.1' })).toBeLessThan(3);
    expect(valueOf(exposition, 'likeness_chat_time_to_first_token_seconds_sum', { provider })).toBeGreaterThanOrEqual(0.12);
    // Only the ok stream finished with a usage count: four tokens after the first at ~100/s.
    expect(valueOf(exposition, 'likeness_chat_output_tokens_per_second_count', { provider })).toBe(1);
    const tokensPerSecond = valueOf(exposition, 'likeness_chat_output_tokens_per_second_sum', { provider })!;
    // Timers never fire early, so the scripted pacing bounds the rate from above; a loaded
    // machine may only make it slower, so no lower bound beyond "measured".
    expect(tokensPerSecond).toBeGreaterThan(0);
    expect(tokensPerSecond).toBeLessThan(400);
    expect(valueOf(exposition, 'likeness_chat_output_characters_per_second_sum', { provider })).toBeGreaterThan(0);
  });
});
