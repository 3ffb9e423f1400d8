import { describe, expect, it } from 'vitest';
import { SentenceCollector } from '../../src/bot/voice/sentence-collector.js';

describe('SentenceCollector', () => {
  it('hands out sentences as soon as the next one starts, and the rest at the end', () => {
    const collector = new SentenceCollector();
    const text = 'The tide was coming in fast. Dr. Morgan ran to the boats! Would they make it in time? Nobody knew';
    const seen: string[] = [];
    const afterPiece: number[] = [];
    for (const piece of text.match(/\S+\s*/g)!) {
      seen.push(...collector.push(piece));
      afterPiece.push(seen.length);
    }
    seen.push(...collector.end());
    // A short last piece ("Nobody knew") joins the sentence before it rather than being spoken alone.
    expect(seen).toEqual(['The tide was coming in fast.', 'Dr. Morgan ran to the boats!', 'Would they make it in time? Nobody knew']);
    // The first sentence is out before the reply is half written.
    expect(afterPiece.indexOf(1)).toBeLessThan(afterPiece.length / 2);
  });
});
