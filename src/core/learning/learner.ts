/**
 * Learning in the background: a conversation's new messages are queued in the database as a
 * batch once a few have come (or it has gone quiet), and a worker claims each batch by lease,
 * so every batch is learned once across any number of processes. A reply never waits for it.
 * The engine's cost is bounded per character and day, and per person (learning-budget.ts); a failure (the engine down, an answer
 * that is not the schema's) is logged and the batch tried again later, nothing stored.
 */
import { EngineError, redactUpstream } from '../errors.js';
import { lessonsOf, originOf, usableOrigins } from '../memory-scope.js';
import { conversationPlace } from './places.js';
import type { ChatModel, ChatRequest, Clock, Embedder, IdGenerator, Logger, TokenCounter } from '../ports.js';
import { TextVectors } from '../text-ranking.js';
import { refusedParaphrase } from './near-duplicates.js';
import type { CharacterRecord, LearnedMemoryRecord, MemoryBatchRecord, MemoryOrigin } from '../records.js';
import type { ConversationState, Repositories, RepositoryStore, StoredMessage } from '../repositories.js';
import { type ExtractionLine, type KnownFact, type LearnedFact, MalformedExtraction, extractionRequest, parseExtraction } from './extraction.js';
import { LearningSettings, learnable } from './learning-settings.js';
import { LearningBudget, type Reserved } from './learning-budget.js';
import { type SecretSpan, keepable, secretsIn, withoutSecrets } from './secrets.js';

export interface LearnerOptions {
  /** New messages that make a batch due at once. */
  batchMessages: number;
  /** A conversation quiet this long has the rest of its messages learned. */
  quietMs: number;
  /** Engine tokens extraction may spend per character and day (prompt and answer). */
  dailyTokensPerCharacter: number;
  /** Of those, what one person's lines may spend per character and day. */
  dailyTokensPerPerson: number;
  /** The longest answer asked of the engine. */
  maxAnswerTokens: number;
  /** How often an idle worker looks for a due batch. */
  pollMs: number;
  /** A claimed batch is the worker's this long, renewed while its engine request runs. */
  leaseMs: number;
  /** The longest an extraction request may take (a hung engine does not hold a batch for ever). */
  requestTimeoutMs: number;
  /** The longest wait before a failed batch is tried again. */
  maxBackoffMs: number;
  /** Done batches older than this are deleted (each conversation's newest stays: the next starts after it). */
  keepDoneBatchesMs: number;
}

export const defaultLearnerOptions: LearnerOptions = {
  batchMessages: 6,
  quietMs: 2 * 60_000,
  dailyTokensPerCharacter: 200_000,
  dailyTokensPerPerson: 50_000,
  maxAnswerTokens: 1024,
  pollMs: 2_000,
  leaseMs: 2 * 60_000,
  requestTimeoutMs: 5 * 60_000,
  maxBackoffMs: 60 * 60_000,
  keepDoneBatchesMs: 7 * 24 * 60 * 60_000,
};

/** Known facts shown to the engine per person, newest first. */
const knownFactsShown = 40;
/** The most messages one extraction request reads. */
const maxBatchMessages = 40;
/** After this many failed tries a batch is given up, with an error in the log. */
const maxAttempts = 8;
/** The wait before a failed batch is tried the first time again; each failure after doubles it. */
const firstRetryMs = 30_000;
const dayMillis = 24 * 60 * 60_000;
/** How often an idle worker deletes old done batches. */
const pruneEveryMs = 60 * 60_000;

/** A known fact as the learner keeps it: which memory, of which kind, in use or not, and when it was said. */
type KnownMemory = KnownFact & { kind: 'person' | 'own'; status: LearnedMemoryRecord['status']; statedMicros: number };

export class Learner {
  /** Per conversation: messages noticed since it was last queued here, and the quiet timer. */
  readonly #pending = new Map<string, { count: number; timer: NodeJS.Timeout }>();
  readonly #settings: LearningSettings;
  readonly #budget: LearningBudget;
  /** Embeddings of refused proposals, when configured: a paraphrase of one is not proposed again. */
  readonly #vectors: TextVectors | undefined;
  #loop: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;
  #prunedAtMillis = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: RepositoryStore,
    private readonly model: ChatModel,
    private readonly tokens: TokenCounter,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly logger: Logger,
    private readonly workerId: string,
    private readonly options: LearnerOptions = defaultLearnerOptions,
    embedder?: Embedder,
  ) {
    this.#settings = new LearningSettings(store);
    this.#budget = new LearningBudget(store, tokens, clock, { perCharacter: options.dailyTokensPerCharacter, perPerson: options.dailyTokensPerPerson });
    this.#vectors = embedder && new TextVectors(embedder);
  }

  /**
   * A message of the conversation was stored at `position`: its batch is queued once
   * `batchMessages` came, or after `quietMs` without another. A process that stops first
   * loses only the timer: the next batch of the conversation takes these messages too.
   */
  noticed(conversationId: string, position: number): void {
    if (this.#stopped) return;
    const pending = this.#pending.get(conversationId);
    if (pending) clearTimeout(pending.timer);
    const count = (pending?.count ?? 0) + 1;
    if (count >= this.options.batchMessages) {
      this.#pending.delete(conversationId);
      this.#queue(conversationId, position);
      return;
    }
    const timer = setTimeout(() => {
      this.#pending.delete(conversationId);
      this.#queue(conversationId, position);
    }, this.options.quietMs);
    timer.unref();
    this.#pending.set(conversationId, { count, timer });
  }

  /** Claims and learns due batches until stopped, one at a time. */
  start(): void {
    if (this.#loop || this.#stopped) return;
    const tick = async () => {
      try {
        while (!this.#stopped && (await this.runOnce())) {
          // Another due batch may wait: go on at once.
        }
      } finally {
        if (!this.#stopped) this.#loop = setTimeout(() => void (this.#running = tick()), this.options.pollMs).unref();
      }
    };
    this.#loop = setTimeout(() => void (this.#running = tick()), 0).unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#loop);
    for (const pending of this.#pending.values()) clearTimeout(pending.timer);
    this.#pending.clear();
    await this.#running?.catch(() => undefined);
  }

  /** Learns one due batch, if any; answers whether there was one. Never rejects. */
  async runOnce(): Promise<boolean> {
    let batch: MemoryBatchRecord | undefined;
    try {
      batch = await this.store.memoryBatches.claim({ workerId: this.workerId, nowMillis: this.clock.nowMillis(), leaseMs: this.options.leaseMs });
      if (!batch) {
        await this.#pruneNowAndThen();
        return false;
      }
      const outcome = await this.#learn(batch);
      if (outcome.retryAtMillis !== undefined) {
        await this.store.memoryBatches.retry(batch.id, this.workerId, outcome.retryAtMillis, outcome.reason ?? 'deferred');
      } else {
        await this.store.memoryBatches.complete(batch.id, this.workerId);
      }
      return true;
    } catch (error) {
      if (batch && batch.attempts >= maxAttempts) {
        this.logger.error({ err: error, batchId: batch.id, conversationId: batch.conversationId, attempts: batch.attempts }, 'learning from a batch failed too often; it is given up');
        await this.store.memoryBatches.complete(batch.id, this.workerId).catch(() => undefined);
        return true;
      }
      this.logger.warn({ err: error, batchId: batch?.id, conversationId: batch?.conversationId }, 'learning from a batch failed; it is tried again later');
      if (batch) {
        // `attempts` counts claims, this failed one included: the first failure waits firstRetryMs.
        const backoff = Math.min(this.options.maxBackoffMs, firstRetryMs * 2 ** Math.min(Math.max(batch.attempts - 1, 0), 10));
        await this.store.memoryBatches.retry(batch.id, this.workerId, this.clock.nowMillis() + backoff, failureText(error)).catch(() => undefined);
      }
      return batch !== undefined;
    }
  }

  /** With nothing due, now and then: old done batches go, so the queue's table stays the size of the backlog. */
  async #pruneNowAndThen(): Promise<void> {
    const now = this.clock.nowMillis();
    if (now - this.#prunedAtMillis < pruneEveryMs) return;
    this.#prunedAtMillis = now;
    const pruned = await this.store.memoryBatches.pruneDone((now - this.options.keepDoneBatchesMs) * 1000);
    if (pruned > 0) this.logger.debug({ pruned }, 'old done memory batches deleted');
  }

  #queue(conversationId: string, throughPosition: number): void {
    const nowMillis = this.clock.nowMillis();
    void this.store.memoryBatches
      .enqueue(conversationId, throughPosition, { id: this.ids.uuid(), createdMicros: this.clock.nowMicros(), runAfterMillis: nowMillis })
      .catch((error: unknown) => this.logger.warn({ err: error, conversationId }, 'could not queue messages to learn from; the next batch takes them'));
  }

  /** Learns a batch; answers when to try again instead (the day's budget spent). */
  async #learn(batch: MemoryBatchRecord): Promise<{ retryAtMillis?: number; reason?: string }> {
    const state = await this.store.conversations.state(batch.conversationId);
    // A conversation cleared or gone: nothing left to learn.
    if (!state) return {};
    const said = (await this.store.conversations.messages(batch.conversationId, { afterPosition: batch.fromPosition - 1, beforePosition: batch.throughPosition + 1 })).filter(
      (message) => message.content.trim() !== '',
    );
    // Rule 7 (memory-scope.ts): what was only kept as context, or written by the admin as someone, teaches nothing.
    const spoken = said.filter((message) => message.participantType === 'account').map((message) => message.id);
    const unlearned = await this.store.memoryBatches.unlearned(spoken);
    const messages = said.filter((message) => !unlearned.has(message.id));
    // Said while its author had learning off for some of the characters: those learn nothing from it.
    const unlearnedBy = await this.store.memoryBatches.unlearnedBy(spoken.filter((id) => !unlearned.has(id)));
    if (messages.length === 0) return {};
    // A batch covering a long history (the first after learning was turned on) learns from its
    // newest messages only: one request's worth, not a prompt the engine would refuse forever.
    if (messages.length > maxBatchMessages) messages.splice(0, messages.length - maxBatchMessages);
    const place = await conversationPlace(this.store, batch.conversationId, state.speakers.map((speaker) => speaker.id));
    // Each character of the conversation (a scene holds several) hears and learns; a retried
    // batch runs only those whose facts are not stored yet, so no budget is spent twice.
    const done = new Set(await this.store.memoryBatches.doneCharacters(batch.id));
    for (const character of state.characters.filter((each) => !done.has(each.id))) {
      const heard = messages.filter((message) => !unlearnedBy.get(message.id)?.has(character.id));
      const deferred = await this.#learnFor(batch, character, state, heard, originOf(place), usableOrigins(place));
      if (deferred) return deferred;
    }
    return {};
  }

  async #learnFor(
    batch: MemoryBatchRecord,
    character: CharacterRecord,
    state: ConversationState,
    messages: readonly StoredMessage[],
    origin: LearnedMemoryRecord['origin'],
    /** What may be shown to the engine of what is known: only what may be used where this was said. */
    visibleOrigins: readonly MemoryOrigin[] | undefined,
  ): Promise<{ retryAtMillis: number; reason: string } | undefined> {
    const learnsFromOwner = await this.#settings.learnsFromOwner(character.id);
    const choices = new Map(await Promise.all(state.speakers.map(async (speaker) => [speaker.id, await this.#settings.choice(speaker.id)] as const)));
    // Learning is judged for each message as it was when said: what was said while it was off stays unlearned.
    const lessons = new Map(
      messages.map((message) => {
        const choice = choices.get(message.participantId);
        return [message.id, lessonsOf(message, { ownerAccountId: character.accountId, learnsFromOwner }, () => choice !== undefined && learnable(choice, character.id, message.createdMicros))];
      }),
    );
    // Nothing said by anyone who may be learned from: no engine call at all.
    if (![...lessons.values()].some((lesson) => lesson !== undefined)) return undefined;
    const names = new Map<string, string>([...state.speakers.map((speaker): [string, string] => [speaker.id, speaker.username]), ...state.characters.map((each): [string, string] => [each.id, each.name])]);
    // Lines of people who turned learning off stay out of the prompt altogether.
    // Secrets people said are withheld from the engine, and no fact repeating one is stored (secrets.ts).
    let lines: ExtractionLine[] = messages
      .filter((message) => message.participantType === 'character' || lessons.get(message.id) !== undefined)
      .map((message) => ({ message: { ...message, content: withoutSecrets(message.content) }, speaker: names.get(message.participantId) ?? 'someone' }));
    const secrets = messages.flatMap((message) => (message.participantType === 'account' ? secretsIn(message.content) : []));
    const tomorrow = (Math.floor(this.clock.nowMillis() / dayMillis) + 1) * dayMillis;
    // The budget (learning-budget.ts): a person past their share today is left out of the
    // request; with nobody left, or the character's own budget spent, the batch waits for tomorrow.
    for (;;) {
      const known = await this.#known(character, lines, lessons, visibleOrigins);
      const request = extractionRequest(character.name, lines, known, this.options.maxAnswerTokens);
      const reservation = await this.#budget.reserve(character.id, request, lines);
      if (reservation.reserved) return this.#ask(batch, character, state, { request, lines, known, lessons, secrets, origin, reservation });
      if (reservation.character) {
        this.logger.info({ characterId: character.id, day: dayOf(this.clock.nowMillis()) }, "the character's daily learning budget is spent; the batch waits for tomorrow");
        return { retryAtMillis: tomorrow, reason: 'daily learning budget spent' };
      }
      const spent = new Set(reservation.people);
      for (const accountId of spent) this.logger.info({ characterId: character.id, accountId }, "a person's daily learning budget with the character is spent; their lines are left out");
      lines = lines.filter((line) => !(line.message.participantType === 'account' && spent.has(line.message.participantId)));
      if (!lines.some((line) => line.message.participantType === 'account')) return { retryAtMillis: tomorrow, reason: 'daily learning budget of its people spent' };
    }
  }

  /** Asks the engine for the facts of a reserved request, charges what it reported, and stores them. */
  async #ask(
    batch: MemoryBatchRecord,
    character: CharacterRecord,
    state: ConversationState,
    prepared: {
      request: ChatRequest;
      lines: readonly ExtractionLine[];
      known: readonly KnownMemory[];
      lessons: ReadonlyMap<string, 'person' | 'own' | undefined>;
      secrets: readonly SecretSpan[];
      origin: LearnedMemoryRecord['origin'];
      reservation: Reserved;
    },
  ): Promise<undefined> {
    const { request, lines, known, lessons, secrets, origin, reservation } = prepared;
    const answer = await this.#whileHeld(batch, () => this.model.generate(request, { signal: AbortSignal.timeout(this.options.requestTimeoutMs), background: true }));
    await this.#budget
      .settle(reservation, answer.usage)
      .catch((error: unknown) => this.logger.warn({ err: error, characterId: character.id }, 'could not correct the learning budget to the usage the engine reported; the reservation stands'));
    const parsed = parseExtraction(answer.text, lines, known);
    const safe = parsed.facts.filter((fact) => keepable(fact, secrets));
    // Counted, never their words: they hold the secret.
    if (safe.length < parsed.facts.length) this.logger.info({ characterId: character.id, withheld: parsed.facts.length - safe.length }, 'facts holding a password, key, code or card or bank number were left out');
    const facts = await this.#notRefused(character, safe, lessons);
    const dropped = parsed.dropped;
    if (dropped > 0) this.logger.info({ characterId: character.id, dropped }, 'facts citing no person’s message were dropped');
    // One transaction: this character's facts, its part of the batch marked done, and the lease
    // checked. A worker that lost its lease stores nothing; a retry skips a part that is done.
    await this.store.transaction(async (repositories) => {
      if (!(await repositories.memoryBatches.finishCharacter(batch.id, character.id, this.workerId, this.clock.nowMillis(), this.clock.nowMicros()))) {
        throw new Error('the batch lease was lost while the engine answered; another worker learns it');
      }
      for (const fact of facts) {
        const kind = lessons.get(fact.messageId);
        if (kind === undefined) continue;
        await this.#store(repositories, character, fact, kind, origin, known, state.conversation.id);
      }
    });
    return undefined;
  }

  /**
   * The facts less those that would propose again, in other words, a memory the owner refused
   * (the database refuses the same words; near-duplicates.ts says what counts as the same fact).
   */
  async #notRefused(character: CharacterRecord, facts: readonly LearnedFact[], lessons: ReadonlyMap<string, 'person' | 'own' | undefined>): Promise<LearnedFact[]> {
    if (!facts.some((fact) => lessons.get(fact.messageId) === 'own')) return [...facts];
    const refused = await this.store.learnedMemories.own(character.id, ['rejected']);
    const kept: LearnedFact[] = [];
    for (const fact of facts) {
      const paraphrased = lessons.get(fact.messageId) === 'own' ? await refusedParaphrase(fact.firstPerson, refused, this.#vectors) : undefined;
      if (paraphrased) this.logger.info({ characterId: character.id, memoryId: paraphrased.id }, 'a proposal saying what the owner refused is left out');
      else kept.push(fact);
    }
    return kept;
  }

  /** Runs `work` while renewing the batch's lease, so a long engine request keeps it. */
  async #whileHeld<T>(batch: MemoryBatchRecord, work: () => Promise<T>): Promise<T> {
    const renew = () =>
      void this.store.memoryBatches
        .renew(batch.id, this.workerId, this.clock.nowMillis(), this.options.leaseMs)
        .catch((error: unknown) => this.logger.warn({ err: error, batchId: batch.id }, 'could not renew the lease of a batch'));
    const timer = setInterval(renew, Math.max(1, Math.floor(this.options.leaseMs / 3)));
    timer.unref();
    try {
      return await work();
    } finally {
      clearInterval(timer);
    }
  }

  /**
   * What the character already knows of the people in these lines, as the kind being learned of
   * each: a person's memories usable where this was said (never a DM's in a server, never anyone
   * else's), or for an owner whose facts grow the character, its own (rejected ones too: never
   * proposed again).
   */
  async #known(
    character: CharacterRecord,
    lines: readonly ExtractionLine[],
    lessons: ReadonlyMap<string, 'person' | 'own' | undefined>,
    visibleOrigins: readonly MemoryOrigin[] | undefined,
  ): Promise<KnownMemory[]> {
    const kinds = new Map<string, 'person' | 'own'>();
    for (const line of lines) {
      const kind = lessons.get(line.message.id);
      if (line.message.participantType === 'account' && kind !== undefined) kinds.set(line.message.participantId, kind);
    }
    const known: KnownMemory[] = [];
    for (const [accountId, kind] of kinds) {
      const memories =
        kind === 'own' ? await this.store.learnedMemories.own(character.id, ['active', 'pending', 'rejected']) : await this.store.learnedMemories.usableAbout(character.id, accountId, visibleOrigins);
      for (const memory of memories.slice(0, knownFactsShown)) {
        const text = memory.status === 'rejected' ? `${memory.text} (refused: never propose it again)` : memory.text;
        known.push({ key: `k${known.length + 1}`, memoryId: memory.id, accountId, text, kind, status: memory.status, statedMicros: memory.statedMicros });
      }
    }
    return known;
  }

  async #store(
    repositories: Repositories,
    character: CharacterRecord,
    fact: LearnedFact,
    kind: 'person' | 'own',
    origin: LearnedMemoryRecord['origin'],
    known: readonly KnownMemory[],
    conversationId: string,
  ): Promise<void> {
    const now = this.clock.nowMicros();
    const memory: LearnedMemoryRecord = {
      id: this.ids.uuid(),
      characterId: character.id,
      subjectAccountId: fact.subjectAccountId,
      kind,
      text: kind === 'own' ? fact.firstPerson : fact.text,
      // A character's own memory is told to anyone: its owner approves it first.
      status: kind === 'own' ? 'pending' : 'active',
      origin: kind === 'own' ? 'private' : origin,
      conversationId,
      messageIds: [fact.messageId],
      importance: fact.importance,
      statedMicros: fact.statedMicros,
      createdMicros: now,
      updatedMicros: now,
      supersededMicros: null,
      supersededBy: null,
    };
    const replaced = fact.replaces === undefined ? undefined : known.find((each) => each.key === fact.replaces);
    // A fact replaces one of its own kind still in use; one said before the fact it would replace
    // (a batch retried late) is history, not news: it is not stored.
    if (replaced !== undefined && replaced.statedMicros > fact.statedMicros) {
      this.logger.info({ characterId: character.id, memoryId: replaced.memoryId }, 'a fact older than the one it would replace is left out');
      return;
    }
    // The character's own approved memory is told to anyone: a contradiction is proposed as its
    // replacement, and the owner's approval supersedes it (LearnedMemories.approve).
    if (replaced !== undefined && replaced.kind === 'own' && replaced.status === 'active' && kind === 'own') {
      await repositories.learnedMemories.add({ ...memory, replaces: replaced.memoryId });
      return;
    }
    if (replaced !== undefined && replaced.kind === kind && replaced.status === 'active' && kind === 'person') {
      try {
        await repositories.learnedMemories.supersede(replaced.memoryId, memory, now);
        return;
      } catch (error) {
        // Replaced meanwhile (a correction by the person): store the new fact on its own.
        this.logger.info({ err: error, memoryId: replaced.memoryId }, 'the fact to replace is gone; storing the new one alone');
      }
    }
    await repositories.learnedMemories.add(memory);
  }
}

/** The UTC day a budget is counted in, YYYY-MM-DD. */
function dayOf(millis: number): string {
  return new Date(millis).toISOString().slice(0, 10);
}

/** What the batch records of a failure: ours, bounded; an engine's words are redacted. */
function failureText(error: unknown): string {
  // Its message names what was wrong, never the engine's words (they hold what people said).
  if (error instanceof MalformedExtraction) return error.message;
  if (error instanceof EngineError) return `${error.code}: ${redactUpstream(error.upstream, 300)}`;
  return error instanceof Error ? error.message.slice(0, 500) : 'failed';
}
