/**
 * The `Transcriber` contract as a function every adapter's test calls (keyv's pattern), so a new
 * speech-to-text adapter cannot skip it: a real voice message in, trimmed text out; empty and
 * oversized audio refused before any request; refusals in our words, with purpose `transcription`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectAudio } from '../../src/audio/audio-input.js';
import { encodeVoiceMessage } from '../../src/audio/voice-message.js';
import { EngineError } from '../../src/core/errors.js';
import type { PcmAudio, Transcriber } from '../../src/core/ports.js';

export interface TranscriberSubject {
  transcriber: Transcriber;
  /** Scripts what the engine hears next. */
  hears(text: string): void;
  /** Scripts the engine's next answer as a failure with this status and these words. */
  failsWith(status: number, words: string): void;
  /** How many requests reached the engine so far. */
  requestCount(): number;
  close(): Promise<void>;
}

function speechLike(seconds: number): PcmAudio {
  const sampleRate = 22_050;
  const samples = Int16Array.from({ length: seconds * sampleRate }, (_, index) => Math.round(9_000 * Math.sin((2 * Math.PI * 220 * index) / sampleRate) * Math.sin((Math.PI * index) / (seconds * sampleRate))));
  return { sampleRate, samples };
}

async function engineFailure(promise: Promise<unknown>): Promise<EngineError> {
  const thrown = await promise.then(() => undefined, (error: unknown) => error);
  expect(thrown).toBeInstanceOf(EngineError);
  return thrown as EngineError;
}

export function describeTranscriberContract(name: string, start: () => Promise<TranscriberSubject>): void {
  describe(`Transcriber contract: ${name}`, () => {
    let subject: TranscriberSubject;
    beforeAll(async () => {
      subject = await start();
    });
    afterAll(async () => {
      await subject.close();
    });

    it('writes down a voice message as trimmed text', async () => {
      const message = await encodeVoiceMessage(speechLike(2));
      const input = inspectAudio(message.file);
      subject.hears('  I would like a cup of tea.\n');
      const result = await subject.transcriber.transcribe({ audio: message.file, mimeType: input.mimeType, filename: input.filename });
      expect(result.text).toBe('I would like a cup of tea.');
      if (result.language !== undefined) expect(result.language).toMatch(/^[a-z]{2,3}$/);
      if (result.durationSeconds !== undefined) expect(result.durationSeconds).toBeGreaterThanOrEqual(0);
    });

    it('names itself and its limit', () => {
      expect(subject.transcriber.provider).not.toBe('');
      expect(subject.transcriber.maxAudioBytes).toBeGreaterThan(0);
    });

    it('refuses empty and oversized audio without asking the engine', async () => {
      const before = subject.requestCount();
      const empty = await engineFailure(subject.transcriber.transcribe({ audio: new Uint8Array(0), mimeType: 'audio/ogg', filename: 'voice-message.ogg' }));
      expect(empty.purpose).toBe('transcription');
      const oversized = new Uint8Array(subject.transcriber.maxAudioBytes + 1);
      oversized.set([0x4f, 0x67, 0x67, 0x53]);
      const large = await engineFailure(subject.transcriber.transcribe({ audio: oversized, mimeType: 'audio/ogg', filename: 'voice-message.ogg' }));
      expect(large.retryable).toBe(false);
      expect(subject.requestCount()).toBe(before);
    });

    it('fails in our words, with the engine\'s kept for the log', async () => {
      const message = await encodeVoiceMessage(speechLike(1));
      subject.failsWith(500, 'CUDA out of memory at /home/whisper while reading secret.ogg');
      const error = await engineFailure(subject.transcriber.transcribe({ audio: message.file, mimeType: 'audio/ogg', filename: 'voice-message.ogg' }));
      expect(error.purpose).toBe('transcription');
      expect(error.message).toMatch(/^The transcription engine /);
      expect(error.message).not.toMatch(/CUDA|whisper|secret/);
      expect(error.upstream).toMatch(/CUDA out of memory/);
    });
  });
}
