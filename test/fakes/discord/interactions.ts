/**
 * Interactions the test started: their tokens, how (and whether) the bot acknowledged them, and
 * every response made through their webhook. `response` promises settle on the first callback,
 * or with null when the bot lets Discord's 3-second window pass ("The application did not respond").
 */
import type { InteractionType } from 'discord-api-types/v10';

/** The bot's acknowledgement of an interaction (`POST /interactions/{id}/{token}/callback`). */
export interface InteractionCallbackRecord {
  /** Callback type: 4 reply, 5 defer, 6 deferred update, 7 update, 8 autocomplete, 9 modal. */
  type: number;
  /** The callback's `data` as sent (for type 8, `{choices}`). */
  data: unknown;
  /** The message the callback created or updated, if any. */
  messageId: string | null;
  /** Fake clock, epoch ms. */
  timestamp: number;
}

/** One thing the bot did with an interaction. */
export interface InteractionResponseRecord {
  kind: 'callback' | 'original-edit' | 'original-delete' | 'followup' | 'followup-edit' | 'followup-delete';
  callbackType: number | null;
  body: unknown;
  messageId: string | null;
  timestamp: number;
}

export interface InteractionRecord {
  id: string;
  token: string;
  type: InteractionType;
  applicationId: string;
  guildId: string | null;
  channelId: string;
  userId: string;
  /** Command name, shown in the deprecated `message.interaction.name`. */
  commandName: string;
  createdAt: number;
  /** Fake clock, epoch ms: after this the webhook routes answer 401/50027 (15 minutes unless a test expires it early). */
  tokenExpiresAt: number;
  callback: InteractionCallbackRecord | null;
  /** What `@original` means: the reply, or for components the message the component is on. */
  originalMessageId: string | null;
  /** For component interactions, the message the button or menu belongs to. */
  sourceMessageId: string | null;
  followupIds: Set<string>;
  responses: InteractionResponseRecord[];
}

export class InteractionRegistry {
  readonly #byId = new Map<string, InteractionRecord>();
  readonly #byToken = new Map<string, InteractionRecord>();
  readonly #waiters = new Map<string, { resolve: (callback: InteractionCallbackRecord | null) => void; timer: NodeJS.Timeout }>();
  readonly #callbackWindowMs: number;

  constructor(callbackWindowMs: number) {
    this.#callbackWindowMs = callbackWindowMs;
  }

  /** Keeps an interaction; the promise settles with its callback, or null after the window. */
  register(record: InteractionRecord): Promise<InteractionCallbackRecord | null> {
    this.#byId.set(record.id, record);
    this.#byToken.set(record.token, record);
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.#settle(record.id, null), this.#callbackWindowMs);
      timer.unref();
      this.#waiters.set(record.id, { resolve, timer });
    });
  }

  byId(id: string): InteractionRecord | undefined {
    return this.#byId.get(id);
  }

  byToken(token: string): InteractionRecord | undefined {
    return this.#byToken.get(token);
  }

  acknowledge(record: InteractionRecord, callback: InteractionCallbackRecord): void {
    record.callback = callback;
    this.addResponse(record, { kind: 'callback', callbackType: callback.type, body: callback.data, messageId: callback.messageId, timestamp: callback.timestamp });
    this.#settle(record.id, callback);
  }

  addResponse(record: InteractionRecord, response: InteractionResponseRecord): void {
    record.responses.push(response);
  }

  /** Settles every pending promise with null; for shutdown. */
  close(): void {
    for (const id of [...this.#waiters.keys()]) this.#settle(id, null);
  }

  #settle(id: string, callback: InteractionCallbackRecord | null): void {
    const waiter = this.#waiters.get(id);
    if (waiter === undefined) return;
    clearTimeout(waiter.timer);
    this.#waiters.delete(id);
    waiter.resolve(callback);
  }
}
