import type { LearningExclusion, LearningGate } from './learning/learning-gate.js';
import type { Actor } from './actor.js';
import { type Characters, canSee, characterDeleted, refuseUnlessItMaySpeak } from './characters.js';
import { AppError, ValidationError, notFound } from './errors.js';
import type { Clock, IdGenerator } from './ports.js';
import type { AccountRecord, CharacterRecord, ConversationRecord, MessageRecord } from './records.js';
import { ChangeTokenMemo } from './change-token-memo.js';
import { characterMacroName, defaultUserName, expandMacros } from './macros.js';
import { MessageSnapshots, snapshotBytes } from './message-snapshots.js';
import type { MessageRange, Repositories, RepositoryStore, StoredConversation, StoredMessage } from './repositories.js';

/** A conversation as front ends show it: who speaks, and when it last changed. */
export interface ConversationView {
  conversation: ConversationRecord;
  /** The character the conversation is with. */
  character: CharacterRecord;
  /** Every character of the scene in join order, `character` first. */
  characters: CharacterRecord[];
  accounts: AccountRecord[];
  /** The later of the conversation's own change and its newest message. */
  updatedMicros: number;
}

export type NewMessage = Omit<MessageRecord, 'id' | 'createdMicros'>;

/** A conversation as a reader sees it: who speaks, the summary of older messages, and the messages. */
export interface ConversationRead {
  view: ConversationView;
  summary: string | null;
  /** Oldest first, each with its alternatives; frozen, and the same objects while unchanged. */
  messages: readonly StoredMessage[];
}

/** Conversations between accounts and a character, and their messages in the database's order. */
export class Conversations {
  readonly #snapshots: MessageSnapshots;
  /** Whole reads, while nothing in the database changed; each request still asks. */
  readonly #reads: ChangeTokenMemo<ConversationRead | undefined>;

  constructor(
    private readonly store: RepositoryStore,
    private readonly characters: Characters,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
  ) {
    this.#snapshots = new MessageSnapshots((conversationId) => store.conversations.snapshot(conversationId));
    this.#reads = new ChangeTokenMemo(() => store.changeToken(), {
      max: 1_000,
      maxSize: 32 * 1024 * 1024,
      sizeOf: (read) => (read ? snapshotBytes(read.messages) : 1),
    });
  }

  /**
   * Opens a conversation of `accountId` with a character that account may see. It opens with
   * the character's greeting (its first message, the alternate greetings as its alternatives,
   * macros resolved with the names of this conversation) unless `greet` is false (a server
   * channel's shared conversation, which nobody opened); `greeting` is that message.
   */
  async create(actor: Actor, accountId: string, characterId: string, options: { greet?: boolean } = {}): Promise<ConversationRecord & { greeting?: StoredMessage }> {
    if (actor.type === 'account' && actor.accountId !== accountId) {
      throw new AppError('FORBIDDEN', 'An account may open conversations only for itself.');
    }
    const account = await this.store.accounts.get(accountId);
    if (!account) throw ValidationError.field('accountId', `account ${accountId} does not exist`);
    const character = await this.store.characters.get(characterId);
    if (!character || !canSee({ type: 'account', accountId }, character)) {
      throw ValidationError.field('characterId', `character ${characterId} does not exist or is not public`);
    }
    if (character.deletedMicros) throw characterDeleted(character);
    const now = this.clock.nowMicros();
    const stored = await this.store.conversations.create(
      { id: this.ids.uuid(), accountId, characterId, createdMicros: now, updatedMicros: now, summary: null, summaryThroughPosition: null },
      accountId,
    );
    const conversation = conversationRecord(stored, [accountId], [characterId]);
    const texts = options.greet === false ? [] : greetingTexts(character, account.username, stored.id, 'opening');
    if (texts.length === 0) return conversation;
    return { ...conversation, greeting: await this.appendGreeting(stored.id, characterId, texts) };
  }

  /** A conversation the actor takes part in (any, for the admin). */
  async get(actor: Actor, conversationId: string): Promise<ConversationRecord> {
    const [stored, speakers, characterIds] = await Promise.all([
      this.store.conversations.get(conversationId),
      this.store.conversations.speakers(conversationId),
      this.store.conversations.characters(conversationId),
    ]);
    if (!stored || (actor.type === 'account' && !speakers.includes(actor.accountId))) {
      throw notFound('Conversation', conversationId);
    }
    return conversationRecord(stored, speakers, characterIds);
  }

  /**
   * The whole conversation for the actor, read fresh: one round trip for the conversation, its
   * character and speakers and how far its messages go, and the messages themselves only when
   * that changed since this process last read them (any process may have appended).
   */
  async read(actor: Actor, conversationId: string): Promise<ConversationRead> {
    const read = await this.#reads.get(conversationId, () => this.#readFresh(conversationId));
    if (!read || (actor.type === 'account' && !read.view.conversation.speakerAccountIds.includes(actor.accountId))) {
      throw notFound('Conversation', conversationId);
    }
    return read;
  }

  async #readFresh(conversationId: string): Promise<ConversationRead | undefined> {
    const state = await this.store.conversations.state(conversationId);
    if (!state) return undefined;
    const messages = await this.#snapshots.messages(conversationId, state.lastPosition, state.newestRevision);
    const conversation = conversationRecord(
      state.conversation,
      state.speakers.map((account) => account.id),
      state.characters.map((character) => character.id),
    );
    const read: ConversationRead = {
      view: {
        conversation,
        character: state.character,
        characters: mainFirst(state.character, state.characters),
        accounts: state.speakers,
        updatedMicros: Math.max(conversation.updatedMicros, messages.at(-1)?.createdMicros ?? 0),
      },
      summary: state.conversation.summary,
      messages,
    };
    return Object.freeze(read);
  }

  async view(conversation: ConversationRecord): Promise<ConversationView> {
    const [characters, accounts, last] = await Promise.all([
      Promise.all(conversation.characterIds.map((id) => this.store.characters.get(id))),
      Promise.all(conversation.speakerAccountIds.map((id) => this.store.accounts.get(id))),
      this.lastMessage(conversation.id),
    ]);
    // `characterIds` starts with the conversation's own character.
    const [character] = characters;
    if (!character) throw notFound('Character', conversation.characterId);
    return {
      conversation,
      character,
      characters: characters.filter((each): each is CharacterRecord => each !== undefined),
      accounts: accounts.filter((account): account is AccountRecord => account !== undefined),
      updatedMicros: Math.max(conversation.updatedMicros, last?.createdMicros ?? 0),
    };
  }

  /**
   * The conversations `accountId` takes part in, the one it joined last first, `limit` at a
   * time; `nextCursor` (absent on the last page) asks for the next.
   */
  async listFor(actor: Actor, accountId: string, page: { limit: number; cursor?: string | undefined }): Promise<{ conversations: ConversationRecord[]; nextCursor?: string }> {
    if (actor.type === 'account' && actor.accountId !== accountId) throw notFound('Account', accountId);
    if (page.cursor !== undefined && !/^\d{1,15}$/.test(page.cursor)) throw ValidationError.field('query.cursor', 'is not a cursor this API gave out');
    const listed = await this.store.conversations.listFor(accountId, page);
    const conversations = await Promise.all(
      listed.conversations.map(async (conversation) => {
        const [speakers, characterIds] = await Promise.all([this.store.conversations.speakers(conversation.id), this.store.conversations.characters(conversation.id)]);
        return conversationRecord(conversation, speakers, characterIds);
      }),
    );
    return listed.nextCursor === null ? { conversations } : { conversations, nextCursor: listed.nextCursor };
  }

  /** Messages oldest first, in the order every process agrees on. */
  messages(conversationId: string, range?: MessageRange): Promise<StoredMessage[]> {
    return this.store.conversations.messages(conversationId, range);
  }

  lastMessage(conversationId: string): Promise<StoredMessage | undefined> {
    return this.store.conversations.lastMessage(conversationId);
  }

  /** The stored summary of the conversation's older messages, if one was written. */
  async summary(conversationId: string): Promise<{ text: string; throughPosition: number } | undefined> {
    const stored = await this.store.conversations.get(conversationId);
    if (!stored || stored.summary === null || stored.summaryThroughPosition === null) return undefined;
    return { text: stored.summary, throughPosition: stored.summaryThroughPosition };
  }

  /**
   * Appends a message after every message appended before it in any process. A message nothing
   * may be learned from (`learn: false`) is marked so in the same transaction: no batch ever
   * sees it unmarked. A character's message (a reply) is stored only while the character may
   * still speak there (`refuseUnlessItMaySpeak`), checked in the transaction that stores it: one
   * made private while it wrote is not stored.
   */
  async appendMessage(conversationId: string, message: NewMessage, options: { learn?: boolean } = {}): Promise<StoredMessage> {
    const record = { ...message, id: this.ids.uuid(), createdMicros: this.clock.nowMicros() };
    // A person's message said while learning is off for them (or for everyone) is marked too.
    const excluded: LearningExclusion =
      options.learn === false ? 'all' : message.participantType === 'account' && this.learningGate ? await this.learningGate.excluded(conversationId, message.participantId) : [];
    const stored =
      excluded.length > 0 || message.participantType === 'character'
        ? await this.store.transaction(async (repositories) => {
            if (message.participantType === 'character') await mayStillSpeak(repositories, conversationId, message.participantId);
            const appended = await repositories.conversations.append(conversationId, record);
            if (excluded.length > 0) await repositories.memoryBatches.markUnlearned(appended.id, excluded === 'all' ? undefined : excluded);
            return appended;
          })
        : await this.store.conversations.append(conversationId, record);
    this.onAppended?.(stored);
    return stored;
  }

  /**
   * Appends a character's greeting, its texts (the greeting and its alternates) as its
   * alternatives, `chosenIndex` shown; the conversation goes on from that one. It is marked a
   * greeting: swiped between, never regenerated.
   */
  async appendGreeting(conversationId: string, characterId: string, texts: readonly string[], chosenIndex = 0): Promise<StoredMessage> {
    if (texts.length === 0) throw new RangeError('A message needs at least one text.');
    if (!Number.isInteger(chosenIndex) || chosenIndex < 0 || chosenIndex >= texts.length) throw new RangeError(`chosenIndex ${chosenIndex} is outside the ${texts.length} texts`);
    const id = this.ids.uuid();
    const createdMicros = this.clock.nowMicros();
    // The first alternative carries the message's own id, as a regenerated message's first does.
    const alternatives = texts.map((content, index) => ({ id: index === 0 ? id : this.ids.uuid(), content, createdMicros }));
    const record = { id, createdMicros, content: texts[chosenIndex]!, mimeType: 'text/plain', participantId: characterId, participantType: 'character' as const, file: null, greeting: true };
    const stored = await this.store.conversations.append(conversationId, texts.length > 1 ? { ...record, alternatives, chosenIndex } : record);
    this.onAppended?.(stored);
    return stored;
  }

  /**
   * Adds a newly written alternative to `characterId`'s message and chooses it; only while it
   * is the newest message (`NOT_NEWEST_REPLY`), and while that character may still speak there
   * (checked in the same transaction, as `appendMessage` does). Returns the alternative's id
   * with the message.
   */
  async addAlternative(conversationId: string, messageId: string, characterId: string, written: { content: string; finishReason?: string }): Promise<StoredMessage> {
    const alternative = { id: this.ids.uuid(), createdMicros: this.clock.nowMicros(), ...written };
    return this.store.transaction(async (repositories) => {
      await mayStillSpeak(repositories, conversationId, characterId);
      return repositories.conversations.addAlternative(conversationId, messageId, alternative);
    });
  }

  /**
   * Chooses which alternative of the conversation's newest reply it goes on from (a swipe):
   * `NOT_FOUND` for a conversation the actor is not in or a message not in it,
   * `NOT_NEWEST_REPLY` for any other message, `VALIDATION_FAILED` for an index out of range,
   * and, as for a new reply, `CHARACTER_PRIVATE` or `CHARACTER_DELETED` when its writer may no
   * longer speak there.
   */
  async chooseAlternative(actor: Actor, conversationId: string, messageId: string, index: number): Promise<StoredMessage> {
    await this.get(actor, conversationId);
    // Who wrote a message never changes: read outside the transaction, which checks them now.
    const found = await this.find(conversationId, messageId);
    return this.store.transaction(async (repositories) => {
      if (found?.participantType === 'character') await mayStillSpeak(repositories, conversationId, found.participantId);
      return repositories.conversations.chooseAlternative(conversationId, messageId, index);
    });
  }

  /** A listed message of the conversation, searching from the newest (the message asked about is usually recent). */
  async find(conversationId: string, messageId: string): Promise<StoredMessage | undefined> {
    for (let beforePosition: number | undefined; ; ) {
      const batch = await this.messages(conversationId, { newest: true, limit: 32, ...(beforePosition === undefined ? {} : { beforePosition }) });
      const found = batch.find((candidate) => candidate.id === messageId);
      if (found || batch.length === 0) return found;
      beforePosition = batch[0]!.position;
    }
  }

  /** Hears every message stored through this use case (learning notices them); never awaited. */
  onAppended: ((message: StoredMessage) => void) | undefined;

  /** Whom a person's message may never teach, asked as it is stored (none asked: it may teach all). */
  learningGate: LearningGate | undefined;

  /** Deletes every message of the conversation, and the summary that speaks of them. */
  async clear(actor: Actor, conversationId: string): Promise<void> {
    await this.get(actor, conversationId);
    await this.store.conversations.clear(conversationId, this.clock.nowMicros());
  }

  /**
   * Makes an account a speaker of the conversation (several people in one thread); it then
   * sees the whole history. Only the admin: the bot, adding a person who wrote where the
   * conversation is. An account is never added by another: it accepts an invitation
   * (`ConversationSpeakers`).
   */
  async addSpeaker(actor: Actor, conversationId: string, accountId: string): Promise<ConversationRecord> {
    if (actor.type === 'account') throw new AppError('FORBIDDEN', 'A person joins a conversation only by accepting an invitation: invite them instead.');
    const conversation = await this.get(actor, conversationId);
    if (conversation.speakerAccountIds.includes(accountId)) return conversation;
    if (!(await this.store.accounts.get(accountId))) throw ValidationError.field('accountId', `account ${accountId} does not exist`);
    await this.store.conversations.addSpeaker(conversationId, accountId, this.clock.nowMicros());
    return this.get(actor, conversationId);
  }

  /**
   * Puts another character into the conversation (a scene). The admin or any speaker may add
   * one the actor may use (its own or a public one; for the admin, one the conversation's
   * opener may use, as when opening it). Adding one already there changes nothing.
   */
  async addCharacter(actor: Actor, conversationId: string, characterId: string, options: { greet?: boolean } = {}): Promise<ConversationRecord & { greeting?: StoredMessage }> {
    const conversation = await this.get(actor, conversationId);
    if (conversation.characterIds.includes(characterId)) return conversation;
    const character = await this.store.characters.get(characterId);
    const user: Actor = actor.type === 'account' ? actor : { type: 'account', accountId: conversation.accountId };
    if (!character || !canSee(user, character)) {
      throw ValidationError.field('characterId', `character ${characterId} does not exist or is not public`);
    }
    if (character.deletedMicros) throw characterDeleted(character);
    const added = await this.store.conversations.addCharacter(conversationId, characterId, this.clock.nowMicros());
    // A character whose card has greetings for group chats greets the scene with them, once (the
    // process whose insert won), and not in a server channel's shared conversation (`greet` false).
    const greets = added && options.greet !== false;
    const opener = greets ? await this.store.accounts.get(conversation.accountId) : undefined;
    const texts = greets ? greetingTexts(character, opener?.username ?? defaultUserName, conversationId, 'scene') : [];
    const greeting = texts.length > 0 ? await this.appendGreeting(conversationId, characterId, texts) : undefined;
    const updated = await this.get(actor, conversationId);
    return greeting ? { ...updated, greeting } : updated;
  }

  /**
   * Takes a character out of the scene; its lines stay in the history. The character the
   * conversation is with cannot leave it. Removing one that is not there changes nothing.
   */
  async removeCharacter(actor: Actor, conversationId: string, characterId: string): Promise<ConversationRecord> {
    const conversation = await this.get(actor, conversationId);
    if (characterId === conversation.characterId) {
      throw new AppError('MAIN_CHARACTER_REQUIRED', 'This is the character the conversation is with; it cannot leave it. Open a new conversation to talk with another one.', {
        details: { characterId },
      });
    }
    if (!conversation.characterIds.includes(characterId)) return conversation;
    await this.store.conversations.removeCharacter(conversationId, characterId);
    return this.get(actor, conversationId);
  }

  /**
   * The character who answers in the conversation: `characterId` when given (it must be one of
   * the scene's), else the one the conversation is with; refused when it may not speak there
   * now (`refuseUnlessItMaySpeak`: deleted, or made private by an owner not taking part).
   */
  async answerer(conversation: ConversationRecord, characterId?: string): Promise<CharacterRecord> {
    const character = await this.member(conversation, characterId);
    refuseUnlessItMaySpeak(character, conversation.speakerAccountIds);
    return character;
  }

  /** The same character as `answerer`, not deleted, for what is not its reply (a message stored for it). */
  async member(conversation: ConversationRecord, characterId?: string): Promise<CharacterRecord> {
    const chosen = characterId ?? conversation.characterId;
    if (!conversation.characterIds.includes(chosen)) {
      throw new AppError('CHARACTER_NOT_IN_CONVERSATION', `Character ${chosen} is not in this conversation; add it to the conversation's speakers first.`, {
        details: { characterId: chosen, characterIds: conversation.characterIds },
      });
    }
    const character = await this.store.characters.get(chosen);
    if (!character) throw notFound('Character', chosen);
    if (character.deletedMicros !== null) throw characterDeleted(character);
    return character;
  }
}

/**
 * What a character greets with: opening a conversation, its first message and alternate
 * greetings (the first message chosen); joining a scene, its group-only greetings when it has
 * any, else those same greetings (as SillyTavern's group chats do). Card macros are resolved
 * with this conversation's names, `{{pick}}` seeded by it.
 */
export function greetingTexts(character: CharacterRecord, userName: string, conversationId: string, occasion: 'opening' | 'scene'): string[] {
  const { firstMessage, alternateGreetings, groupOnlyGreetings } = character.definition;
  const ordinary = [firstMessage, ...alternateGreetings];
  const written = occasion === 'scene' && groupOnlyGreetings.some((text) => text.trim() !== '') ? groupOnlyGreetings : ordinary;
  const values = { character: characterMacroName(character), user: userName, pickSeed: conversationId };
  return written.filter((text) => text.trim() !== '').map((text) => expandMacros(text, values).trim()).filter((text) => text !== '');
}

/**
 * Inside a transaction: refuses unless `characterId` may still speak in the conversation
 * (`refuseUnlessItMaySpeak`), its row held until the transaction ends, so its owner's change
 * waits for what is stored under the check.
 */
async function mayStillSpeak(repositories: Repositories, conversationId: string, characterId: string): Promise<void> {
  const character = await repositories.characters.hold(characterId);
  if (!character) throw notFound('Character', characterId);
  refuseUnlessItMaySpeak(character, await repositories.conversations.speakers(conversationId));
}

/** The conversation's own character leads the scene, whatever the join order says. */
function mainFirst(character: CharacterRecord, characters: readonly CharacterRecord[]): CharacterRecord[] {
  return [character, ...characters.filter((each) => each.id !== character.id)];
}

function conversationRecord(stored: StoredConversation, speakerAccountIds: string[], characterIds: readonly string[]): ConversationRecord {
  return {
    id: stored.id,
    accountId: stored.accountId,
    characterId: stored.characterId,
    speakerAccountIds,
    characterIds: [stored.characterId, ...characterIds.filter((id) => id !== stored.characterId)],
    createdMicros: stored.createdMicros,
    updatedMicros: stored.updatedMicros,
  };
}
