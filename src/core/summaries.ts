import type { Conversations } from './conversations.js';
import type { ChatModel, Logger, TokenCounter } from './ports.js';
import type { MessageRecord } from './records.js';
import type { RepositoryStore } from './repositories.js';
import { promptFramingOf } from './tokens.js';
import { ThinkFilter } from './think-filter.js';

export interface SummaryOptions {
  /** How many uncovered messages must have fallen out of the window before summarising again. */
  minimumMessages: number;
  /** The longest summary asked of the engine, in tokens. */
  maxSummaryTokens: number;
}

/** The summary of a conversation's messages up to and including `throughPosition`. */
export interface ConversationSummary {
  text: string;
  throughPosition: number;
}

/**
 * `names` and the names of every other character who wrote one of `messages` (one taken out
 * of a scene keeps its name on the lines it wrote there), by id.
 */
export async function withCharacterNames(store: RepositoryStore, names: ReadonlyMap<string, string>, messages: readonly MessageRecord[]): Promise<Map<string, string>> {
  const missing = new Set(messages.flatMap((message) => (message.participantType === 'character' && !names.has(message.participantId) ? [message.participantId] : [])));
  const found = await Promise.all([...missing].map((id) => store.characters.get(id)));
  return new Map([...names, ...found.flatMap((each): [string, string][] => (each ? [[each.id, each.name]] : []))]);
}

export const defaultSummaryOptions: SummaryOptions = { minimumMessages: 6, maxSummaryTokens: 300 };

/**
 * The rolling summary of what fell out of a conversation's context window, written by the
 * chat model in the background (a reply never waits for it) and put into the system prompt.
 */
export class ConversationSummaries {
  /** Conversations being summarised now: one summary at a time each. */
  readonly #running = new Set<string>();

  constructor(
    private readonly store: RepositoryStore,
    private readonly conversations: Conversations,
    private readonly model: ChatModel,
    private readonly tokens: TokenCounter,
    private readonly logger: Logger,
    private readonly options: SummaryOptions,
    /** Tokens the summarising prompt may use (the context less the summary's own length). */
    private readonly promptTokens: () => Promise<number>,
  ) {}

  get(conversationId: string): Promise<ConversationSummary | undefined> {
    return this.conversations.summary(conversationId);
  }

  /**
   * Summarises, when enough has fallen out, the messages before position `firstKept` that the
   * summary does not cover yet. Resolves when done (or skipped); never rejects.
   */
  async update(characterNames: ReadonlyMap<string, string>, conversationId: string, firstKept: number): Promise<void> {
    if (this.#running.has(conversationId)) return;
    this.#running.add(conversationId);
    try {
      const previous = await this.get(conversationId);
      const range = { beforePosition: firstKept, ...(previous ? { afterPosition: previous.throughPosition } : {}) };
      // A short, limited read first: most replies have too little fallen out to summarise.
      const enough = await this.conversations.messages(conversationId, { ...range, limit: this.options.minimumMessages });
      if (enough.length < this.options.minimumMessages) return;
      const fallen = await this.conversations.messages(conversationId, range);
      const last = fallen.at(-1);
      if (!last) return;
      const text = await this.#write(await withCharacterNames(this.store, characterNames, fallen), previous?.text, fallen);
      if (!text) return;
      await this.store.transaction(async (repositories) => {
        // Cleared meanwhile: the summary would speak of messages that are gone.
        const [still] = await repositories.conversations.messages(conversationId, { afterPosition: last.position - 1, limit: 1 });
        if (still?.id !== last.id) return;
        await repositories.conversations.setSummary(conversationId, text, last.position);
      });
    } catch (error) {
      this.logger.warn({ conversationId, err: error }, 'summarising the earlier conversation failed; it is tried again later');
    } finally {
      this.#running.delete(conversationId);
    }
  }

  async #write(names: ReadonlyMap<string, string>, previous: string | undefined, fallen: readonly MessageRecord[]): Promise<string> {
    const cast = [...new Set(names.values())];
    const who = cast.length <= 1 ? (cast[0] ?? 'a character') : `${cast.slice(0, -1).join(', ')} and ${cast.at(-1)}`;
    const instruction =
      `You keep the running summary of a role-play conversation between ${who} and the people talking with them. ` +
      `Write one short paragraph, at most ${Math.floor(this.options.maxSummaryTokens * 0.6)} words, of what happened: names, facts, promises, ` +
      'feelings and open questions. Answer with the summary only.';
    const lines = fallen.map((message) => `${message.participantType === 'character' ? (names.get(message.participantId) ?? 'Character') : 'User'}: ${message.content || '[an image]'}`);
    const head = previous ? `Summary so far: ${previous}\n\nWhat was said next:\n` : 'What was said:\n';
    // The newest lines matter most; the oldest give way when they do not all fit.
    const [context, framing, [fixed = 0, ...costs]] = await Promise.all([
      this.promptTokens(),
      promptFramingOf(this.tokens),
      this.tokens.count([`${instruction}\n${head}`, ...lines]),
    ]);
    const budget = context - this.options.maxSummaryTokens - 2 * framing.messageTokens - framing.promptTokens;
    let used = fixed;
    let first = lines.length;
    while (first > 0 && used + (costs[first - 1] ?? 0) + 1 <= budget) {
      first -= 1;
      used += (costs[first] ?? 0) + 1;
    }
    if (first === lines.length) {
      // The instruction and the summary so far leave no room for a line: asking would only fail.
      this.logger.info({ context, fixedTokens: fixed, maxSummaryTokens: this.options.maxSummaryTokens }, 'the rolling summary is not updated: the context has no room for it; lower LLM_SUMMARY_MAX_TOKENS');
      return '';
    }
    const result = await this.model.generate({
      messages: [
        { role: 'system', content: instruction },
        { role: 'user', content: `${head}${lines.slice(first).join('\n')}` },
      ],
      maxTokens: this.options.maxSummaryTokens,
    });
    const filter = new ThinkFilter();
    return (filter.push(result.text) + filter.end()).trim();
  }
}
