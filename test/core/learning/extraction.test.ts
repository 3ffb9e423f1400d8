import { describe, expect, it } from 'vitest';
import { MalformedExtraction, extractionRequest, parseExtraction, type ExtractionLine, type KnownFact } from '../../../src/core/learning/extraction.js';

// Thursday 26 November 2026, 10:00 UTC.
const thursday = Date.UTC(2026, 10, 26, 10) * 1000;
const lines: ExtractionLine[] = [
  { message: { id: 'm1', content: 'I start a new job on Monday.', participantId: 'ana', participantType: 'account', createdMicros: thursday }, speaker: 'ana' },
  { message: { id: 'm2', content: 'My sister Mia says hi!', participantId: 'captain-character', participantType: 'character', createdMicros: thursday + 1 }, speaker: 'Captain' },
  { message: { id: 'm3', content: 'Ana is so tall.', participantId: 'bo', participantType: 'account', createdMicros: thursday + 2 }, speaker: 'bo' },
];
const known: KnownFact[] = [
  { key: 'k1', memoryId: 'old-ana', accountId: 'ana', text: 'ana works at the harbour.' },
  { key: 'k2', memoryId: 'old-bo', accountId: 'bo', text: 'bo lives in Oslo.' },
];

describe('extraction', () => {
  it('asks with dated, numbered lines (a character marked as such), the known facts, and a JSON schema', () => {
    const request = extractionRequest('Captain', lines, known, 512);
    const [system, user] = request.messages.map((message) => String(message.content));
    expect(system).toContain('never from Captain');
    expect(system).toContain('A relative date becomes a date');
    expect(user).toContain('[1] 2026-11-26 (Thursday) ana: I start a new job on Monday.');
    expect(user).toContain('[2] 2026-11-26 (Thursday) Captain (Captain): My sister Mia says hi!');
    expect(user).toContain('[k1] ana works at the harbour.');
    expect(request.responseFormat?.name).toBe('learned_facts');
    expect(request.temperature).toBe(0);
  });

  it("makes each fact about the cited message's author, drops a character's line, unknown messages and facts about someone else, and keeps a replacement only for the same person", () => {
    const answer = JSON.stringify({
      facts: [
        { message: 1, fact: 'ana starts a new job on Monday 2026-11-30.', firstPerson: 'I start a new job on Monday 2026-11-30.', importance: 4, replaces: 'k1' },
        { message: 2, fact: "The captain's sister is Mia.", firstPerson: 'My sister is Mia.', importance: 2, replaces: null },
        { message: 9, fact: 'Nobody said this.', firstPerson: 'Nobody said this.', importance: 1, replaces: null },
        // bo's words about ana: not a fact about bo (it does not name bo), and never about ana.
        { message: 3, fact: 'ana is tall.', firstPerson: 'I am tall.', importance: 1, replaces: null },
        // bo's own, which cannot replace ana's fact.
        { message: 3, fact: 'bo finds ana tall.', firstPerson: 'I find ana tall.', importance: 1, replaces: 'k1' },
      ],
    });
    const { facts, dropped } = parseExtraction(answer, lines, known);
    expect(dropped).toBe(3);
    expect(facts).toEqual([
      { subjectAccountId: 'ana', messageId: 'm1', text: 'ana starts a new job on Monday 2026-11-30.', firstPerson: 'I start a new job on Monday 2026-11-30.', importance: 4, replaces: 'k1', statedMicros: thursday },
      { subjectAccountId: 'bo', messageId: 'm3', text: 'bo finds ana tall.', firstPerson: 'I find ana tall.', importance: 1, replaces: undefined, statedMicros: thursday + 2 },
    ]);
  });

  it('reads JSON wrapped in a sentence or a code fence, and refuses anything else', () => {
    expect(parseExtraction('```json\n{"facts":[]}\n```', lines, known).facts).toEqual([]);
    expect(() => parseExtraction('No facts today.', lines, known)).toThrow(MalformedExtraction);
    expect(() => parseExtraction('{"facts":[{"message":1,"fact":"x","firstPerson":"y","importance":9,"replaces":null}]}', lines, known)).toThrow(MalformedExtraction);
  });
});
