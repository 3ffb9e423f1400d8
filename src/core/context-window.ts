/**
 * Fitting a prompt into the chat model's context: the newest message always goes; memories
 * and the summary give way to it; older history fills what is left, newest first. A message
 * that cannot fit even alone is refused before it is stored.
 */
import { LorebookCache } from './lorebook/lorebook-cache.js';
import { type CardContext, type CardParts, cardParts, deepestScan, prepareCardContext } from './card-context.js';
import { cardTexts, fitExamples } from './card-prompt.js';
import type { Conversations, NewMessage } from './conversations.js';
import { insertIntoHistory } from './history-insertions.js';
import { characterMacroName, defaultUserName } from './macros.js';
import { AppError, ValidationError } from './errors.js';
import type { LearnedRecall } from './learning/recall.js';
import type { Memories } from './memories.js';
import type { ModelTraits } from './model-traits.js';
import type { ChatRequest, FileStore, PromptFraming, RegexKeyRunner, TokenCounter } from './ports.js';
import { buildHistory, imageTokens, systemPrompt } from './prompt.js';
import type { AccountRecord, CharacterRecord, ConversationRecord, MemoryRecord, MessageRecord } from './records.js';
import type { RepositoryStore, StoredMessage } from './repositories.js';
import { type ConversationSummaries, withCharacterNames } from './summaries.js';
import { promptFramingOf } from './tokens.js';

/** How many of the latest messages stand for "what is being talked about" when choosing memories. */
const memoryQueryMessages = 4;
/** Room for a speaker's name before their line, or an image's placeholder words. */
const labelTokens = 8;
const page = 64;

export interface PromptPlan {
  request: ChatRequest;
  /** Our count of the prompt's text (images aside), to learn from the engine's `usage.prompt_tokens`. */
  countedTokens: number;
  /**
   * Our count of the messages' text alone, without the template or labels: a whole prompt is
   * never shorter (a token a message aside), so an engine reporting fewer cut it.
   */
  textTokens: number;
  withImages: boolean;
  /** The context the plan was made for. */
  contextTokens: number;
  /** Position of the oldest message sent. */
  firstKept: number;
  /** Whether older messages than `firstKept` exist, left out for want of room: the summary's work. */
  anyFellOut: boolean;
  /** The memories the prompt holds (written, the character's own learned, and what it knows of the person): the reply records them. */
  usedMemoryIds: string[];
  /** Names of the scene's characters and of every character whose lines were sent, by id. */
  characterNames: ReadonlyMap<string, string>;
  /** The character's lorebook entries the prompt holds: the reply records them. */
  usedLorebookEntryIds: string[];
}

export interface ContextWindowOptions {
  /**
   * The configured context, which start-up checked `maxReplyTokens` against; a function when it
   * is the engine's own, known once loaded (the embedded engine's slot), which nothing checked.
   */
  contextTokens: number | (() => number);
  maxReplyTokens: number;
  memoryCount: number;
  /** Random numbers for the cards' `{{random}}` and `{{roll}}` macros; `Math.random` by default. */
  random?: (() => number) | undefined;
}

export class ContextWindow {
  readonly #lorebooks: LorebookCache;

  constructor(
    private readonly store: RepositoryStore,
    private readonly conversations: Conversations,
    private readonly memories: Memories,
    private readonly files: FileStore,
    private readonly tokens: TokenCounter,
    private readonly traits: ModelTraits,
    private readonly summaries: ConversationSummaries,
    private readonly options: ContextWindowOptions,
    /** Runs the lorebooks' regular-expression keys, bounded in time. */
    private readonly regexes: RegexKeyRunner,
    /** What the character learned from conversations; absent, it knows only what it was told. */
    private readonly recall?: LearnedRecall,
  ) {
    this.#lorebooks = new LorebookCache(store);
  }

  /**
   * Refuses, before it is stored, a message the model could never be sent: an image to a
   * model that cannot see, or a message longer than the context less the reply and the
   * character's own description. The refusal says the limit in characters.
   */
  async refuseIfTooLong(character: CharacterRecord, message: NewMessage): Promise<void> {
    const { seeImages, contextTokens } = await this.traits.read();
    const isImage = message.file !== null && message.mimeType.startsWith('image/');
    if (isImage && !seeImages) {
      throw new AppError('MODEL_CANNOT_SEE_IMAGES', `${character.name}'s chat model cannot see images; describe the picture in words instead.`);
    }
    // The card's own texts stay in every prompt (lorebook entries and examples give way): count them.
    const card = cardTexts(character, character.definition, { character: characterMacroName(character), user: defaultUserName, random: this.options.random });
    const bare = systemPrompt(character, [], undefined, [], undefined, { ...card, loreBefore: [], loreAfter: [], examples: [] });
    const [[system = 0, text = 0, postHistory = 0], framing] = await Promise.all([this.tokens.count([bare, message.content, [card.postHistory, card.characterNote?.text ?? ''].join('\n').trim()]), promptFramingOf(this.tokens)]);
    const { messageTokens } = framing;
    const replyTokens = this.#replyTokens(contextTokens);
    const available = contextTokens - replyTokens - framing.promptTokens - system - messageTokens - postHistory;
    const pixels = isImage ? imageTokens(message.file?.width, message.file?.height) : 0;
    const cost = text + pixels + messageTokens + labelTokens;
    if (cost <= available) return;
    if (isImage && pixels + messageTokens + labelTokens > available) {
      throw ValidationError.field('data', `is an image this character's context cannot hold: it takes about ${pixels} tokens and ${Math.max(0, available)} are left after the character and the reply; send a smaller image`);
    }
    const room = available - pixels - messageTokens - labelTokens;
    // Nothing would fit, however short: the character's own texts fill the context, not the message.
    if (room <= 0) {
      throw new AppError(
        'CHARACTER_TOO_LONG_FOR_CONTEXT',
        `${character.name}'s own texts (description, personality, scenario, system prompt) take about ${system + postHistory} tokens, more than this chat model's context of ${contextTokens} leaves once ${replyTokens} are kept for the reply; its owner can shorten them, or the service can be given a larger context (LLM_CONTEXT_TOKENS).`,
        { details: { characterTokens: system + postHistory, contextTokens, replyTokens } },
      );
    }
    const characters = Math.floor((room * message.content.length) / Math.max(1, text));
    throw ValidationError.field(
      'data',
      `is too long for this character's context: at most about ${characters} characters fit (the context holds ${contextTokens} tokens, ${replyTokens} of them kept for the reply)`,
    );
  }

  /**
   * The prompt for replying to `userMessage` (a stored message, by its position): the system prompt,
   * then the newest messages that fit, ending with `userMessage`. Replies the character wrote
   * after it (to earlier messages still being answered when it arrived) come before it, as the
   * people saw them; other people's later messages wait for their own replies. `share` is the
   * part of the remaining context the history may use (less after the engine refused).
   * `replaces` (the reply getting a new alternative) is left out: the new one is written in its
   * place. Every other message speaks with its chosen alternative.
   */
  async plan(conversation: ConversationRecord, character: CharacterRecord, userMessage: StoredMessage, share = 1, replaces?: string): Promise<PromptPlan> {
    const { id: conversationId } = conversation;
    const earlier = (limit: number) => this.conversations.messages(conversationId, { beforePosition: userMessage.position, newest: true, limit });
    const [after, recentBefore, book] = await Promise.all([
      this.conversations.messages(conversationId, { afterPosition: userMessage.position }),
      earlier(memoryQueryMessages),
      this.#lorebooks.of(character),
    ]);
    const scanDepth = deepestScan(book);
    const before = scanDepth > memoryQueryMessages ? await earlier(scanDepth) : recentBefore;
    const later = after.filter((message) => message.participantType === 'character');
    const conversationEnd = [...before, ...later, userMessage].filter((message) => message.id !== replaces);
    const recent = conversationEnd.slice(-memoryQueryMessages);
    // Only the answering character's own memories: each keeps its memories private in a scene.
    const query = recent.map((message) => message.content).join('\n');
    const [memories, summary, { seeImages, contextTokens }, accountRecords, sceneRecords, framing, recalled] = await Promise.all([
      this.memories.relevant(character, query, this.options.memoryCount),
      this.summaries.get(conversationId),
      this.traits.read(),
      Promise.all(conversation.speakerAccountIds.map((id) => this.store.accounts.get(id))),
      Promise.all(conversation.characterIds.map((id) => (id === character.id ? character : this.store.characters.get(id)))),
      promptFramingOf(this.tokens),
      // What it learned about the person it answers, where the rules allow (memory-scope.ts).
      this.recall?.about(character, conversation, userMessage, query, this.options.memoryCount),
    ]);
    const accounts = new Map(accountRecords.filter((account): account is AccountRecord => account !== undefined).map((account) => [account.id, account]));
    const sceneNames = new Map(sceneRecords.filter((each): each is CharacterRecord => each !== undefined).map((each) => [each.id, each.name]));
    const others = [...sceneNames].filter(([id]) => id !== character.id).map(([, name]) => name);
    const labelPeople = accounts.size > 1 || others.length > 0;
    const costs = new Map<string, number>();
    const texts = new Map<string, number>();
    const perMessage = framing.messageTokens + (labelPeople ? labelTokens : 0);
    const measure = async (messages: readonly MessageRecord[]): Promise<number> => {
      const counts = await this.tokens.count(messages.map((message) => message.content));
      return messages.reduce((sum, message, index) => {
        const otherCharacter = message.participantType === 'character' && message.participantId !== character.id;
        const cost = (counts[index] ?? 0) + perMessage + (message.file || otherCharacter ? labelTokens : 0);
        costs.set(message.id, cost);
        texts.set(message.id, counts[index] ?? 0);
        return sum + cost;
      }, 0);
    };
    const newestFirst: StoredMessage[] = [userMessage, ...[...later].reverse()];
    let used = await measure(newestFirst);
    const newestCost = (costs.get(userMessage.id) ?? 0) + (userMessage.file && seeImages ? imageTokens(userMessage.file.width, userMessage.file.height) : 0);

    // The generation prompt that opens the reply, and what else the template adds once, count too.
    const replyTokens = this.#replyTokens(contextTokens);
    const available = contextTokens - replyTokens - framing.promptTokens;
    const person = recalled && { name: accounts.get(recalled.accountId)?.username ?? 'them', facts: recalled.facts };
    const speaker = (message: MessageRecord) =>
      message.participantType === 'account' ? (accounts.get(message.participantId)?.username ?? defaultUserName) : (sceneNames.get(message.participantId) ?? 'Another character');
    const answered = userMessage.participantType === 'account' ? userMessage.participantId : conversation.accountId;
    const card = await prepareCardContext({
      character,
      book,
      scanned: conversationEnd.slice(-Math.max(1, scanDepth)).map((message) => `${speaker(message)}: ${message.content}`),
      contextTokens,
      tokens: this.tokens,
      values: { character: characterMacroName(character), user: accounts.get(answered)?.username ?? defaultUserName, pickSeed: conversationId, random: this.options.random },
      regexes: this.regexes,
    });
    const { system: bare, systemTokens, usedMemoryIds, parts, compose } = await this.#system(character, memories, summary?.text, available, newestCost, others, framing, card, person);
    const insertionCost = parts.insertionTokens + framing.messageTokens * parts.insertions.length;
    const budget = Math.max(newestCost, Math.floor((available - systemTokens - insertionCost) * share));
    const older: StoredMessage[] = [];
    let exhausted = false;
    while (!exhausted && used < budget) {
      const beforePosition = older.at(-1)?.position ?? userMessage.position;
      const batch = (await this.conversations.messages(conversationId, { beforePosition, newest: true, limit: page })).reverse();
      exhausted = batch.length < page;
      used += await measure(batch);
      older.push(...batch);
    }
    newestFirst.push(...older);
    const omit = new Set(replaces === undefined ? [] : [replaces]);
    const characterNames = await withCharacterNames(this.store, sceneNames, newestFirst);
    const history = await buildHistory(newestFirst, {
      budget,
      omit,
      textCost: (message) => costs.get(message.id) ?? 0,
      seeImages,
      accounts,
      answererId: character.id,
      characterNames,
      labelPeople,
      files: this.files,
    });
    const olderKept = Math.max(0, history.kept - 1 - later.length);
    // Replaced replies count as kept but are not sent.
    const sent = newestFirst.slice(0, history.kept).filter((message) => !omit.has(message.id));
    const anyFellOut = olderKept < older.length || !exhausted;
    // Example dialogue only beside the whole history, in the room it left: it is the first thing to go.
    const examples = await fitExamples(this.tokens, card.texts.examples, anyFellOut ? 0 : budget - history.used);
    const system = examples.blocks.length === 0 ? bare : compose(examples.blocks);
    const countedTokens = framing.promptTokens + systemTokens + examples.tokens + insertionCost + sent.reduce((sum, message) => sum + (costs.get(message.id) ?? 0), 0);
    const textTokens = systemTokens - framing.messageTokens + examples.tokens + parts.insertionTokens + sent.reduce((sum, message) => sum + (texts.get(message.id) ?? 0), 0);
    return {
      request: { messages: insertIntoHistory([{ role: 'system', content: system }, ...history.messages], parts.insertions), maxTokens: replyTokens },
      countedTokens,
      textTokens,
      withImages: history.withImages,
      contextTokens,
      firstKept: olderKept === 0 ? userMessage.position : (older[olderKept - 1]?.position ?? userMessage.position),
      anyFellOut,
      usedMemoryIds,
      characterNames,
      usedLorebookEntryIds: parts.loreIds,
    };
  }

  /**
   * The reply's share of `contextTokens`: as configured (start-up checked it is smaller than the
   * configured context), but at most half of a context learned smaller than that, so a small
   * slot still holds a prompt. An engine's own context (a function) was never checked against
   * the reply: it gets the same cap.
   */
  #replyTokens(contextTokens: number): number {
    const configured = this.options.contextTokens;
    if (typeof configured === 'number' && contextTokens >= configured) return this.options.maxReplyTokens;
    return Math.min(this.options.maxReplyTokens, Math.floor(contextTokens / 2));
  }

  /**
   * The system prompt beside the newest message and the lorebook's history insertions: what the
   * character knows of the person gives way first, the least relevant first, then its memories,
   * the summary, and the lorebook entries, the last let in first.
   */
  async #system(
    character: CharacterRecord,
    memories: readonly MemoryRecord[],
    summary: string | undefined,
    available: number,
    newestCost: number,
    others: readonly string[],
    framing: PromptFraming,
    card: CardContext,
    person?: { name: string; facts: readonly { id: string; text: string }[] },
  ): Promise<{ system: string; systemTokens: number; usedMemoryIds: string[]; parts: CardParts; compose: (examples: readonly string[]) => string }> {
    const room = available - newestCost;
    let kept = [...memories];
    let known = [...(person?.facts ?? [])];
    let withSummary = summary;
    let lore = card.lore.length;
    const fewer = (count: number) => count - Math.max(1, Math.ceil(count / 4));
    for (;;) {
      const parts = cardParts(card, lore, []);
      const facts = person && known.length > 0 ? { name: person.name, facts: known.map((fact) => fact.text) } : undefined;
      const memoriesKept = kept;
      const summaryKept = withSummary;
      const compose = (examples: readonly string[]) => systemPrompt(character, memoriesKept, summaryKept, others, facts, { ...parts.sections, examples });
      const system = compose([]);
      const [counted = 0] = await this.tokens.count([system]);
      const systemTokens = counted + framing.messageTokens;
      const needed = systemTokens + parts.insertionTokens + framing.messageTokens * parts.insertions.length;
      if (needed <= room) return { system, systemTokens, usedMemoryIds: [...kept.map((memory) => memory.id), ...known.map((fact) => fact.id)], parts, compose };
      if (known.length > 0) known = known.slice(0, fewer(known.length));
      else if (kept.length > 0) kept = kept.slice(0, fewer(kept.length));
      else if (withSummary !== undefined) withSummary = undefined;
      else if (lore > 0) lore = fewer(lore);
      else if (needed >= available) {
        // Raising LLM_CONTEXT_TOKENS alone does not help when the engine's own context is the smaller.
        throw new AppError('CONFLICT', "The character description and memories fill the whole context the chat engine gives a request; shorten them, or give the engine a larger context (and LLM_CONTEXT_TOKENS with it).");
      } else {
        // Stored under a larger context than the model has now (or a changed character).
        throw new AppError('VALIDATION_FAILED', `The message is too long for this character's context: about ${available - needed} tokens are left for it; send a shorter one.`);
      }
    }
  }
}

