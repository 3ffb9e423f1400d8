/**
 * What the chat engine is asked to learn from a batch of messages, and how its answer is
 * checked. The engine cites the message each fact comes from, and the fact is about that
 * message's author whatever the engine says: a character's line, or a statement by someone
 * else, can never become a fact about the wrong person. An answer that does not follow the
 * schema is refused (and the batch tried again later), never stored.
 */
import { z } from 'zod';
import type { ChatRequest } from '../ports.js';
import type { MessageRecord } from '../records.js';

/** A message of the batch as the engine sees it, numbered from 1. */
export interface ExtractionLine {
  message: Pick<MessageRecord, 'id' | 'content' | 'participantId' | 'participantType' | 'createdMicros'>;
  /** The speaker's name, as the conversation shows it. */
  speaker: string;
}

/** What is already known about a person (to not repeat it, and to say what a new fact replaces). */
export interface KnownFact {
  /** Short id the engine may cite in `replaces`. */
  key: string;
  /** The stored memory it is. */
  memoryId: string;
  accountId: string;
  text: string;
}

/** One fact learned: about the author of the cited message. */
export interface LearnedFact {
  subjectAccountId: string;
  messageId: string;
  /** Third person, naming the person: "Ana's sister is called Mia." */
  text: string;
  /** As the person would say it: "My sister is called Mia." (a character's own memories are first person). */
  firstPerson: string;
  importance: number;
  /** The known fact (its key) this one makes untrue. */
  replaces: string | undefined;
  statedMicros: number;
}

const maxFactCharacters = 300;

/**
 * The JSON schema the engine answers in (`response_format`, or a grammar on the embedded engine).
 * Only what every engine's structured output takes: bounds are checked after, by `answerSchema`.
 */
export const extractionSchema = {
  type: 'object',
  properties: {
    facts: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          message: { type: 'integer' },
          fact: { type: 'string' },
          firstPerson: { type: 'string' },
          importance: { type: 'integer' },
          // anyOf: what OpenAI's strict mode takes for a nullable field (the embedded grammar reads it as oneOf).
          replaces: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        },
        required: ['message', 'fact', 'firstPerson', 'importance', 'replaces'],
        additionalProperties: false,
      },
    },
  },
  required: ['facts'],
  additionalProperties: false,
} as const;

/** The same shape, checked: grammars follow structure, not every bound (an integer came back with an exponent). */
const answerSchema = z.object({
  facts: z
    .array(
      z.object({
        message: z.number().int().min(1),
        fact: z.string().trim().min(3).max(maxFactCharacters),
        firstPerson: z.string().trim().min(3).max(maxFactCharacters),
        importance: z.number().int().min(1).max(5),
        replaces: z.string().nullable(),
      }),
    )
    .max(20),
});

export class MalformedExtraction extends Error {
  override readonly name = 'MalformedExtraction';
}

/** The request: instructions, the known facts, and the numbered lines with their dates. */
export function extractionRequest(characterName: string, lines: readonly ExtractionLine[], known: readonly KnownFact[], maxTokens: number): ChatRequest {
  const people = [...new Set(lines.filter((line) => line.message.participantType === 'account').map((line) => line.speaker))];
  const system = [
    `You read a conversation between ${people.join(', ') || 'people'} and ${characterName}, and list the facts each person states about themselves.`,
    '',
    'Rules:',
    `- Only facts a person says about their own life, in their own message: never from ${characterName}'s lines, never what one person says about another, never questions, greetings, jokes or role-play.`,
    '- One short fact per item. "fact" is in the third person and names the person ("Ana\'s sister is called Mia."); "firstPerson" is the same fact as the person would say it ("My sister is called Mia.").',
    '- A relative date becomes a date, using the date of the message: said on Thursday 2026-11-26, "on Monday" is "on Monday 2026-11-30".',
    '- "message" is the number of the message the fact comes from.',
    '- "importance": 1 for trivia, 3 for something a friend would remember, 5 for life-changing.',
    '- If a known fact below is already what the message says, leave it out. If the message makes a known fact untrue, give that fact\'s key in "replaces"; otherwise "replaces" is null.',
    '- Nothing to learn: an empty list.',
    'Answer with one JSON object and nothing else: {"facts":[{"message":1,"fact":"…","firstPerson":"…","importance":3,"replaces":null}]}',
  ].join('\n');
  const knownText = known.length === 0 ? 'Known facts: none.' : ['Known facts:', ...known.map((fact) => `[${fact.key}] ${fact.text}`)].join('\n');
  const numbered = lines.map((line, index) => `[${index + 1}] ${dateOf(line.message.createdMicros)} ${line.speaker}${line.message.participantType === 'character' ? ` (${characterName})` : ''}: ${line.message.content}`);
  return {
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: `${knownText}\n\nConversation:\n${numbered.join('\n')}` },
    ],
    maxTokens,
    temperature: 0,
    responseFormat: { name: 'learned_facts', schema: extractionSchema },
  };
}

/**
 * The facts of an answer, each about the author of the message it cites; a fact citing no
 * message of the batch or a character's line, or not naming the line's author, is dropped (and counted). Throws
 * `MalformedExtraction` when the answer is not the schema's JSON.
 */
export function parseExtraction(answer: string, lines: readonly ExtractionLine[], known: readonly KnownFact[]): { facts: LearnedFact[]; dropped: number } {
  // The error says what was wrong, never what the engine wrote: its answer holds what people said.
  let json: unknown;
  try {
    json = JSON.parse(jsonPart(answer));
  } catch {
    throw new MalformedExtraction('the engine did not answer JSON');
  }
  const checked = answerSchema.safeParse(json);
  if (!checked.success) {
    const where = [...new Set(checked.error.issues.map((issue) => issue.path.join('.') || '(root)'))].slice(0, 5).join(', ');
    throw new MalformedExtraction(`the engine's JSON does not follow the facts schema at ${where}`);
  }
  const parsed = checked.data;
  const facts: LearnedFact[] = [];
  let dropped = 0;
  for (const item of parsed.facts) {
    const line = lines[item.message - 1];
    if (line === undefined || line.message.participantType !== 'account') {
      dropped += 1;
      continue;
    }
    // A fact must name the person whose line it comes from ("fact" names them, as asked): one that
    // names someone else is that person's words about another, and is not kept.
    if (!item.fact.toLowerCase().includes(line.speaker.toLowerCase())) {
      dropped += 1;
      continue;
    }
    const subjectAccountId = line.message.participantId;
    // A replaced fact must be one known about the same person.
    const replaces = item.replaces !== null && known.some((fact) => fact.key === item.replaces && fact.accountId === subjectAccountId) ? item.replaces : undefined;
    facts.push({ subjectAccountId, messageId: line.message.id, text: item.fact, firstPerson: item.firstPerson, importance: item.importance, replaces, statedMicros: line.message.createdMicros });
  }
  return { facts, dropped };
}

/** Engines without structured output may wrap the JSON in a code fence or a sentence. */
function jsonPart(answer: string): string {
  const start = answer.indexOf('{');
  const end = answer.lastIndexOf('}');
  return start >= 0 && end > start ? answer.slice(start, end + 1) : answer;
}

const weekdays = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** `2026-11-26 (Thursday)`, in UTC: the date a relative one is resolved from. */
function dateOf(micros: number): string {
  const date = new Date(Math.floor(micros / 1000));
  return `${date.toISOString().slice(0, 10)} (${weekdays[date.getUTCDay()]})`;
}
