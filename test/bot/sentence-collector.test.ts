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

  it('hands out the first sentence on the first word of the next, however short that is so far', () => {
    const collector = new SentenceCollector();
    expect(collector.push('Aye, I hear you well.')).toEqual([]);
    // "The" alone is shorter than a sentence worth speaking, but it shows the first one is over.
    expect(collector.push(' The')).toEqual(['Aye, I hear you well.']);
    expect(collector.push(' harbour is quiet.')).toEqual([]);
    expect(collector.end()).toEqual(['The harbour is quiet.']);
  });

  it('still joins a lone short sentence to the next one', () => {
    const collector = new SentenceCollector();
    expect([...collector.push('Oh! Well'), ...collector.push(', that is true. And')]).toEqual(['Oh! Well, that is true.']);
    expect(collector.end()).toEqual(['And']);
  });
});
