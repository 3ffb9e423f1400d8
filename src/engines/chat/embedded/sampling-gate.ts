/**
 * Keeps every reply's tokens its own when several sequences are sampled after one batch.
 *
 * The cause (issue 29): a context with several sequences keeps one KV stream per sequence, so
 * llama.cpp splits a batch into micro-batches of consecutive sequences with equal token counts
 * (`split_equal`). When a new prompt is evaluated beside other replies' next tokens, or the
 * sequences sit in the batch out of order, the outputs come back in another order than the
 * batch's, and llama.cpp records the swaps that put them back, to apply them lazily on the
 * first read of the logits (`output_reorder`, run by `llama_get_logits*`). node-llama-cpp
 * (3.21.1, and its main branch in 2026-06) samples each sequence on its own libuv worker, all
 * at once; each worker's first read runs that reorder, unguarded, on the same buffers. Two
 * workers swapping the same rows leave them unswapped, and a sequence samples from another's
 * logits: "…gull9 reef9 shore9…" beside "…tide9 tide9…".
 *
 * The workaround: the first sampling after each batch runs alone (it applies the reorder and
 * clears the list); the others start once it is done and then only read. Replies cost one
 * sampling's time per step in sequence, not a batch's.
 */
import type { LlamaContext } from 'node-llama-cpp';

/** The binding's native context, as far as this gate needs it (node-llama-cpp's internal `_ctx`). */
interface NativeContext {
  decodeBatch(...args: unknown[]): Promise<unknown>;
  sampleToken(...args: unknown[]): Promise<unknown>;
}

/** Wraps the context's native decode and sample so that no two samplings run the reorder together. */
export function gateSampling(context: LlamaContext): void {
  const native = (context as unknown as { _ctx?: Partial<NativeContext> })._ctx;
  if (typeof native?.decodeBatch !== 'function' || typeof native.sampleToken !== 'function') {
    throw new Error('node-llama-cpp changed its context internals: the sampling gate (issue 29) needs review before this version is used');
  }
  const decode = native.decodeBatch.bind(native);
  const sample = native.sampleToken.bind(native);
  /** Whether the last batch's outputs have not been read yet (their reorder is still pending). */
  let unread = false;
  /** The first sampling after the last batch, which the others wait for. */
  let first: Promise<unknown> = Promise.resolve();
  // The binding's methods are read-only on its prototype: an own property of this instance shadows them.
  Object.defineProperty(native, 'decodeBatch', {
    configurable: true,
    value: async (...args: unknown[]) => {
      const result = await decode(...args);
      unread = true;
      return result;
    },
  });
  Object.defineProperty(native, 'sampleToken', {
    configurable: true,
    value: (...args: unknown[]) => {
      if (unread) {
        unread = false;
        const sampled = sample(...args);
        first = sampled.catch(() => undefined);
        return sampled;
      }
      return first.then(() => sample(...args));
    },
  });
}
