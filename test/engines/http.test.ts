import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import { createEngineClient, upstreamMessage } from '../../src/engines/http.js';

// The mapping is pure; a connect timeout cannot be provoked on loopback without leaving 127.0.0.1.
describe('engine HTTP plumbing', () => {
  const client = createEngineClient({ provider: 'speech-test', label: 'Speech engine', baseURL: 'http://user:secret@127.0.0.1:9/v1/', connectTimeoutMs: 300 });

  it('maps undici and socket failures to engine error codes', () => {
    const failure = (code: string, message: string): Error => Object.assign(new Error(message), { code });
    const cases = [
      [failure('UND_ERR_CONNECT_TIMEOUT', 'Connect Timeout Error'), 'ENGINE_TIMEOUT', /did not accept a connection within 300 ms/],
      [failure('UND_ERR_HEADERS_TIMEOUT', 'Headers Timeout Error'), 'ENGINE_TIMEOUT', /did not start answering/],
      [failure('UND_ERR_BODY_TIMEOUT', 'Body Timeout Error'), 'ENGINE_TIMEOUT', /went silent/],
      [failure('ENOTFOUND', 'getaddrinfo ENOTFOUND'), 'ENGINE_UNAVAILABLE', /unreachable \(ENOTFOUND\)/],
      // Happy Eyeballs (several addresses tried) wraps the refusals in an AggregateError.
      [new AggregateError([failure('ECONNREFUSED', 'connect ECONNREFUSED ::1:9')]), 'ENGINE_UNAVAILABLE', /unreachable \(ECONNREFUSED\)/],
      [failure('UND_ERR_SOCKET', 'other side closed'), 'ENGINE_FAILED', /closed the connection/],
    ] as const;
    for (const [thrown, code, message] of cases) {
      const error = client.translate(thrown);
      expect(error).toBeInstanceOf(EngineError);
      expect(error).toMatchObject({ code, provider: 'speech-test', retryable: true });
      expect((error as EngineError).upstream).toMatch(message);
    }
  });

  it('never puts credentials from the base URL into messages', () => {
    const error = client.translate(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })) as EngineError;
    expect(client.displayURL).toBe('http://127.0.0.1:9/v1');
    expect(error.upstream).toBe('Speech engine at http://127.0.0.1:9/v1 is unreachable (ECONNREFUSED).');
  });

  it('returns the abort reason when the signal fired', () => {
    const reason = new Error('stop');
    expect(client.translate(new Error('aborted'), AbortSignal.abort(reason))).toBe(reason);
  });

  it('reads the human message from the common error body shapes', () => {
    expect(upstreamMessage('{"error":{"message":"model is loading","type":"unavailable_error","code":503}}')).toBe('model is loading');
    expect(upstreamMessage('{"error":"model not found"}')).toBe('model not found');
    expect(upstreamMessage('{"detail":"Voice not found"}')).toBe('Voice not found');
    expect(upstreamMessage('  upstream timed out \n')).toBe('upstream timed out');
    expect(upstreamMessage('x'.repeat(1000))).toHaveLength(301);
  });
});
