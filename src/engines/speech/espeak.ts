/**
 * A `SpeechEngine` over espeak-ng compiled to JavaScript: embedded, offline, free, and robotic.
 * One espeak instance lives in a worker thread for the life of the engine (starting it takes
 * about 100 ms and 24 MB of voice data); see espeak-voices.ts for the voice id format.
 */
import type { CallOptions, PcmAudio, SpeechEngine, SpeechVoice } from '../../core/ports.js';
import { concatPcm } from '../../audio/pcm.js';
import { type EspeakPreset, curatedVoices, espeakVoiceFor, parseEspeakVoiceId } from './espeak-voices.js';
import { ESPEAK_PROVIDER, EspeakThread } from './espeak-thread.js';
import { checkSpeechText, splitSentences } from './speech-text.js';

export { ESPEAK_PROVIDER };

/** espeak speaks at 22 050 Hz. */
export const ESPEAK_SAMPLE_RATE = 22_050;

export interface EspeakSpeechOptions {
  /** The longest text one call accepts; default 5000 characters. */
  maxTextLength?: number;
}

/** The espeak engine; `close()` stops its worker thread. */
export interface EspeakSpeechEngine extends SpeechEngine {
  close(): Promise<void>;
}

/** A preset with the voice espeak is given for it. */
type Voice = EspeakPreset & { voice: string };

export function createEspeakSpeechEngine(options: EspeakSpeechOptions = {}): EspeakSpeechEngine {
  const thread = new EspeakThread();
  const maxTextLength = options.maxTextLength ?? 5000;

  const presetOf = async (voiceId: string): Promise<Voice> => {
    const preset = parseEspeakVoiceId(voiceId);
    return { ...preset, voice: espeakVoiceFor(voiceId, preset, await thread.catalogue()) };
  };

  const speak = (preset: Voice, sentence: string, signal: AbortSignal | undefined): Promise<PcmAudio> =>
    thread.synthesize({ text: escapeMarkup(sentence), voice: preset.voice, rate: preset.rate, pitch: preset.pitch }, signal);

  return {
    provider: ESPEAK_PROVIDER,
    maxTextLength,

    async listVoices(): Promise<SpeechVoice[]> {
      return curatedVoices(await thread.catalogue());
    },

    async synthesize(request, callOptions: CallOptions = {}): Promise<PcmAudio> {
      const text = checkSpeechText(request.text, maxTextLength);
      const preset = await presetOf(request.voiceId);
      // Sentence by sentence, so one long text does not hold the worker while others wait.
      const pieces: PcmAudio[] = [];
      for (const sentence of splitSentences(text)) pieces.push(await speak(preset, sentence, callOptions.signal));
      return concatPcm(pieces, ESPEAK_SAMPLE_RATE);
    },

    async *stream(request, callOptions: CallOptions = {}): AsyncGenerator<PcmAudio, void, undefined> {
      const text = checkSpeechText(request.text, maxTextLength);
      const preset = await presetOf(request.voiceId);
      const { signal } = callOptions;
      const sentences = splitSentences(text);
      // One sentence ahead: the next is made while the consumer plays the current one.
      let next: Promise<PcmAudio> | undefined = speak(preset, sentences[0] ?? '', signal);
      let yielded = 0;
      try {
        for (let index = 0; next !== undefined; index++) {
          const current: PcmAudio = await next;
          const following = sentences[index + 1];
          next = following === undefined ? undefined : speak(preset, following, signal);
          // Punctuation alone can come out empty; say nothing rather than yield silence.
          if (current.samples.length > 0 || (next === undefined && yielded === 0)) {
            yielded++;
            yield current;
          }
        }
      } finally {
        // A consumer that stops early leaves one request behind; its outcome no longer matters.
        next?.catch(() => undefined);
      }
    },

    close: () => thread.close(),
  };
}

/** espeak reads its input as SSML: markup in the text must be spoken, not obeyed. */
function escapeMarkup(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
