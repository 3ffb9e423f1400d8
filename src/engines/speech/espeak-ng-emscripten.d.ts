/**
 * The parts of `@echogarden/espeak-ng-emscripten` (espeak-ng compiled to JavaScript, GPL-3.0)
 * we use; the package ships no types. Read from its espeak-ng.js (the WebIDL bindings and the
 * `synthesize`/`list_voices` helpers at its end).
 */
declare module '@echogarden/espeak-ng-emscripten' {
  export interface EspeakVoiceEntry {
    /** e.g. `English (America)`. */
    name: string;
    /** e.g. `gmw/en-US`. */
    identifier: string;
    /** The names the voice answers to, e.g. `en-us`, `en`; lower priority numbers first. */
    languages: Array<{ priority: number; name: string }>;
  }

  export interface EspeakEvent {
    type: string;
    text_position: number;
    word_length: number;
    audio_position: number;
    id?: string | number;
  }

  export interface EspeakWorker {
    /** `language[+variant]`; 0 on success, 2 when no such voice exists. Unknown variants are ignored. */
    set_voice(name: string): number;
    /** Words per minute, 80 to 450. */
    set_rate(rate: number): void;
    /** 0 to 99; 50 is the voice's own pitch. */
    set_pitch(pitch: number): void;
    get_samplerate(): number;
    list_voices(): EspeakVoiceEntry[];
    /**
     * Synthesises synchronously, calling back with each chunk of 16-bit mono samples. The text
     * is read as SSML. Returning a truthy value stops synthesis.
     */
    synthesize(text: string, callback: (samples: Int16Array, events: EspeakEvent[]) => unknown): void;
  }

  export interface EspeakModule {
    eSpeakNGWorker: new () => EspeakWorker;
    /** Emscripten's in-memory file system, holding espeak-ng-data under /usr/share. */
    FS: { readdir(path: string): string[] };
  }

  export default function initialize(moduleArgument?: Record<string, unknown>): Promise<EspeakModule>;
}
