import { describe, expect, it } from 'vitest';
import { castVoices } from '../../src/core/cast-voices.js';
import type { SpeechVoice } from '../../src/core/ports.js';
import type { CharacterRecord } from '../../src/core/records.js';

/** A character as the stand-in choice reads it: its id and its own voice, if any. */
const character = (name: string, ttsVoiceId: string | null): Pick<CharacterRecord, 'id' | 'ttsVoiceId'> => ({ id: `id-${name}`, ttsVoiceId });

/** As espeak offers them: a language each, in the engine's order. */
const espeak: SpeechVoice[] = [
  { id: 'de+m3', name: 'German, male 3', language: 'de' },
  { id: 'en-us', name: 'English (US)', language: 'en-US' },
  { id: 'en-us+m3', name: 'English (US), male 3', language: 'en-US' },
  { id: 'en-us+f3', name: 'English (US), female 3', language: 'en-US' },
];

const voices = (cast: ReadonlyArray<Pick<CharacterRecord, 'ttsVoiceId'>>) => cast.map((member) => member.ttsVoiceId);

describe('the voices of a cast speaking together', () => {
  it('leaves voiced characters their own and gives one without a voice a stand-in in the language spoken that nobody else has', () => {
    const ada = character('Ada', 'en-us');
    const bo = character('Bo', null);
    expect(voices(castVoices([ada, bo], espeak, 'en'))).toEqual(['en-us', 'en-us+m3']);
    // Two without: each their own stand-in, in cast order; the stand-in is not stored on the record.
    const cy = character('Cy', null);
    expect(voices(castVoices([ada, bo, cy], espeak, 'en'))).toEqual(['en-us', 'en-us+m3', 'en-us+f3']);
    expect(bo.ttsVoiceId).toBeNull();
  });

  it('prefers the language spoken, then voices of any language, and shares a voice only when every one is taken', () => {
    const openai: SpeechVoice[] = [{ id: 'alloy', name: 'Alloy' }, { id: 'echo', name: 'Echo' }];
    expect(voices(castVoices([character('Ada', null)], [...espeak, ...openai], 'de'))).toEqual(['de+m3']);
    expect(voices(castVoices([character('Ada', 'de+m3'), character('Bo', null)], [...espeak, ...openai], 'de'))).toEqual(['de+m3', 'alloy']);
    // No voice in the language: any offered one rather than silence.
    expect(voices(castVoices([character('Ada', null)], espeak, 'ja'))).toEqual(['de+m3']);
    expect(voices(castVoices([character('Ada', 'alloy'), character('Bo', 'echo'), character('Cy', null)], openai))).toEqual(['alloy', 'echo', 'alloy']);
    // An engine that offers nothing leaves it without: speaking then says the voice is missing.
    expect(voices(castVoices([character('Ada', null)], []))).toEqual([null]);
  });
});
