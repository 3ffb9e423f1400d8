/**
 * The one error a model file can fail with. Its message is written for the person running the
 * service: it says what to change (LLM_MODEL, HF_TOKEN, HF_ENDPOINT, the network) rather than
 * what went wrong inside.
 */

/** Why the model file could not be had. */
export type ModelFileErrorCode =
  /** The local path, the repository, the file or the quant does not exist. */
  | 'MODEL_NOT_FOUND'
  /** The host answered but the file did not arrive whole (refused, gated, cut too often, wrong size, disk full). */
  | 'MODEL_DOWNLOAD_FAILED'
  /** The host could not be reached, or accepted the connection and never answered. */
  | 'MODEL_HOST_UNREACHABLE'
  /** `LLM_MODEL` is in none of the accepted forms, names an ambiguous or split file, or is not a GGUF file. */
  | 'MODEL_INVALID';

export class ModelFileError extends Error {
  override readonly name = 'ModelFileError';
  readonly code: ModelFileErrorCode;

  constructor(code: ModelFileErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }

  /** Whether trying again later may succeed by itself (the network, the host), with nothing changed. */
  get transient(): boolean {
    return this.code === 'MODEL_HOST_UNREACHABLE' || this.code === 'MODEL_DOWNLOAD_FAILED';
  }
}
