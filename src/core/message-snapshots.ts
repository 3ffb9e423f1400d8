import { LRUCache } from 'lru-cache';
import type { MessageSnapshot, StoredMessage } from './repositories.js';

export interface MessageSnapshotOptions {
  /** Roughly how many bytes of message text the snapshots kept in memory may hold together. */
  maxBytes?: number;
}

interface Kept {
  lastPosition: number | null;
  newestRevision: string | null;
  messages: readonly StoredMessage[];
}

/** What a message costs in memory beyond its text: ids, times and the object itself. */
const messageOverheadBytes = 300;

/**
 * The newest message snapshot read of each conversation, kept while the conversation's last
 * position and newest revision stay the same: a snapshot is fixed by them (see `MessageSnapshot`), so
 * this holds only what cannot change and every read still asks the database for the position.
 * Snapshots and their messages are frozen and a message read again keeps its object, so front
 * ends may memoise what they build from them.
 */
export class MessageSnapshots {
  readonly #kept: LRUCache<string, Kept>;

  constructor(
    private readonly load: (conversationId: string) => Promise<MessageSnapshot>,
    options: MessageSnapshotOptions = {},
  ) {
    this.#kept = new LRUCache<string, Kept>({
      maxSize: options.maxBytes ?? 32 * 1024 * 1024,
      sizeCalculation: (kept) => snapshotBytes(kept.messages),
    });
  }

  /** The conversation's messages as of `lastPosition` and `newestRevision`, or later. */
  async messages(conversationId: string, lastPosition: number | null, newestRevision: string | null = null): Promise<readonly StoredMessage[]> {
    const kept = this.#kept.get(conversationId);
    if (kept && kept.lastPosition === lastPosition && kept.newestRevision === newestRevision) return kept.messages;
    const loaded = await this.load(conversationId);
    const known = new Map(kept?.messages.map((message) => [message.id, message]));
    // A message swiped or given another alternative since is a new object; the others keep theirs.
    const same = (message: StoredMessage) => {
      const old = known.get(message.id);
      return old && old.chosenIndex === message.chosenIndex && old.alternatives.length === message.alternatives.length ? old : undefined;
    };
    const messages = Object.freeze(loaded.messages.map((message) => same(message) ?? freezeMessage(message)));
    this.#kept.set(conversationId, { lastPosition: loaded.lastPosition, newestRevision: loaded.newestRevision, messages });
    return messages;
  }
}

/** Roughly what a list of messages holds in memory. */
export function snapshotBytes(messages: readonly StoredMessage[]): number {
  const alternativesLength = (message: StoredMessage) => (message.alternatives.length > 1 ? message.alternatives.reduce((sum, each) => sum + each.content.length, 0) : 0);
  return messages.reduce((sum, message) => sum + message.content.length + alternativesLength(message) + messageOverheadBytes, 1);
}

function freezeMessage(message: StoredMessage): StoredMessage {
  if (message.file) Object.freeze(message.file);
  for (const alternative of message.alternatives) Object.freeze(alternative);
  Object.freeze(message.alternatives);
  return Object.freeze(message);
}
