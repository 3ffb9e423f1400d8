/**
 * What extraction may spend: per character and day (`LEARNING_DAILY_TOKENS`), and per person
 * and character and day (`LEARNING_DAILY_TOKENS_PER_PERSON`), so one talkative person cannot
 * spend a public character's learning for everyone. A request reserves the most it may cost
 * (its prompt as counted, and the longest answer asked), each person charged the share of it
 * their lines make up; once the engine answers, the reservation is corrected to the usage it
 * reported. A request that failed keeps its reservation: the engine may have spent it.
 */
import type { ChatRequest, ChatUsage, Clock, TokenCounter } from '../ports.js';
import type { LearningSpending, RepositoryStore } from '../repositories.js';
import type { ExtractionLine } from './extraction.js';

export interface BudgetLimits {
  perCharacter: number;
  perPerson: number;
}

/** A reservation held for one request, to correct once the engine says what it used. */
export interface Reserved {
  reserved: true;
  day: string;
  spending: LearningSpending;
  promptTokens: number;
  maxAnswerTokens: number;
  /** Each person's part of the request, by the tokens of their lines. */
  weights: ReadonlyMap<string, number>;
}

export type ReservationOutcome = Reserved | { reserved: false; character: boolean; people: string[] };

export class LearningBudget {
  constructor(
    private readonly store: RepositoryStore,
    private readonly tokens: TokenCounter,
    private readonly clock: Clock,
    private readonly limits: BudgetLimits,
  ) {}

  /** Reserves what `request` may cost for the character and the people whose lines it holds. */
  async reserve(characterId: string, request: ChatRequest, lines: readonly ExtractionLine[]): Promise<ReservationOutcome> {
    const maxAnswerTokens = request.maxTokens ?? 0;
    const promptTokens = sum(await this.tokens.count(request.messages.map((message) => String(message.content))));
    const people = lines.filter((line) => line.message.participantType === 'account');
    const counted = await this.tokens.count(people.map((line) => line.message.content));
    const weights = new Map<string, number>();
    people.forEach((line, index) => weights.set(line.message.participantId, (weights.get(line.message.participantId) ?? 0) + (counted[index] ?? 0)));
    const day = new Date(this.clock.nowMillis()).toISOString().slice(0, 10);
    const spending = spendingOf(characterId, promptTokens + maxAnswerTokens, weights);
    const outcome = await this.store.learningPerPerson.reserve(day, spending, { character: this.limits.perCharacter, person: this.limits.perPerson });
    return outcome.reserved ? { reserved: true, day, spending, promptTokens, maxAnswerTokens, weights } : outcome;
  }

  /**
   * Corrects the reservation to the usage the engine reported (a part it did not report stays
   * as reserved); answers the tokens charged. Nothing reported: the reservation stands.
   */
  async settle(reserved: Reserved, usage: ChatUsage | undefined): Promise<number> {
    if (usage?.promptTokens === undefined && usage?.completionTokens === undefined) return reserved.spending.tokens;
    const used = (usage.promptTokens ?? reserved.promptTokens) + (usage.completionTokens ?? reserved.maxAnswerTokens);
    const charged = spendingOf(reserved.spending.characterId, used, reserved.weights);
    const reservedShares = new Map(reserved.spending.people.map((person) => [person.accountId, person.tokens]));
    await this.store.learningPerPerson.correct(reserved.day, {
      characterId: charged.characterId,
      tokens: charged.tokens - reserved.spending.tokens,
      people: charged.people.map((person) => ({ accountId: person.accountId, tokens: person.tokens - (reservedShares.get(person.accountId) ?? 0) })),
    });
    return used;
  }
}

/** `tokens` for the character, and for each person the share their weight makes (rounded up). */
function spendingOf(characterId: string, tokens: number, weights: ReadonlyMap<string, number>): LearningSpending {
  const total = sum([...weights.values()]);
  const people = [...weights].map(([accountId, weight]) => ({
    accountId,
    tokens: Math.ceil(total > 0 ? (tokens * weight) / total : tokens / weights.size),
  }));
  return { characterId, tokens, people };
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
