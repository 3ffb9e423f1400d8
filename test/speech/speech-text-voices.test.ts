import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/errors.js';
import type { EspeakCatalogue } from '../../src/engines/speech/espeak-protocol.js';
import { espeakVoiceFor, formatEspeakVoiceId, languageTag, parseEspeakVoiceId } from '../../src/engines/speech/espeak-voices.js';
import { checkSpeechText, splitSentences } from '../../src/engines/speech/speech-text.js';

describe('splitSentences', () => {
  it('cuts at sentence ends and blank lines, keeping punctuation and closing quotes', () => {
    expect(splitSentences('This is one sentence. "Is this another?" she asked! And a third…\n\nA new paragraph without an end')).toEqual([
      'This is one sentence.',
      '"Is this another?" she asked!',
      'And a third…',
      'A new paragraph without an end',
    ]);
  });

  it('does not cut after abbreviations, initials or inside numbers', () => {
    expect(splitSentences('Dr. Smith met J. R. Tolkien at 3.30 today. Then they left.')).toEqual(['Dr. Smith met J. R. Tolkien at 3.30 today.', 'Then they left.']);
  });

  it('joins pieces too short to be worth a request of their own', () => {
    expect(splitSentences('Oh! Hi. I am here now, you see.')).toEqual(['Oh! Hi. I am here now, you see.']);
    expect(splitSentences('A fairly long sentence here. Ok.')).toEqual(['A fairly long sentence here. Ok.']);
    expect(splitSentences('Short.')).toEqual(['Short.']);
  });

  it('cuts CJK sentences that have no space after the stop', () => {
    expect(splitSentences('今日はとても良い天気ですね。明日も晴れるといいですね。', 4)).toEqual(['今日はとても良い天気ですね。', '明日も晴れるといいですね。']);
  });
});

describe('checkSpeechText', () => {
  it('trims, and refuses empty or overlong text', () => {
    expect(checkSpeechText('  hi  ', 10)).toBe('hi');
    expect(() => checkSpeechText(' \n ', 10)).toThrow(ValidationError);
    expect(() => checkSpeechText('x'.repeat(11), 10)).toThrow(/at most 10 characters, not 11/);
  });
});

describe('espeak voice ids', () => {
  const catalogue: EspeakCatalogue = {
    voices: [
      { identifier: 'gmw/en', name: 'English (Great Britain)', languages: [{ name: 'en-gb', priority: 2 }, { name: 'en', priority: 2 }] },
      { identifier: 'gmw/en-US', name: 'English (America)', languages: [{ name: 'en-us', priority: 2 }, { name: 'en', priority: 3 }] },
      { identifier: 'gmw/en-GB-x-rp', name: 'English (Received Pronunciation)', languages: [{ name: 'en-gb-x-rp', priority: 5 }, { name: 'en-gb', priority: 4 }] },
    ],
    variants: ['f3', 'm1', 'Alex'],
  };

  it('parses language, variant, pitch and rate, and formats them back without defaults', () => {
    expect(parseEspeakVoiceId('en-US+f3;pitch=60;rate=170')).toEqual({ language: 'en-us', variant: 'f3', pitch: 60, rate: 170 });
    expect(parseEspeakVoiceId('en;rate=90')).toEqual({ language: 'en', pitch: 50, rate: 90 });
    expect(formatEspeakVoiceId(parseEspeakVoiceId('en-us+f3;rate=175;pitch=50'))).toBe('en-us+f3');
    expect(formatEspeakVoiceId(parseEspeakVoiceId('en-us+f3;rate=170;pitch=60'))).toBe('en-us+f3;pitch=60;rate=170');
  });

  it('refuses ids out of range or of the wrong shape, naming them', () => {
    for (const voiceId of ['', 'en-us+', 'en-us;pitch=100', 'en-us;pitch=-1', 'en-us;rate=451', 'en-us;rate=79', 'en-us;rate=1e2', 'en-us;pitch=', 'en-us;volume=3', 'en-us;rate=100;rate=120', 'en_us', 'en-us+f3+m1']) {
      expect(() => parseEspeakVoiceId(voiceId)).toThrow(ValidationError);
      expect(() => parseEspeakVoiceId(voiceId)).toThrow(`"${voiceId}"`);
    }
  });

  it('finds the espeak voice of a language by file name, else by the closest listed language', () => {
    expect(espeakVoiceFor('x', parseEspeakVoiceId('en-us+F3'), catalogue)).toBe('gmw/en-US+f3');
    expect(espeakVoiceFor('x', parseEspeakVoiceId('en'), catalogue)).toBe('gmw/en');
    expect(espeakVoiceFor('x', parseEspeakVoiceId('en-gb+alex'), catalogue)).toBe('gmw/en+Alex');
    expect(() => espeakVoiceFor('fr+f3', parseEspeakVoiceId('fr+f3'), catalogue)).toThrow(/"fr\+f3".*no language fr/);
    expect(() => espeakVoiceFor('en+f9', parseEspeakVoiceId('en+f9'), catalogue)).toThrow(/no variant f9/);
  });

  it('writes espeak language names as BCP 47 tags', () => {
    expect(languageTag('en-us')).toBe('en-US');
    expect(languageTag('es-419')).toBe('es-419');
    expect(languageTag('cmn-latn-pinyin')).toBe('cmn-Latn-pinyin');
    expect(languageTag('en-gb-x-rp')).toBe('en-GB-x-rp');
  });
});
