/**
 * What people do with what characters learned: a person sees, corrects and deletes what any
 * character remembers about them, and turns learning off; a character's owner reviews the
 * character's own proposed memories. What is about a person is theirs: the character's owner
 * never reads it (memory-scope.ts, rule 5).
 */
import type { Actor } from '../actor.js';
import type { Characters } from '../characters.js';
import { AppError, ValidationError, notFound } from '../errors.js';
import { mayRead } from '../memory-scope.js';
import type { Clock, IdGenerator } from '../ports.js';
import type { Conversations } from '../conversations.js';
import type { LearnedMemoryRecord, MemoryRecord } from '../records.js';
import type { Repositories, RepositoryStore } from '../repositories.js';
import { type LearningChoice, LearningSettings } from './learning-settings.js';

const maxTextLength = 300;

/** A memory a reply was written with: one its owner wrote, one learned of its owner (`own`), or of the person (`person`). */
export interface UsedMemory {
  id: string;
  kind: 'written' | 'own' | 'person';
  text: string;
}

/** A character's own memory as its owner reviews it: with the approved one it would replace, if any. */
export type ReviewedMemory = LearnedMemoryRecord & { replacing?: Pick<LearnedMemoryRecord, 'id' | 'text'> };

export class LearnedMemories {
  readonly settings: LearningSettings;

  constructor(
    private readonly store: RepositoryStore,
    private readonly characters: Characters,
    private readonly conversations: Conversations,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    /** Hears the ids of memories deleted for good, so what recall derived from them goes too. */
    private readonly onForgotten: (memoryIds: readonly string[]) => void = () => {},
  ) {
    this.settings = new LearningSettings(store);
  }

  /** What characters (or one) learned about the caller, still true and replaced, newest first. */
  async aboutMe(actor: Actor, options: { characterId?: string | undefined } = {}): Promise<LearnedMemoryRecord[]> {
    return this.store.learnedMemories.about(personOf(actor), options);
  }

  /** The person's own words replace what a character learned about them; the old one is kept as replaced. */
  async correct(actor: Actor, memoryId: string, text: string): Promise<LearnedMemoryRecord> {
    const old = await this.#mine(actor, memoryId);
    if (old.status !== 'active') throw new AppError('CONFLICT', 'Only a memory still in use can be corrected; this one was already replaced.');
    const now = this.clock.nowMicros();
    const replacement: LearnedMemoryRecord = { ...old, id: this.ids.uuid(), text: checkText(text), messageIds: [], statedMicros: now, createdMicros: now, updatedMicros: now, importance: old.importance };
    return this.store.learnedMemories.supersede(old.id, replacement, now);
  }

  /** Deletes for good one memory about the caller, all one character holds, or all of them; answers how many. */
  async forget(actor: Actor, filter: { memoryId?: string | undefined; characterId?: string | undefined } = {}): Promise<number> {
    if (filter.memoryId !== undefined) await this.#mine(actor, filter.memoryId);
    // Those that may go (a memory's chain is among them): evicting one that stays costs only a recompute.
    const scope = (await this.store.learnedMemories.about(personOf(actor), { characterId: filter.characterId })).map((memory) => memory.id);
    const deleted = await this.store.learnedMemories.deleteAbout(personOf(actor), filter);
    this.onForgotten(scope);
    return deleted;
  }

  learningChoice(actor: Actor): Promise<LearningChoice> {
    return this.settings.choice(personOf(actor));
  }

  /** Off: nothing more is learned from the caller's messages (everywhere, or with those characters). */
  setLearningChoice(actor: Actor, choice: Pick<LearningChoice, 'off' | 'offForCharacterIds'>): Promise<LearningChoice> {
    return this.settings.setChoice(personOf(actor), choice, this.clock.nowMicros());
  }

  /**
   * The character's own memories awaiting its owner, each with the approved memory it would
   * replace; with `all`, the approved, rejected and replaced ones too.
   */
  async proposed(actor: Actor, characterId: string, all = false): Promise<ReviewedMemory[]> {
    await this.characters.getOwned(actor, characterId, 'read');
    const memories = await this.store.learnedMemories.own(characterId, all ? ['pending', 'active', 'rejected', 'superseded'] : ['pending']);
    const byId = new Map(memories.map((memory) => [memory.id, memory]));
    return Promise.all(
      memories.map(async (memory): Promise<ReviewedMemory> => {
        if (memory.status !== 'pending' || memory.replaces === undefined) return memory;
        const replaced = byId.get(memory.replaces) ?? (await this.store.learnedMemories.get(memory.replaces));
        // Withdrawn or replaced meanwhile: approving it replaces nothing.
        return replaced?.status === 'active' ? { ...memory, replacing: { id: replaced.id, text: replaced.text } } : memory;
      }),
    );
  }

  /** A character's own proposed memory by id (its owner's actions on it check ownership). */
  async proposal(memoryId: string): Promise<LearnedMemoryRecord | undefined> {
    const memory = await this.store.learnedMemories.get(memoryId);
    return memory?.kind === 'own' ? memory : undefined;
  }

  /**
   * The owner approves a proposed memory as written or in their words: from then on the
   * character uses it, and the approved memory it contradicts is superseded (kept with the
   * time it stopped being true, no longer used).
   */
  async approve(actor: Actor, characterId: string, memoryId: string, text?: string): Promise<LearnedMemoryRecord> {
    const memory = await this.#proposal(actor, characterId, memoryId);
    const now = this.clock.nowMicros();
    const approve = async (repositories: Repositories, id: string) => {
      const approved = await repositories.learnedMemories.approve(id, now);
      if (!approved) throw new AppError('CONFLICT', 'This memory was reviewed meanwhile, or these words were refused before.');
      return approved;
    };
    if (text === undefined || text.trim() === memory.text) return approve(this.store, memory.id);
    // The proposal's own words are refused (never proposed again); the owner's stand in for them.
    const words = checkText(text);
    return this.store.transaction(async (repositories) => {
      await repositories.learnedMemories.setStatus(memory.id, 'rejected', now);
      const { memory: added } = await repositories.learnedMemories.add({ ...memory, id: this.ids.uuid(), text: words, status: 'pending', createdMicros: now, updatedMicros: now });
      return approve(repositories, added.id);
    });
  }

  /** The owner refuses a proposed memory, or withdraws an approved one: never used, never proposed again. */
  async reject(actor: Actor, characterId: string, memoryId: string): Promise<void> {
    const memory = await this.#proposal(actor, characterId, memoryId, ['pending', 'active']);
    await this.store.learnedMemories.setStatus(memory.id, 'rejected', this.clock.nowMicros());
  }

  /** Whether the owner's own facts are proposed as the character's memories (on by default). */
  async learnsFromOwner(actor: Actor, characterId: string): Promise<boolean> {
    await this.characters.getOwned(actor, characterId, 'read');
    return this.settings.learnsFromOwner(characterId);
  }

  async setLearnsFromOwner(actor: Actor, characterId: string, on: boolean): Promise<void> {
    await this.characters.getOwned(actor, characterId);
    await this.settings.setLearnsFromOwner(characterId, on);
  }

  /**
   * The memories a reply was written with, as far as the caller may read them: what it knew of
   * them, and, for the character's owner, its own and written memories. The caller must be able
   * to read the conversation.
   */
  async usedBy(actor: Actor, conversationId: string, messageId: string): Promise<UsedMemory[]> {
    await this.conversations.get(actor, conversationId);
    const reply = await this.conversations.find(conversationId, messageId);
    if (!reply) throw notFound('Message', messageId);
    const ids = await this.store.replyMemories.of(messageId);
    if (ids.length === 0 || reply.participantType !== 'character') return [];
    const character = await this.store.characters.get(reply.participantId);
    const reader = actor.type === 'account' ? actor.accountId : undefined;
    const ownerReads = character !== undefined && (reader === undefined || reader === character.accountId);
    const written = ownerReads ? new Map((await this.store.memories.list(reply.participantId)).map((memory) => [memory.id, memory])) : new Map<string, MemoryRecord>();
    const used: UsedMemory[] = [];
    for (const id of ids) {
      const writtenMemory = written.get(id);
      if (writtenMemory) {
        used.push({ id, kind: 'written', text: writtenMemory.text });
        continue;
      }
      const learned = await this.store.learnedMemories.get(id);
      if (!learned || !character) continue;
      const readable = reader === undefined ? learned.kind === 'own' : mayRead(learned, reader, character.accountId);
      if (readable) used.push({ id, kind: learned.kind, text: learned.text });
    }
    return used;
  }

  /** A memory about the caller, or NOT_FOUND (one about someone else is not theirs to see). */
  async #mine(actor: Actor, memoryId: string): Promise<LearnedMemoryRecord> {
    const memory = await this.store.learnedMemories.get(memoryId);
    if (!memory || !mayRead(memory, personOf(actor), '') || memory.kind !== 'person') throw notFound('Memory', memoryId);
    return memory;
  }

  async #proposal(actor: Actor, characterId: string, memoryId: string, statuses: readonly LearnedMemoryRecord['status'][] = ['pending']): Promise<LearnedMemoryRecord> {
    await this.characters.getOwned(actor, characterId);
    const memory = await this.store.learnedMemories.get(memoryId);
    if (!memory || memory.characterId !== characterId || memory.kind !== 'own') throw notFound('Memory', memoryId);
    if (!statuses.includes(memory.status)) throw new AppError('CONFLICT', `This memory was already ${memory.status === 'active' ? 'approved' : memory.status}.`);
    return memory;
  }
}

/** Memories about a person are asked for by that person; the admin has no "about me". */
function personOf(actor: Actor): string {
  if (actor.type !== 'account') throw new AppError('FORBIDDEN', 'What characters learned about a person is for that person: ask with their key.');
  return actor.accountId;
}

function checkText(text: string): string {
  const trimmed = text.trim();
  if (trimmed.length === 0 || trimmed.length > maxTextLength) throw ValidationError.field('text', `must be 1 to ${maxTextLength} characters`);
  return trimmed;
}
