/**
 * The fake engine's side of learning: it answers an extraction request (`response_format`
 * named `learned_facts`) as a model would, from the numbered lines it was sent, so tests of
 * learning go through the real wire. A person's line "My …" or "I …" is a fact about them;
 * a known fact starting with the same three words (in either person) is one the new fact replaces.
 */
import type { FakeChatScript, FakeRequestBody } from './fake-openai.js';

export interface FakeExtractorOptions {
  /** Also claim a fact from this message number (to see a character's line refused). */
  citeAlso?: number;
  /** Answer this text instead (malformed answers). */
  raw?: string;
}

/** Whether a request to the fake is learning's extraction. */
export function isExtraction(body: FakeRequestBody): boolean {
  const format = body.response_format as { json_schema?: { name?: string } } | undefined;
  return format?.json_schema?.name === 'learned_facts';
}

export function extractionAnswer(body: FakeRequestBody, options: FakeExtractorOptions = {}): FakeChatScript {
  if (options.raw !== undefined) return { reply: options.raw };
  const text = String(body.messages?.at(-1)?.content ?? '');
  const known = [...text.matchAll(/^\[(k\d+)\] (.+)$/gm)].map(([, key, fact]) => ({ key: key!, fact: fact! }));
  const facts: unknown[] = [];
  for (const [, number, speaker, said] of text.matchAll(/^\[(\d+)\] \S+ \(\w+\) ([^:(]+?)(?: \([^)]*\))?: (.+)$/gm)) {
    const line = said!.trim();
    const mine = /^(My|I) /.exec(line);
    if (!mine) continue;
    const third = line.replace(/^My /, `${speaker}'s `).replace(/^I /, `${speaker} `);
    // A person's known fact is third person; a character's own, first person.
    const starts = [third, line].map((form) => form.split(' ').slice(0, 3).join(' ').toLowerCase());
    const replaced = known.find((each) => starts.some((start) => each.fact.toLowerCase().startsWith(start)) && ![third, line].some((form) => each.fact.toLowerCase() === form.toLowerCase()));
    facts.push({ message: Number(number), fact: third, firstPerson: line, importance: 3, replaces: replaced?.key ?? null });
  }
  if (options.citeAlso !== undefined) facts.push({ message: options.citeAlso, fact: 'Someone said something.', firstPerson: 'I said something.', importance: 1, replaces: null });
  return { reply: JSON.stringify({ facts }) };
}
