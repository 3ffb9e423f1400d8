/** Helpers shared by the speech engine tests. */
import { expect } from 'vitest';
import { EngineError, ValidationError } from '../../src/core/errors.js';
import type { PcmAudio } from '../../src/core/ports.js';

/** Every piece of a stream; a failure is thrown with the pieces received before it as `pieces`. */
export async function collect(pieces: AsyncIterable<PcmAudio>): Promise<PcmAudio[]> {
  const collected: PcmAudio[] = [];
  try {
    for await (const piece of pieces) collected.push(piece);
  } catch (thrown) {
    if (thrown instanceof Error) Object.assign(thrown, { pieces: collected });
    throw thrown;
  }
  return collected;
}

/** The error a promise rejects with, failing the test when it resolves or fails otherwise. */
export async function failureOf<T extends Error>(promise: Promise<unknown>, type: abstract new (...parameters: never[]) => T): Promise<T & { pieces?: PcmAudio[] }> {
  const outcome = await promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ rejected: error }),
  );
  if (!('rejected' in outcome)) throw new Error(`expected a failure, got ${JSON.stringify(outcome.resolved)}`);
  expect(outcome.rejected).toBeInstanceOf(type);
  return outcome.rejected as T;
}

export const engineFailure = (promise: Promise<unknown>): Promise<EngineError & { pieces?: PcmAudio[] }> => failureOf(promise, EngineError);
export const validationFailure = (promise: Promise<unknown>): Promise<ValidationError> => failureOf(promise, ValidationError);

/** Total samples of the pieces. */
export function sampleCount(pieces: readonly PcmAudio[]): number {
  return pieces.reduce((total, piece) => total + piece.samples.length, 0);
}
