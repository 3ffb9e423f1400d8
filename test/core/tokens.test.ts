import { describe, expect, it } from 'vitest';
import { fakeTokenCount } from '../fakes/fake-openai.js';
import { LearningTokenEstimator, estimateTextTokens } from '../../src/core/tokens.js';

/**
 * Lower bounds the estimate must reach, from how tokenizers treat each kind of text (see
 * shared/notes/engines-wire.md: about one token per CJK character, several per emoji): English
 * at 4 characters a token, CJK, kana and Hangul one per character, other non-Latin letters one
 * per character, each emoji code point 3 (byte fallback; joiners and selectors count too).
 */
const bounds: Array<[string, string, number]> = [
  ['English', 'The quick brown fox jumps over the lazy dog.', 11],
  ['code', 'const answer = items.map((item) => item.value * 2);', 13],
  ['Chinese', '今天天气很好，我们去公园散步吧。', 16],
  ['Japanese', 'こんにちは、元気ですか？', 12],
  ['Korean', '안녕하세요 만나서 반갑습니다', 14],
  ['Russian', 'Привет, как у тебя дела сегодня?', 26],
  ['Hindi', 'नमस्ते, आप कैसे हैं?', 17],
  ['Thai', 'สวัสดีครับ ยินดีที่ได้รู้จัก', 27],
  ['emoji', '🎉🔥😂👍', 12],
  ['family emoji (ZWJ sequence)', '👨‍👩‍👧‍👦', 21],
  ['Arabic', 'مرحبا كيف حالك اليوم', 17],
];

describe('the conservative token estimate', () => {
  it.each(bounds)('never under-counts %s', (_name, text, tokens) => {
    expect(estimateTextTokens(text)).toBeGreaterThanOrEqual(tokens);
    // Nor the fake llama-server's tokenizer, which the service tests run against.
    expect(estimateTextTokens(text)).toBeGreaterThanOrEqual(fakeTokenCount(text));
  });

  it('stays close for English prose, so Latin history is not starved', () => {
    const prose = 'It was a bright cold day in April, and the clocks were striking thirteen. '.repeat(20);
    // About 17 tokens a sentence in every tokenizer above.
    expect(estimateTextTokens(prose)).toBeLessThan(20 * 17 * 1.7);
  });

  it('learns the model’s ratio from usage.prompt_tokens, erring high', async () => {
    const estimator = new LearningTokenEstimator();
    const [before] = await estimator.count(['word '.repeat(30)]);
    estimator.observe(before!, before! * 2);
    const [after] = await estimator.count(['word '.repeat(30)]);
    expect(after).toBe(before! * 2);
    // A lower ratio later does not shrink the count below the largest recent one.
    estimator.observe(after!, before!);
    expect((await estimator.count(['word '.repeat(30)]))[0]).toBe(after);
  });
});
