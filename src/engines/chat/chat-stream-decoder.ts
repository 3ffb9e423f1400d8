/**
 * Turns the text of an OpenAI-compatible `text/event-stream` body into chat stream parts.
 * SSE framing (blank-line separated events, `\r`, `:` keep-alive comments, `event:` lines) is
 * left to eventsource-parser; this file knows which events OpenAI, llama-server and Ollama send.
 * Nothing is keyed on chunk ids: Ollama repeats them.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { EngineError, EngineFailureReason } from '../../core/errors.js';
import type { ChatStreamPart, ChatUsage } from '../../core/ports.js';
import { truncate } from '../http.js';
import { chatFailureReason, contentOf, errorOf, field, finishReasonOf, firstChoice, truncatedOf, usageOf, type WireError } from './openai-wire.js';

/**
 * Builds the error to throw; `status` is set when the engine named one, `reason` when its
 * words are a refusal the core acts on, read as from an error answer's body.
 */
export type StreamFailure = (message: string, options: { status?: number; retryable?: boolean; reason?: EngineFailureReason }) => EngineError;

export type FinishPart = Extract<ChatStreamPart, { type: 'finish' }>;

export interface ChatStreamDecoder {
  /**
   * Feeds raw body text; returns the non-empty text deltas it completed, in order. A failure
   * event stops decoding; the text before it is still returned, then `failure` is set.
   */
  feed(text: string): string[];
  /** Flushes an event the server left without its closing blank line. */
  end(): string[];
  /** The failure the engine reported, or the malformed event seen; nothing follows it. */
  readonly failure: EngineError | undefined;
  /** True once `data: [DONE]` arrived; later text is ignored. */
  readonly done: boolean;
  /** The last `finish_reason` seen, if any. */
  readonly finishReason: string | undefined;
  /** The closing part; throws when the stream stopped before it was complete. */
  finish(): FinishPart;
}

type Item = { kind: 'event'; event: EventSourceMessage } | { kind: 'failure'; error: WireError; body: string };

/** An SSE event may not exceed this; a chat delta is a few hundred bytes. */
const MAXIMUM_EVENT_CHARACTERS = 8 * 1024 * 1024;

export function createChatStreamDecoder(fail: StreamFailure): ChatStreamDecoder {
  const items: Item[] = [];
  let done = false;
  let finishReason: string | undefined;
  let usage: ChatUsage | undefined;
  let truncated = false;
  let failure: EngineError | undefined;

  const parser = createParser({
    maxBufferSize: MAXIMUM_EVENT_CHARACTERS,
    onEvent: (event) => items.push({ kind: 'event', event }),
    onError: (error) => {
      // Older llama-server builds report failures as a bare `error: {...}` line, which is not
      // an SSE field; the parser hands it over as an unknown field.
      if (error.type === 'unknown-field' && error.field === 'error') {
        items.push({ kind: 'failure', error: legacyError(error.value ?? ''), body: error.value ?? '' });
      } else if (error.type === 'max-buffer-size-exceeded') {
        items.push({ kind: 'failure', error: { message: 'an event larger than 8 MiB' }, body: '' });
      }
    },
  });

  /**
   * A failure the engine reported inside a 200 stream is read as one it answered by status:
   * llama-server (b4748) refuses a streamed prompt longer than its slot only this way.
   */
  function engineFailure(error: WireError, body: string): EngineError {
    const reason = chatFailureReason(error.status ?? 500, body);
    return fail(`Chat engine failed mid-answer: ${error.message}`, {
      ...(error.status === undefined ? {} : { status: error.status }),
      ...(reason === undefined ? {} : { reason }),
    });
  }

  function drain(): string[] {
    const texts: string[] = [];
    for (const item of items) {
      if (done || failure !== undefined) break;
      if (item.kind === 'failure') {
        failure = engineFailure(item.error, item.body);
        break;
      }
      try {
        const text = handle(item.event);
        if (text !== '') texts.push(text);
      } catch (thrown) {
        failure = thrown as EngineError;
      }
    }
    items.length = 0;
    return texts;
  }

  function handle(event: EventSourceMessage): string {
    const data = event.data.trim();
    if (data === '[DONE]') {
      done = true;
      return '';
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw fail(`Chat engine sent a malformed stream event: ${truncate(data, 120)}`, { retryable: false });
    }
    const error = errorOf(chunk) ?? (event.event === 'error' ? { message: truncate(data) } : undefined);
    if (error !== undefined) throw engineFailure(error, data);
    // llama-server's include_usage chunk has `choices: []`; OpenAI's has `usage: null` elsewhere.
    usage = usageOf(chunk) ?? usage;
    truncated ||= truncatedOf(chunk);
    const choice = firstChoice(chunk);
    finishReason = finishReasonOf(choice) ?? finishReason;
    // `reasoning_content` (llama-server) and `reasoning` (Ollama) deltas are not reply text.
    return contentOf(field(choice, 'delta'));
  }

  return {
    feed(text) {
      if (done || failure !== undefined) return [];
      parser.feed(text);
      return drain();
    },
    end() {
      if (done || failure !== undefined) return [];
      parser.feed('\n\n');
      return drain();
    },
    get done() {
      return done;
    },
    get failure() {
      return failure;
    },
    get finishReason() {
      return finishReason;
    },
    finish() {
      if (failure !== undefined) throw failure;
      // The notes: a stream may lack [DONE] if it gave a finish_reason, but not both.
      if (!done && finishReason === undefined) {
        throw fail('Chat engine stream ended before [DONE] without a finish reason.', { retryable: true });
      }
      const part: FinishPart = { type: 'finish', finishReason: finishReason ?? 'unknown' };
      if (usage !== undefined) part.usage = usage;
      if (truncated) part.truncated = true;
      return part;
    },
  };
}

function legacyError(value: string): WireError {
  try {
    const found = errorOf({ error: JSON.parse(value) as unknown });
    if (found !== undefined) return found;
  } catch {
    // Not JSON: the raw value is the message.
  }
  return { message: truncate(value.trim()) || 'unknown error' };
}
