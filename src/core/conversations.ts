import type { Actor } from './actor.js';
import { type Characters, canSee } from './characters.js';
import { AppError, ValidationError, notFound } from './errors.js';
import { keys } from './keys.js';
import type { Clock, IdGenerator, Store } from './ports.js';
import type { AccountRecord, CharacterRecord, ConversationRecord, MessageRecord } from './records.js';

/** A conversation as front ends show it: who speaks, and when it last changed. */
export interface ConversationView {
  conversation: ConversationRecord;
  character: CharacterRecord;
  accounts: AccountRecord[];
  /** The later of the conversation's own change and its newest message. */
  updatedMicros: number;
}

export type NewMessage = Omit<MessageRecord, 'id' | 'createdMicros'>;

/** Conversations between accounts and a character, and their append-only message lists. */
export class Conversations {
  constructor(
    private readonly store: Store,
    private readonly characters: Characters,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
  ) {}

  /** Opens a conversation of `accountId` with a character that account may see. */
  async create(actor: Actor, accountId: string, characterId: string): Promise<ConversationRecord> {
    if (actor.type === 'account' && actor.accountId !== accountId) {
      throw new AppError('FORBIDDEN', 'An account may open conversations only for itself.');
    }
    const account = await this.store.get<AccountRecord>(keys.account(accountId));
    if (!account) throw ValidationError.field('accountId', `account ${accountId} does not exist`);
    const character = await this.store.get<CharacterRecord>(keys.character(characterId));
    if (!character || !canSee({ type: 'account', accountId }, character)) {
      throw ValidationError.field('characterId', `character ${characterId} does not exist or is not public`);
    }
    const now = this.clock.nowMicros();
    const conversation: ConversationRecord = {
      id: this.ids.uuid(),
      accountId,
      characterId,
      speakerAccountIds: [accountId],
      createdMicros: now,
      updatedMicros: now,
    };
    await this.store.set(keys.conversation(conversation.id), conversation);
    await this.store.append(keys.accountConversations(accountId), () => conversation.id);
    return conversation;
  }

  /** A conversation the actor takes part in (any, for the admin). */
  async get(actor: Actor, conversationId: string): Promise<ConversationRecord> {
    const conversation = await this.store.get<ConversationRecord>(keys.conversation(conversationId));
    if (!conversation || (actor.type === 'account' && !conversation.speakerAccountIds.includes(actor.accountId))) {
      throw notFound('Conversation', conversationId);
    }
    return conversation;
  }

  async view(conversation: ConversationRecord): Promise<ConversationView> {
    const [character, accounts, last] = await Promise.all([
      this.store.get<CharacterRecord>(keys.character(conversation.characterId)),
      this.store.getMany<AccountRecord>(conversation.speakerAccountIds.map((id) => keys.account(id))),
      this.lastMessage(conversation.id),
    ]);
    if (!character) throw notFound('Character', conversation.characterId);
    return {
      conversation,
      character,
      accounts: accounts.filter((account): account is AccountRecord => account !== undefined),
      updatedMicros: Math.max(conversation.updatedMicros, last?.createdMicros ?? 0),
    };
  }

  /** The conversations `accountId` takes part in, newest first. */
  async listFor(actor: Actor, accountId: string): Promise<ConversationRecord[]> {
    if (actor.type === 'account' && actor.accountId !== accountId) throw notFound('Account', accountId);
    const conversationIds = await this.store.range<string>(keys.accountConversations(accountId));
    const conversations = await this.store.getMany<ConversationRecord>(conversationIds.map((id) => keys.conversation(id)));
    return conversations.filter((conversation): conversation is ConversationRecord => conversation !== undefined).reverse();
  }

  messages(conversationId: string, start?: number, end?: number): Promise<MessageRecord[]> {
    return this.store.range<MessageRecord>(keys.messages(conversationId), start, end);
  }

  bounds(conversationId: string): Promise<{ start: number; end: number }> {
    return this.store.bounds(keys.messages(conversationId));
  }

  async lastMessage(conversationId: string): Promise<MessageRecord | undefined> {
    const { start, end } = await this.bounds(conversationId);
    if (end <= start) return undefined;
    const [last] = await this.messages(conversationId, end - 1, end);
    return last;
  }

  /** Appends a message; its id and creation time are given under the list's lock, so order is by creation. */
  appendMessage(conversationId: string, message: NewMessage): Promise<MessageRecord> {
    return this.store.append<MessageRecord>(keys.messages(conversationId), () => ({
      ...message,
      id: this.ids.uuid(),
      createdMicros: this.clock.nowMicros(),
    }));
  }

  /** Deletes every message of the conversation. */
  async clear(actor: Actor, conversationId: string): Promise<void> {
    await this.get(actor, conversationId);
    await this.store.withLock(keys.conversation(conversationId), async () => {
      await this.store.clear(keys.messages(conversationId));
      // The summary speaks of what was cleared.
      await this.store.delete(keys.conversationSummary(conversationId));
      const current = await this.get(actor, conversationId);
      await this.store.set(keys.conversation(conversationId), { ...current, updatedMicros: this.clock.nowMicros() });
    });
  }

  /**
   * Lets another account speak in the conversation (several people in one thread). The admin
   * or any account already speaking may add one; the new speaker then sees the whole history.
   */
  async addSpeaker(actor: Actor, conversationId: string, accountId: string): Promise<ConversationRecord> {
    return this.store.withLock(keys.conversation(conversationId), async () => {
      const conversation = await this.get(actor, conversationId);
      if (conversation.speakerAccountIds.includes(accountId)) return conversation;
      if (!(await this.store.get(keys.account(accountId)))) throw ValidationError.field('accountId', `account ${accountId} does not exist`);
      const updated = { ...conversation, speakerAccountIds: [...conversation.speakerAccountIds, accountId] };
      await this.store.set(keys.conversation(conversationId), updated);
      await this.store.append(keys.accountConversations(accountId), () => conversationId);
      return updated;
    });
  }
}

/**
 * Messages as people should read them: a reply that a later, regenerated reply `replaces` is
 * left out (the list is append-only, so the old reply stays stored). `alsoReplaced` names a
 * reply being replaced right now, before its successor is stored.
 */
export function withoutReplaced<T extends MessageRecord>(messages: readonly T[], alsoReplaced?: string): T[] {
  const replaced = new Set(messages.flatMap((message) => (message.replaces === undefined ? [] : [message.replaces])));
  if (alsoReplaced !== undefined) replaced.add(alsoReplaced);
  return replaced.size === 0 ? [...messages] : messages.filter((message) => !replaced.has(message.id));
}
