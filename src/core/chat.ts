import type { Actor } from './actor.js';
import { AsyncQueue } from './async-queue.js';
import { ContextWindow, type PromptPlan } from './context-window.js';
import type { Conversations } from './conversations.js';
import { AppError, EngineError, ValidationError, greetingNotRegenerated, notFound, notNewestReply } from './errors.js';
import { checkImage, isImageMimeType } from './media.js';
import type { Memories } from './memories.js';
import type { LearnedRecall } from './learning/recall.js';
import { ModelTraits } from './model-traits.js';
import type { ChatModel, ChatRequest, ChatUsage, Clock, FileStore, IdGenerator, ImageCodec, Logger, RegexKeyRunner, SpeechToText, TokenCounter, Transcription } from './ports.js';
import { maxImageSide } from './prompt.js';
import type { CharacterRecord, ConversationRecord, MessageRecord } from './records.js';
import type { MessageAlternative, RepositoryStore, StoredMessage } from './repositories.js';
import { ConversationSummaries, type ConversationSummary, type SummaryOptions, defaultSummaryOptions } from './summaries.js';
import { ThinkFilter } from './think-filter.js';
import { teaches } from './memory-scope.js';

/**
 * What someone says: text, an image, or a recording (a voice message) as bytes with the type
 * it was sent as (its real type is read from the bytes). Front ends decode their wire forms
 * (base64, data: URLs, Discord attachments) before they call the core. A recording is
 * written down by the speech-to-text engine, and the words are what the character hears.
 */
export type ChatInput = ({ text: string } | { image: Uint8Array; mimeType: string } | { audio: Uint8Array; mimeType: string }) & {
  /** MIME types the caller accepts for the reply (see `Answers`). */
  allow?: readonly string[] | undefined;
};

/** How a reply is asked for: streamed or whole, and who answers. */
export interface ReplyMode {
  stream: boolean;
  /**
   * Hears how many requests the engine serves before this reply while it waits for a free slot
   * (the embedded engine's queue), again whenever that changes; never called when it need not wait.
   */
  onQueued?: ((ahead: number) => void) | undefined;
  /**
   * Aborts when whoever asked has left (an API client hanging up): generation stops at once and
   * frees the engine's slot, and the unfinished reply is not stored. The message stays.
   */
  signal?: AbortSignal | undefined;
  /** One of the conversation's characters (`CHARACTER_NOT_IN_CONVERSATION` otherwise); default the one it is with. */
  characterId?: string | undefined;
}

/** A reply on its way. Generation goes on even if nobody reads `pieces`, and ends in `done`. */
export interface Reply {
  /** One id for every chunk of this reply. */
  id: string;
  model: string;
  createdSeconds: number;
  userMessage: StoredMessage;
  /** The character answering (in a scene, the one chosen or addressed). */
  characterId: string;
  /** Visible text as it arrives (reasoning removed). Throws the engine's error if it fails. */
  pieces: AsyncIterable<string>;
  /**
   * Settles once the engine has begun to answer: resolves with its first part (or the end of
   * a whole, unstreamed reply), rejects with the engine's error when it failed before that.
   * Front ends wait for it so a refusal becomes a proper error answer, not a stream.
   */
  started: Promise<void>;
  /** The stored reply; rejects with the engine's error, and then nothing was stored. */
  done: Promise<StoredMessage>;
}

/** Which reply `regenerate` writes again (see there). */
export interface RegenerationTarget {
  /** The message the reply answered; only the newest reply, answering it, is replaced. */
  messageId?: string;
  /** Who was answering `messageId` when no reply to it was stored (it failed). */
  characterId?: string;
}

export interface ChatOptions {
  /** Tokens one request may hold; a function when the engine knows it only once loaded. */
  contextTokens: number | (() => number);
  maxReplyTokens: number;
  /** How many memories go into the system prompt. */
  memoryCount: number;
  maxTextLength: number;
  maxImageBytes: number;
  /** Largest recording taken, in bytes (the engine's own limit may be lower). */
  maxAudioBytes: number;
  /** Longest recording taken, in seconds, where its header says how long it is. */
  maxAudioSeconds: number;
  /** The rolling summary of what fell out of the context window. */
  summary: SummaryOptions;
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
  // Base64 of 10 MB fits the HTTP body limit; a voice message of minutes is far smaller.
  maxAudioBytes: 10 * 1024 * 1024,
  maxAudioSeconds: 10 * 60,
  summary: defaultSummaryOptions,
};

/** Once the engine refused a prompt as too long, the history gets this part of the room it had. */
const shrunkHistoryShare = 0.5;

/** Sending a message and getting the character's reply. */
export class Chat {
  /** Replies being generated, so a shutdown can let them finish and be stored. */
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #traits: ModelTraits;
  readonly #summaries: ConversationSummaries;
  readonly #window: ContextWindow;

  constructor(
    private readonly store: RepositoryStore,
    private readonly conversations: Conversations,
    memories: Memories,
    private readonly files: FileStore,
    private readonly model: ChatModel,
    /** Counts tokens as the model does (or over-estimates); learns from each answer's usage. */
    private readonly tokens: TokenCounter,
    /** Downscales chat images at ingest. */
    private readonly imageCodec: ImageCodec,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly logger: Logger,
    private readonly options: ChatOptions,
    /** Runs the lorebooks' regular-expression keys, bounded in time. */
    regexes: RegexKeyRunner,
    /** Voice messages; without it they are refused with `TRANSCRIPTION_UNAVAILABLE`. */
    private readonly speechToText?: SpeechToText,
    /** What the character learned from conversations, recalled into its prompts. */
    recall?: LearnedRecall,
  ) {
    this.#traits = new ModelTraits(store, clock, model.modelId, options.contextTokens);
    this.#summaries = new ConversationSummaries(store, conversations, model, tokens, logger, options.summary, async () => (await this.#traits.read()).contextTokens);
    this.#window = new ContextWindow(store, conversations, memories, files, tokens, this.#traits, this.#summaries, options, regexes, recall);
  }

  /**
   * Stores a message without asking for a reply (e.g. an image sent together with text). A
   * message the model could never be sent (longer than its context, an image it cannot see)
   * is refused here, before it is stored.
   */
  async post(actor: Actor, conversationId: string, input: ChatInput, options: { asContext?: boolean } = {}): Promise<StoredMessage> {
    const conversation = await this.conversations.get(actor, conversationId);
    // Only stored, not answered: the character need not be one that may speak here now.
    return this.#post(actor, conversation, await this.conversations.member(conversation), input, options);
  }

  async #post(actor: Actor, conversation: ConversationRecord, character: CharacterRecord, input: ChatInput, options: { asContext?: boolean } = {}): Promise<StoredMessage> {
    const authorId = actor.type === 'account' ? actor.accountId : conversation.accountId;
    // Rule 7 (memory-scope.ts): only what people wrote themselves, to a character, teaches.
    const learn = teaches({ writtenByAdmin: actor.type === 'admin', keptAsContext: options.asContext === true });
    const { message, fileBytes, unheard } = await this.#toMessage(input, authorId);
    await this.#window.refuseIfTooLong(character, message);
    // The file is stored once the message is accepted: a refused image or recording leaves no file behind.
    if (fileBytes === undefined || message.file === null) return this.conversations.appendMessage(conversation.id, message, { learn });
    const file = await this.files.put(fileBytes, message.file.mimeType);
    const stored = await this.conversations.appendMessage(conversation.id, { ...message, file: { ...message.file, key: file.key } }, { learn });
    // A recording the engine failed to write down is kept (nothing the person sent is lost), and the failure still ends the request.
    if (unheard !== undefined) throw unheard;
    return stored;
  }

  /**
   * The largest image and recording taken, and the longest recording, so front ends refuse
   * bigger ones before downloading or decoding them.
   */
  get inputLimits(): { maxImageBytes: number; maxAudioBytes: number; maxAudioSeconds: number } {
    const engineLimit = this.speechToText?.transcriber.maxAudioBytes ?? Number.POSITIVE_INFINITY;
    return { maxImageBytes: this.options.maxImageBytes, maxAudioBytes: Math.min(this.options.maxAudioBytes, engineLimit), maxAudioSeconds: this.options.maxAudioSeconds };
  }

  /**
   * Throws `TRANSCRIPTION_UNAVAILABLE` when no speech-to-text engine is configured, so a front
   * end refuses a recording before it fetches it, with the words `send` would use.
   */
  requireTranscription(): void {
    this.#speechToText();
  }

  #speechToText(): SpeechToText {
    if (this.speechToText) return this.speechToText;
    throw new AppError(
      'TRANSCRIPTION_UNAVAILABLE',
      'Voice messages need a speech-to-text engine: set STT_ENGINE=openai and STT_BASE_URL (OpenAI, speaches, LocalAI or whisper.cpp) and restart, or send text.',
    );
  }

  /** The rolling summary of what fell out of the conversation's context window, if any. */
  summary(conversationId: string): Promise<ConversationSummary | undefined> {
    return this.#summaries.get(conversationId);
  }

  /**
   * Stores the message, then asks the engine. The user's message is stored before the engine
   * is called and stays whatever the engine does; the reply is stored only when complete.
   * `characterId` chooses who answers (one of the conversation's characters; default the one
   * it is with), checked before anything is stored.
   */
  async send(actor: Actor, conversationId: string, input: ChatInput, mode: ReplyMode): Promise<Reply> {
    const conversation = await this.conversations.get(actor, conversationId);
    const character = await this.conversations.answerer(conversation, mode.characterId);
    const userMessage = await this.#post(actor, conversation, character, input);
    return this.#start(conversation, character, userMessage, mode);
  }

  /**
   * Asks for the reply to a message stored earlier with `post` (front ends that queue replies
   * store messages first, so none is lost while it waits its turn).
   */
  async respond(actor: Actor, conversationId: string, messageId: string, mode: ReplyMode): Promise<Reply> {
    const conversation = await this.conversations.get(actor, conversationId);
    const character = await this.conversations.answerer(conversation, mode.characterId);
    const message = await this.conversations.find(conversationId, messageId);
    if (!message) throw notFound('Message', messageId);
    return this.#start(conversation, character, message, mode);
  }

  /**
   * Answers the conversation's last message from a person again (after a failed or unwanted
   * reply). Their message is not stored a second time. When the newest message is a reply to
   * it, the new reply becomes another alternative of that message and is chosen (the old one
   * stays to swipe back to); the prompt leaves the old one out. The character who wrote that
   * reply writes the new one (the conversation's own character when there was none, or when
   * that one has left the scene).
   *
   * With `target.messageId` (a button under one reply, naming the message that reply answered,
   * a person's or, in a scene, another character's) only the newest reply may be written again,
   * and only if it answers that message (`NOT_NEWEST_REPLY` otherwise); when that message is
   * the newest (its reply failed and was never stored), `target.characterId` says who was
   * answering it, and the new reply is a new message.
   *
   * A greeting is never written again (`GREETING_NOT_REGENERATED`): its alternatives are the
   * card's greetings, to swipe between; answering the person's message before it anew would put
   * a reply after a greeting that came later.
   */
  async regenerate(actor: Actor, conversationId: string, mode: Omit<ReplyMode, 'characterId'> & RegenerationTarget): Promise<Reply> {
    const conversation = await this.conversations.get(actor, conversationId);
    const { message, replaces, character } = await this.#regeneration(conversation, mode);
    return this.#start(conversation, character, message, mode, replaces);
  }

  /** Who would write the reply `regenerate` asks for now (to check, say, that they have a voice first, or to post as them). */
  async regenerationWriter(actor: Actor, conversationId: string, target: RegenerationTarget = {}): Promise<CharacterRecord> {
    return (await this.#regeneration(await this.conversations.get(actor, conversationId), target)).character;
  }

  /** The message answered again, the reply getting a new alternative (if any), and who writes it. */
  async #regeneration(conversation: ConversationRecord, target: RegenerationTarget = {}): Promise<{ message: StoredMessage; replaces?: string; character: CharacterRecord }> {
    const present = (characterId: string | undefined) => (characterId !== undefined && conversation.characterIds.includes(characterId) ? characterId : undefined);
    if (target.messageId !== undefined) {
      // Oldest first: the newest message, and the one it answers if it is a reply.
      const recent = await this.conversations.messages(conversation.id, { newest: true, limit: 2 });
      const last = recent.at(-1);
      const beforeLast = recent.at(-2);
      if (last?.id === target.messageId) return { message: last, character: await this.conversations.answerer(conversation, present(target.characterId)) };
      if (last?.participantType === 'character' && beforeLast?.id === target.messageId) {
        if (last.greeting) throw greetingNotRegenerated(last.id);
        return { message: beforeLast, replaces: last.id, character: await this.conversations.answerer(conversation, present(last.participantId)) };
      }
      throw notNewestReply(last?.participantType === 'character' ? last.id : target.messageId);
    }
    let reply: StoredMessage | undefined;
    for (let beforePosition: number | undefined; ; ) {
      const batch = await this.conversations.messages(conversation.id, { newest: true, limit: 32, ...(beforePosition === undefined ? {} : { beforePosition }) });
      if (batch.length === 0) break;
      beforePosition = batch[0]!.position;
      for (const message of batch.reverse()) {
        // The newest is a greeting (the conversation's opening, or a character joining a scene):
        // an engine-written alternative would pass for one of the card's greetings.
        if (reply === undefined && message.greeting) throw greetingNotRegenerated(message.id);
        if (message.participantType === 'account') {
          const character = await this.conversations.answerer(conversation, present(reply?.participantId));
          return { message, character, ...(reply === undefined ? {} : { replaces: reply.id }) };
        }
        reply ??= message;
      }
    }
    throw new AppError('CONFLICT', 'There is no message to answer again yet: send one first.');
  }

  #start(conversation: ConversationRecord, character: CharacterRecord, userMessage: StoredMessage, mode: Pick<ReplyMode, 'stream' | 'onQueued' | 'signal'>, replaces?: string): Reply {
    const pieces = new AsyncQueue<string>();
    let markStarted: (failure?: unknown) => void = () => {};
    const started = new Promise<void>((resolve, reject) => {
      markStarted = (failure) => (failure === undefined ? resolve() : reject(failure));
    });
    // Callers that never wait for the start must not see an unhandled rejection.
    started.catch(() => undefined);
    const done = this.#generate(conversation, character, userMessage, pieces, mode, markStarted, replaces);
    // `done` is also handed to the caller; this keeps an unobserved failure from being unhandled.
    const settled = done.catch(() => undefined);
    this.#inFlight.add(settled);
    void settled.finally(() => this.#inFlight.delete(settled));
    return {
      id: this.ids.uuid(),
      model: this.model.modelId,
      createdSeconds: Math.floor(this.clock.nowMillis() / 1000),
      userMessage,
      characterId: character.id,
      pieces,
      started,
      done,
    };
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
    userMessage: StoredMessage,
    pieces: AsyncQueue<string>,
    { stream, onQueued, signal }: Pick<ReplyMode, 'stream' | 'onQueued' | 'signal'>,
    markStarted: (failure?: unknown) => void,
    replaces: string | undefined,
  ): Promise<StoredMessage> {
    const log = { conversationId: conversation.id, characterId: character.id, messageId: userMessage.id };
    const limit = this.options.maxReplyCharacters ?? defaultMaxReplyCharacters;
    try {
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
      let finish: { usage?: ChatUsage | undefined; truncated?: boolean | undefined } = {};
      const run = async (request: ChatRequest) => {
        if (stream) {
          for await (const part of this.model.stream(request, { onQueued, signal })) {
            // The engine has answered, even if its first text is reasoning the filter holds back.
            markStarted();
            if (part.type === 'text') emit(filter.push(part.text));
            else {
              finish = part;
              finishReason = part.finishReason;
            }
            // Leaving the loop stops reading the engine: the rest of an endless answer is never read.
            if (capped) break;
          }
        } else {
          const result = await this.model.generate(request, { onQueued, signal });
          finish = result;
          finishReason = result.finishReason;
          emit(filter.push(result.text));
        }
      };
      let plan = await this.#plan(conversation, character, userMessage, 1, replaces);
      // A reply that reached the end of the engine's context (llama-server without context
      // shift fails it there) is kept with what arrived, as one cut by its token limit would be.
      const runKeepingCut = async (request: ChatRequest) => {
        try {
          await run(request);
        } catch (error) {
          if (!(error instanceof EngineError && error.reason === 'context-exceeded' && text !== '')) throw error;
          finishReason = 'length';
          this.logger.warn({ ...log, contextTokens: plan.contextTokens, countedTokens: plan.countedTokens }, 'the reply reached the end of the engine context; it is kept as cut, and later prompts use a smaller context');
          await this.#smallerContext(plan);
        }
      };
      try {
        await runKeepingCut(plan.request);
      } catch (error) {
        if (!(error instanceof EngineError) || text !== '') throw error;
        if (error.reason === 'images-unsupported' && plan.withImages) {
          await this.#traits.cannotSeeImages();
          throw new AppError(
            'MODEL_CANNOT_SEE_IMAGES',
            `${character.name}'s chat model cannot see images. The image is kept in the conversation and later messages are sent without it; describe it in words instead.`,
            { cause: error },
          );
        }
        if (error.reason !== 'context-exceeded') throw error;
        // Our count was short of the engine's: never leave a conversation only /clear can mend.
        this.logger.warn({ ...log, contextTokens: plan.contextTokens, countedTokens: plan.countedTokens }, 'the engine found the prompt too long; trying once more with less history');
        await this.#smallerContext(plan);
        plan = await this.#plan(conversation, character, userMessage, shrunkHistoryShare, replaces);
        await runKeepingCut(plan.request);
      }
      emit(filter.end());
      if (capped) finishReason = 'length';
      if (text.trim().length === 0) {
        throw new EngineError('The chat engine returned an empty reply.', { provider: this.model.provider, purpose: 'chat' });
      }
      const written = { content: text.trim(), ...(finishReason === undefined || finishReason === 'unknown' ? {} : { finishReason }) };
      // A regenerated reply is another alternative of the message it rewrites, not a message after it.
      const stored =
        replaces === undefined
          ? await this.conversations.appendMessage(conversation.id, { ...written, mimeType: 'text/plain', participantId: character.id, participantType: 'character', file: null })
          : await this.conversations.addAlternative(conversation.id, replaces, character.id, written);
      if (capped) this.logger.info({ ...log, limit }, 'reply cut at the reply limit');
      // Which memories the reply was written with: whoever may read it may see those they may read.
      if (plan.usedMemoryIds.length > 0) {
        await this.store.replyMemories.record(stored.id, chosenAlternative(stored).id, plan.usedMemoryIds).catch((error: unknown) => this.logger.warn({ ...log, err: error }, 'could not record the memories a reply used'));
      }
      // Which lorebook entries it was written with: its owner may look (lorebook/used-entries.ts).
      if (plan.usedLorebookEntryIds.length > 0) {
        await this.store.lorebooks.recordUse(stored.id, chosenAlternative(stored).id, plan.usedLorebookEntryIds).catch((error: unknown) => this.logger.warn({ ...log, err: error }, 'could not record the lorebook entries a reply used'));
      }
      markStarted();
      pieces.end();
      await this.#learn(plan, finish, log);
      if (plan.anyFellOut) this.#background(this.#summaries.update(plan.characterNames, conversation.id, plan.firstKept));
      return stored;
    } catch (error) {
      if (signal?.aborted) this.logger.info(log, 'the caller left: the reply was stopped and not stored; the user message is kept');
      else this.logger.warn({ ...log, err: error }, 'reply failed; the user message is kept');
      markStarted(error);
      pieces.fail(error);
      throw error;
    }
  }

  /** What an answer teaches: the engine's prompt count, and whether it had to cut the prompt. */
  async #learn(plan: PromptPlan, finish: { usage?: ChatUsage | undefined; truncated?: boolean | undefined }, log: object): Promise<void> {
    const promptTokens = finish.usage?.promptTokens;
    const truncated = finish.truncated === true || this.#cutSilently(plan, promptTokens);
    // Image tokens are the engine's own affair; only text prompts teach the text ratio.
    if (promptTokens !== undefined && !plan.withImages && !truncated) this.tokens.observe(plan.countedTokens, promptTokens);
    if (truncated) {
      this.logger.warn({ ...log, contextTokens: plan.contextTokens, countedTokens: plan.countedTokens, promptTokens, reported: finish.truncated === true }, 'the engine cut the prompt to fit its context (context shift); later prompts use a smaller context');
      await this.#smallerContext(plan);
    }
  }

  /**
   * Whether the engine held fewer prompt tokens than the text we counted exactly: context shift
   * cut it without saying so (llama-server b4748 marks nothing). Only exact counts tell; an
   * estimate over-counts by design, and image tokens are the engine's own.
   */
  #cutSilently(plan: PromptPlan, promptTokens: number | undefined): boolean {
    if (promptTokens === undefined || !this.tokens.exact || plan.withImages) return false;
    // A token a message for the edges the tokenizer may split differently inside the whole prompt.
    return promptTokens < plan.textTokens - plan.request.messages.length;
  }

  /**
   * After the engine refused or cut a prompt: its own context when it tells (llama-server
   * reports n_ctx per slot, which is -c / -np), else a sixth less than before.
   */
  async #smallerContext(plan: PromptPlan): Promise<void> {
    const reported = await this.tokens.engineContext?.().catch(() => undefined);
    if (reported !== undefined && reported < plan.contextTokens) {
      this.logger.warn({ configured: typeof this.options.contextTokens === 'number' ? this.options.contextTokens : this.options.contextTokens(), engine: reported }, 'the engine gives each request a smaller context than configured; set LLM_CONTEXT_TOKENS to the per-slot context');
      await this.#traits.learnContext(reported);
    } else {
      await this.#traits.shrinkContext();
    }
  }

  /** Work that outlives the reply (the summary) but that a shutdown waits for. */
  #background(work: Promise<void>): void {
    this.#inFlight.add(work);
    void work.finally(() => this.#inFlight.delete(work));
  }

  /** `replaces`: the reply getting a new alternative, left out of the history the new one is written from. */
  #plan(conversation: ConversationRecord, character: CharacterRecord, userMessage: StoredMessage, share: number, replaces?: string): Promise<PromptPlan> {
    return this.#window.plan(conversation, character, userMessage, share, replaces);
  }

  /** The message to store, its file's key left empty, and the file's bytes, stored by the caller once the message is accepted. */
  async #toMessage(input: ChatInput, authorId: string): Promise<ConvertedInput> {
    if ('text' in input) {
      return { message: { content: this.#checkText(input.text), mimeType: 'text/plain', participantId: authorId, participantType: 'account', file: null } };
    }
    if ('audio' in input) return this.#voiceMessage(input.audio, authorId);
    if (isImageMimeType(input.mimeType)) {
      // Its real format, size and pixel count from its header before anything decodes it.
      await checkImage('data', input.image, this.options.maxImageBytes, this.imageCodec);
      // Downscaled once here, so no prompt carries megapixels the model would scale anyway,
      // and its size is known for counting its tokens.
      const fitted = await this.imageCodec.fit('data', input.image, maxImageSide);
      return {
        message: {
          content: '',
          mimeType: fitted.mimeType,
          participantId: authorId,
          participantType: 'account',
          file: { key: '', mimeType: fitted.mimeType, width: fitted.width, height: fitted.height },
        },
        fileBytes: fitted.data,
      };
    }
    throw ValidationError.field('mimeType', 'must be text/plain, image/png, image/jpeg, image/webp or an audio type');
  }

  #checkText(raw: string): string {
    const text = raw.trim();
    if (text.length === 0) throw ValidationError.field('data', 'must not be empty');
    if (text.length > this.options.maxTextLength) {
      throw ValidationError.field('data', `must be at most ${this.options.maxTextLength} characters`);
    }
    return text;
  }

  /**
   * A recording: checked by its own bytes before any engine hears it, written down, and kept
   * as the message's file with the words as its content. The engine's own words about a
   * failure go to the log only (`EngineError`); the person gets ours. When the engine fails (not
   * when it refuses the recording), the recording is kept with no words, `unheard`.
   */
  async #voiceMessage(audio: Uint8Array, authorId: string): Promise<ConvertedInput & { fileBytes: Uint8Array }> {
    const { inspector, transcriber } = this.#speechToText();
    const inspected = inspector.inspect(audio, { maxBytes: this.inputLimits.maxAudioBytes, maxDurationSeconds: this.options.maxAudioSeconds });
    const recording = { mimeType: inspected.mimeType, participantId: authorId, participantType: 'account' as const, file: { key: '', mimeType: inspected.mimeType } };
    let transcription: Transcription;
    try {
      transcription = await transcriber.transcribe({ audio, mimeType: inspected.mimeType, filename: inspected.filename });
    } catch (error) {
      if (!isTranscriptionFailure(error)) throw error;
      return { message: { ...recording, content: '' }, fileBytes: audio, unheard: error };
    }
    if (transcription.text.trim().length === 0) {
      throw new AppError('NO_SPEECH_HEARD', 'No speech was heard in the recording, so there is nothing to answer. Record it again closer to the microphone, or send text.');
    }
    return { message: { ...recording, content: this.#checkText(transcription.text) }, fileBytes: audio };
  }
}

/**
 * A chat input as the message it becomes, the bytes of its file to store once it is accepted,
 * and for a recording the engine failed to write down, that failure, raised once it is kept.
 */
type ConvertedInput = { message: Omit<MessageRecord, 'id' | 'createdMicros'>; fileBytes?: Uint8Array; unheard?: unknown };

/**
 * The speech-to-text engine failed (down, slow, broken), as opposed to refusing the recording
 * itself (too large, unreadable), which the person must change and which is not kept.
 */
function isTranscriptionFailure(error: unknown): boolean {
  return error instanceof EngineError && error.purpose === 'transcription' && error.code !== 'PAYLOAD_TOO_LARGE' && error.code !== 'UNSUPPORTED_MEDIA_TYPE';
}

/** The alternative a message shows and the conversation goes on from. */
export function chosenAlternative(message: StoredMessage): MessageAlternative {
  return message.alternatives[message.chosenIndex] ?? { id: message.id, content: message.content, createdMicros: message.createdMicros };
}

/** The first `length` characters of `text`, never ending in half a surrogate pair. */
function cutAt(text: string, length: number): string {
  const cut = text.slice(0, Math.max(0, length));
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}
