/**
 * The voices of characters speaking together aloud (a scene in a voice call). A character the
 * owner gave a voice speaks in it; one without a voice of its own is not left silent, nor given
 * the voice of another character present (people could not tell who speaks): it gets a stand-in,
 * one the engine offers in the language being spoken that nobody else in the cast speaks in.
 */
import type { SpeechVoice } from './ports.js';
import type { CharacterRecord } from './records.js';

/** The primary language subtag, lower case: `en-US` → `en`. */
const primary = (tag: string): string => tag.split(/[-_]/)[0]!.toLowerCase();

/**
 * The voices a stand-in is picked from, best first: those in `language`, then those the engine
 * does not tie to a language (OpenAI's speak any). With no such voice, or no language known,
 * every offered voice, in the engine's order.
 */
function candidates(offered: readonly SpeechVoice[], language: string | undefined): SpeechVoice[] {
  if (language === undefined) return [...offered];
  const wanted = primary(language);
  const inLanguage = offered.filter((voice) => voice.language !== undefined && primary(voice.language) === wanted);
  const anyLanguage = offered.filter((voice) => voice.language === undefined);
  const fitting = [...inLanguage, ...anyLanguage];
  return fitting.length > 0 ? fitting : [...offered];
}

/**
 * `cast` in order, each with the voice it speaks in: its own, or a stand-in. Stand-ins go in cast
 * order, each the first candidate nobody in the cast has yet, so the choice holds as long as the
 * cast does; when every candidate is taken the first is shared. A character stays without a
 * voice only when the engine offers none.
 */
export function castVoices<C extends Pick<CharacterRecord, 'id' | 'ttsVoiceId'>>(cast: readonly C[], offered: readonly SpeechVoice[], language?: string): C[] {
  const taken = new Set(cast.flatMap((character) => (character.ttsVoiceId ? [character.ttsVoiceId] : [])));
  const pool = candidates(offered, language);
  return cast.map((character) => {
    if (character.ttsVoiceId) return character;
    const standIn = pool.find((voice) => !taken.has(voice.id)) ?? pool[0];
    if (!standIn) return character;
    taken.add(standIn.id);
    return { ...character, ttsVoiceId: standIn.id };
  });
}
