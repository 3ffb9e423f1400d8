import type { Actor } from './actor.js';
import { AsyncQueue } from './async-queue.js';
import { type Conversations, withoutReplaced } from './conversations.js';
import { AppError, EngineError, ValidationError, notFound } from './errors.js';
import { keys } from './keys.js';
import { decodeImage, isImageMimeType } from './media.js';
import type { Memories } from './memories.js';
import type { ChatModel, ChatRequest, Clock, FileStore, IdGenerator, Logger, Store } from './ports.js';
import { buildHistory, estimateTokens, systemPrompt } from './prompt.js';
import type { AccountRecord, CharacterRecord, ConversationRecord, MessageRecord } from './records.js';
import { ThinkFilter } from './think-filter.js';

export interface ChatInput {
  data: string;
  mimeType?: string | undefined;
  /** MIME types the caller accepts for the reply (see `Answers`). */
  allow?: readonly string[] | undefined;
}

/** A reply on its way. Generation goes on even if nobody reads `pieces`, and ends in `done`. */
export interface Reply {
  /** One id for every chunk of this reply. */
  id: string;
  model: string;
  createdSeconds: number;
  userMessage: MessageRecord;
  /** Visible text as it arrives (reasoning removed). Throws the engine's error if it fails. */
  pieces: AsyncIterable<string>;
  /**
   * Settles once the engine has begun to answer: resolves with its first part (or the end of
   * a whole, unstreamed reply), rejects with the engine's error when it failed before that.
   * Front ends wait for it so a refusal becomes a proper error answer, not a stream.
   */
  started: Promise<void>;
  /** The stored reply; rejects with the engine's error, and then nothing was stored. */
  done: Promise<MessageRecord>;
}

export interface ChatOptions {
  contextTokens: number;
  maxReplyTokens: number;
  /** How many memories go into the system prompt. */
  memoryCount: number;
  maxTextLength: number;
  maxImageBytes: number;
  /**
   * Longest reply kept, in characters: the engine is not read past it, and the reply is stored
   * cut with finish reason `length` (default `defaultMaxReplyCharacters`).
   */
  maxReplyCharacters?: number;
}

/** A reply longer than this is cut: about ten pages, far beyond any reply limit in tokens we set. */
export const defaultMaxReplyCharacters = 32_000;

export const defaultChatOptions: Omit<ChatOptions, 'contextTokens' | 'maxReplyTokens'> = {
  memoryCount: 12,
  maxTextLength: 16_000,
  maxImageBytes: 10 * 1024 * 1024,
};

/** How many of the latest messages stand for "what is being talked about" when choosing memories. */
const memoryQueryMessages = 4;

/** Sending a message and getting the character's reply. */
export class Chat {
  /** Replies being generated, so a shutdown can let them finish and be stored. */
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly store: Store,
    private readonly conversations: Conversations,
    private readonly memories: Memories,
    private readonly files: FileStore,
    private readonly model: ChatModel,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly logger: Logger,
    private readonly options: ChatOptions,
  ) {}

  /** Stores a message without asking for a reply (e.g. an image sent together with text). */
  async post(actor: Actor, conversationId: string, input: ChatInput): Promise<MessageRecord> {
    const conversation = await this.conversations.get(actor, conversationId);
    const authorId = actor.type === 'account' ? actor.accountId : conversation.accountId;
    return this.conversations.appendMessage(conversationId, await this.#toMessage(input, authorId));
  }

  /**
   * Stores the message, then asks the engine. The user's message is stored before the engine
   * is called and stays whatever the engine does; the reply is stored only when complete.
   */
  async send(actor: Actor, conversationId: string, input: ChatInput, mode: { stream: boolean }): Promise<Reply> {
    const conversation = await this.conversations.get(actor, conversationId);
    const character = await this.#characterOf(conversation);
    const userMessage = await this.post(actor, conversationId, input);
    return this.#start(conversation, character, userMessage, mode.stream);
  }

  /**
   * Asks for the reply to a message stored earlier with `post` (front ends that queue replies
   * store messages first, so none is lost while it waits its turn).
   */
  async respond(actor: Actor, conversationId: string, messageId: string, mode: { stream: boolean }): Promise<Reply> {
    const conversation = await this.conversations.get(actor, conversationId);
    const character = await this.#characterOf(conversation);
    const { message } = await this.#find(conversationId, messageId);
    if (!message) throw notFound('Message', messageId);
    return this.#start(conversation, character, message, mode.stream);
  }

  /**
   * Answers the conversation's last message from a person again (after a failed or unwanted
   * reply). Their message is not stored a second time; the newest reply after it, if any, is
   * replaced: the new reply names it in `replaces`, and reads and prompts leave it out. With
   * `messageId` (a button under one reply), only that message may be the one answered again.
   */
  async regenerate(actor: Actor, conversationId: string, mode: { stream: boolean; messageId?: string }): Promise<Reply> {
    const conversation = await this.conversations.get(actor, conversationId);
    const character = await this.#characterOf(conversation);
    const { start, end } = await this.conversations.bounds(conversationId);
    let reply: MessageRecord | undefined;
    for (let to = end; to > start; to -= 32) {
      const batch = await this.conversations.messages(conversationId, Math.max(start, to - 32), to);
      for (const message of batch.reverse()) {
        if (message.participantType === 'account') {
          if (mode.messageId !== undefined && mode.messageId !== message.id) {
            throw new AppError('CONFLICT', 'The conversation has moved on: only the reply to the latest message can be written again.');
          }
          return this.#start(conversation, character, message, mode.stream, reply?.id);
        }
        reply ??= message;
      }
    }
    throw new AppError('CONFLICT', 'There is no message to answer again yet: send one first.');
  }

  #start(conversation: ConversationRecord, character: CharacterRecord, userMessage: MessageRecord, stream: boolean, replaces?: string): Reply {
    const pieces = new AsyncQueue<string>();
    let markStarted: (failure?: unknown) => void = () => {};
    const started = new Promise<void>((resolve, reject) => {
      markStarted = (failure) => (failure === undefined ? resolve() : reject(failure));
    });
    // Callers that never wait for the start must not see an unhandled rejection.
    started.catch(() => undefined);
    const done = this.#generate(conversation, character, userMessage, pieces, stream, markStarted, replaces);
    // `done` is also handed to the caller; this keeps an unobserved failure from being unhandled.
    const settled = done.catch(() => undefined);
    this.#inFlight.add(settled);
    void settled.finally(() => this.#inFlight.delete(settled));
    return {
      id: this.ids.uuid(),
      model: this.model.modelId,
      createdSeconds: Math.floor(this.clock.nowMillis() / 1000),
      userMessage,
      pieces,
      started,
      done,
    };
  }

  async #characterOf(conversation: ConversationRecord): Promise<CharacterRecord> {
    const character = await this.store.get<CharacterRecord>(keys.character(conversation.characterId));
    if (!character) throw notFound('Character', conversation.characterId);
    return character;
  }

  /** Waits until the replies being generated are stored or failed, or `timeoutMs` passes. */
  async idle(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([Promise.all(this.#inFlight), timeout]);
    clearTimeout(timer);
  }

  async #generate(
    conversation: ConversationRecord,
    character: CharacterRecord,
    userMessage: MessageRecord,
    pieces: AsyncQueue<string>,
    stream: boolean,
    markStarted: (failure?: unknown) => void,
    replaces: string | undefined,
  ): Promise<MessageRecord> {
    const log = { conversationId: conversation.id, characterId: character.id, messageId: userMessage.id };
    const limit = this.options.maxReplyCharacters ?? defaultMaxReplyCharacters;
    try {
      const request = await this.#request(conversation, character, userMessage, replaces);
      const filter = new ThinkFilter();
      let text = '';
      let finishReason: string | undefined;
      let capped = false;
      const emit = (piece: string) => {
        if (piece.length === 0 || capped) return;
        if (text.length + piece.length > limit) {
          piece = cutAt(piece, limit - text.length);
          capped = true;
        }
        text += piece;
        pieces.push(piece);
        markStarted();
      };
      if (stream) {
        for await (const part of this.model.stream(request)) {
          // The engine has answered, even if its first text is reasoning the filter holds back.
          markStarted();
          if (part.type === 'text') emit(filter.push(part.text));
          else finishReason = part.finishReason;
          // Leaving the loop stops reading the engine: the rest of an endless answer is never read.
          if (capped) break;
        }
      } else {
        const result = await this.model.generate(request);
        finishReason = result.finishReason;
        emit(filter.push(result.text));
      }
      emit(filter.end());
      if (capped) finishReason = 'length';
      if (text.trim().length === 0) {
        throw new EngineError('The chat engine returned an empty reply.', { provider: this.model.provider, purpose: 'chat' });
      }
      const stored = await this.conversations.appendMessage(conversation.id, {
        content: text.trim(),
        mimeType: 'text/plain',
        participantId: character.id,
        participantType: 'character',
        file: null,
        ...(finishReason === undefined || finishReason === 'unknown' ? {} : { finishReason }),
        ...(replaces === undefined ? {} : { replaces }),
      });
      if (capped) this.logger.info({ ...log, limit }, 'reply cut at the reply limit');
      markStarted();
      pieces.end();
      return stored;
    } catch (error) {
      this.logger.warn({ ...log, err: error }, 'reply failed; the user message is kept');
      markStarted(error);
      pieces.fail(error);
      throw error;
    }
  }

  /**
   * The prompt for replying to `userMessage`: the system prompt, then the newest messages that
   * fit, ending with `userMessage`. Replies the character wrote after it (to earlier messages
   * that were still being answered when it arrived) come before it, as the people saw them;
   * other people's later messages wait for their own replies.
   */
  async #request(conversation: ConversationRecord, character: CharacterRecord, userMessage: MessageRecord, replaces?: string): Promise<ChatRequest> {
    const { start, end: now } = await this.conversations.bounds(conversation.id);
    const { end } = await this.#find(conversation.id, userMessage.id);
    const later = end < now ? (await this.conversations.messages(conversation.id, end, now)).filter((message) => message.participantType === 'character') : [];
    const before = await this.conversations.messages(conversation.id, Math.max(start, end - 1 - memoryQueryMessages), end - 1);
    const recent = [...before, ...later, userMessage].slice(-memoryQueryMessages);
    const memories = await this.memories.relevant(character, recent.map((message) => message.content).join('\n'), this.options.memoryCount);
    const system = systemPrompt(character, memories);
    const budget = this.options.contextTokens - this.options.maxReplyTokens - estimateTokens(system);
    if (budget <= 0) {
      throw new AppError('CONFLICT', 'The character description and memories fill the whole context; shorten them or raise LLM_CONTEXT_TOKENS.');
    }
    const accountRecords = await this.store.getMany<AccountRecord>(conversation.speakerAccountIds.map((id) => keys.account(id)));
    const accounts = new Map(accountRecords.filter((account) => account !== undefined).map((account) => [account.id, account]));
    const newestFirst: MessageRecord[] = [userMessage, ...[...later].reverse()];
    let used = newestFirst.reduce((sum, message) => sum + estimateTokens(message.content), 0);
    const page = 64;
    for (let to = end - 1; to > start && used < budget; to -= page) {
      const batch = await this.conversations.messages(conversation.id, Math.max(start, to - page), to);
      for (const message of batch.reverse()) {
        newestFirst.push(message);
        used += estimateTokens(message.content);
      }
    }
    // Replaced replies (and the one being regenerated) are not what the character said.
    const history = await buildHistory(withoutReplaced(newestFirst, replaces), { budget, accounts, files: this.files });
    return { messages: [{ role: 'system', content: system }, ...history], maxTokens: this.options.maxReplyTokens };
  }

  /** A message of the conversation and the list index just after it, searching from the newest. */
  async #find(conversationId: string, messageId: string): Promise<{ message?: MessageRecord; end: number }> {
    const { start, end } = await this.conversations.bounds(conversationId);
    for (let to = end; to > start; to -= 32) {
      const from = Math.max(start, to - 32);
      const batch = await this.conversations.messages(conversationId, from, to);
      const position = batch.findIndex((candidate) => candidate.id === messageId);
      if (position >= 0) return { message: batch[position], end: from + position + 1 };
    }
    // Cleared meanwhile: nothing before it remains.
    return { end };
  }

  async #toMessage(input: ChatInput, authorId: string): Promise<Omit<MessageRecord, 'id' | 'createdMicros'>> {
    const mimeType = input.mimeType ?? 'text/plain';
    if (mimeType === 'text/plain') {
      const text = input.data.trim();
      if (text.length === 0) throw ValidationError.field('data', 'must not be empty');
      if (text.length > this.options.maxTextLength) {
        throw ValidationError.field('data', `must be at most ${this.options.maxTextLength} characters`);
      }
      return { content: text, mimeType, participantId: authorId, participantType: 'account', file: null };
    }
    if (isImageMimeType(mimeType)) {
      const image = await decodeImage('data', input.data, mimeType, this.options.maxImageBytes);
      const file = await this.files.put(image.bytes, image.mimeType);
      return {
        content: '',
        mimeType: image.mimeType,
        participantId: authorId,
        participantType: 'account',
        file: { key: file.key, mimeType: file.mimeType },
      };
    }
    throw ValidationError.field('mimeType', 'must be text/plain, image/png, image/jpeg or image/webp');
  }
}

/** The first `length` characters of `text`, never ending in half a surrogate pair. */
function cutAt(text: string, length: number): string {
  const cut = text.slice(0, Math.max(0, length));
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}
