/**
 * espeak voice ids: presets that pack a language, a voice variant, a pitch and a rate into one
 * string, so a character's `tts_voice_id` says everything about how it sounds.
 *
 * Format: `<language>[+<variant>][;pitch=<0-99>][;rate=<80-450>]`, for example `en-us`,
 * `en-us+f3`, `fr-fr+m3;rate=150` or `en-us+f3;pitch=60;rate=170`.
 * - language: an espeak language name (`en-us`, `en-gb`, `fr-fr`, `de`, `cmn`, …), any case;
 * - variant: an espeak variant (`m1`…`m8`, `f1`…`f5`, `whisper`, `klatt`, `Alex`, …);
 * - pitch: 0 to 99, default 50 (espeak `-p`); rate: words per minute, 80 to 450, default 175
 *   (espeak `-s`). Each option at most once, in either order.
 */
import { ValidationError } from '../../core/errors.js';
import type { SpeechVoice } from '../../core/ports.js';
import type { EspeakCatalogue } from './espeak-protocol.js';

export interface EspeakPreset {
  /** Lower case, as espeak names it. */
  language: string;
  variant?: string;
  pitch: number;
  rate: number;
}

export const ESPEAK_PITCH = { minimum: 0, maximum: 99, default: 50 } as const;
export const ESPEAK_RATE = { minimum: 80, maximum: 450, default: 175 } as const;

const VOICE_PATTERN = /^([A-Za-z0-9-]+)(?:\+([A-Za-z0-9_-]+))?((?:;[a-z]+=[^;]*)*)$/;

function invalid(voiceId: string, reason: string): ValidationError {
  return ValidationError.field('voiceId', `"${voiceId}" is not an espeak voice: ${reason}`);
}

/** Reads a voice id's syntax and ranges; whether espeak knows the names is `espeakVoiceFor`'s. */
export function parseEspeakVoiceId(voiceId: string): EspeakPreset {
  const match = VOICE_PATTERN.exec(voiceId.trim());
  if (match === null) throw invalid(voiceId, 'write it as language[+variant][;pitch=0-99][;rate=80-450], e.g. en-us+f3;pitch=60;rate=170');
  const preset: EspeakPreset = { language: match[1]!.toLowerCase(), pitch: ESPEAK_PITCH.default, rate: ESPEAK_RATE.default };
  if (match[2] !== undefined) preset.variant = match[2];
  const seen = new Set<string>();
  for (const option of (match[3] ?? '').split(';').slice(1)) {
    const [key = '', value = ''] = option.split('=');
    if (seen.has(key)) throw invalid(voiceId, `${key} is given twice`);
    seen.add(key);
    const limits = key === 'pitch' ? ESPEAK_PITCH : key === 'rate' ? ESPEAK_RATE : undefined;
    if (limits === undefined) throw invalid(voiceId, `unknown option ${key}; only pitch and rate can be set`);
    const parsed = /^\d{1,4}$/.test(value) ? Number(value) : Number.NaN;
    if (!(parsed >= limits.minimum && parsed <= limits.maximum)) {
      throw invalid(voiceId, `${key} must be a whole number from ${limits.minimum} to ${limits.maximum}, not ${value || 'nothing'}`);
    }
    preset[key as 'pitch' | 'rate'] = parsed;
  }
  return preset;
}

/** The id of a preset, leaving out default pitch and rate. */
export function formatEspeakVoiceId(preset: EspeakPreset): string {
  let id = preset.variant === undefined ? preset.language : `${preset.language}+${preset.variant}`;
  if (preset.pitch !== ESPEAK_PITCH.default) id += `;pitch=${preset.pitch}`;
  if (preset.rate !== ESPEAK_RATE.default) id += `;rate=${preset.rate}`;
  return id;
}

/**
 * What to give espeak's `set_voice` for a preset: the language voice's identifier, with the
 * variant spelled as its file is. A `ValidationError` for a language or variant espeak lacks
 * (espeak itself would ignore an unknown variant and speak in its default voice).
 */
export function espeakVoiceFor(voiceId: string, preset: EspeakPreset, catalogue: EspeakCatalogue): string {
  const identifier = findLanguage(catalogue, preset.language);
  if (identifier === undefined) throw invalid(voiceId, `espeak has no language ${preset.language} (try en-us, en-gb, fr-fr, de, es, it, pt-br, …)`);
  if (preset.variant === undefined) return identifier;
  const wanted = preset.variant.toLowerCase();
  const variant = catalogue.variants.find((name) => name.toLowerCase() === wanted);
  if (variant === undefined) throw invalid(voiceId, `espeak has no variant ${preset.variant} (try m1 to m8, f1 to f5, whisper, …)`);
  return `${identifier}+${variant}`;
}

/**
 * The voice for a language name. `set_voice` only finds a voice by its file name (`en`, `fr`),
 * so other names (`en-gb`, `fr-fr`, `es-mx`) go to the voice that lists them most closely.
 */
function findLanguage(catalogue: EspeakCatalogue, language: string): string | undefined {
  const byFile = catalogue.voices.find((voice) => voice.identifier.split('/').at(-1)?.toLowerCase() === language);
  if (byFile !== undefined) return byFile.identifier;
  let best: { identifier: string; priority: number } | undefined;
  for (const voice of catalogue.voices) {
    const listed = voice.languages.find((entry) => entry.name === language);
    if (listed !== undefined && (best === undefined || listed.priority < best.priority)) best = { identifier: voice.identifier, priority: listed.priority };
  }
  return best?.identifier;
}

/** Languages worth offering by default, with the names people know them by. */
const CURATED_LANGUAGES: ReadonlyArray<readonly [language: string, name: string, variants: readonly string[]]> = [
  ['en-us', 'English (US)', ['', 'm1', 'm3', 'm7', 'f1', 'f2', 'f3', 'f4', 'whisper']],
  ['en-gb', 'English (UK)', ['m1', 'm3', 'f3', 'f4']],
  ['es', 'Spanish (Spain)', ['m3', 'f3']],
  ['es-419', 'Spanish (Latin America)', ['m3', 'f3']],
  ['fr-fr', 'French', ['m3', 'f3']],
  ['de', 'German', ['m3', 'f3']],
  ['it', 'Italian', ['m3', 'f3']],
  ['pt-br', 'Portuguese (Brazil)', ['m3', 'f3']],
  ['pt', 'Portuguese (Portugal)', ['m3', 'f3']],
  ['nl', 'Dutch', ['m3', 'f3']],
  ['pl', 'Polish', ['m3', 'f3']],
  ['ru', 'Russian', ['m3', 'f3']],
  ['sv', 'Swedish', ['m3', 'f3']],
  ['tr', 'Turkish', ['m3', 'f3']],
  ['hi', 'Hindi', ['m3', 'f3']],
  ['ja', 'Japanese', ['m3', 'f3']],
  ['cmn', 'Chinese (Mandarin)', ['m3', 'f3']],
];

/** A curated few dozen presets (common languages × a few variants), those the data holds. */
export function curatedVoices(catalogue: EspeakCatalogue): SpeechVoice[] {
  const voices: SpeechVoice[] = [];
  for (const [language, name, variants] of CURATED_LANGUAGES) {
    if (findLanguage(catalogue, language) === undefined) continue;
    for (const variant of variants) {
      if (variant !== '' && !catalogue.variants.includes(variant)) continue;
      const preset: EspeakPreset = { language, pitch: ESPEAK_PITCH.default, rate: ESPEAK_RATE.default };
      if (variant !== '') preset.variant = variant;
      voices.push({
        id: formatEspeakVoiceId(preset),
        name: variant === '' ? name : `${name}, ${variantName(variant)}`,
        language: languageTag(language),
        description: 'espeak-ng, offline; append ;pitch=0-99 and ;rate=80-450 to the id to change pitch and speed',
      });
    }
  }
  return voices;
}

/** `male 1`, `female 3`, `whisper`. */
function variantName(variant: string): string {
  const numbered = /^([mf])(\d)$/.exec(variant);
  if (numbered === null) return variant;
  return `${numbered[1] === 'm' ? 'male' : 'female'} ${numbered[2]}`;
}

/** espeak's lower-case names as BCP 47 tags: `en-us` → `en-US`, `es-419` stays. */
export function languageTag(language: string): string {
  const [primary = '', ...rest] = language.split('-');
  let privateUse = false;
  const tags = rest.map((part) => {
    if (part === 'x') privateUse = true;
    if (privateUse) return part;
    if (/^[a-z]{2}$/.test(part)) return part.toUpperCase();
    if (/^[a-z]{4}$/.test(part)) return `${part[0]!.toUpperCase()}${part.slice(1)}`;
    return part;
  });
  return [primary, ...tags].join('-');
}
