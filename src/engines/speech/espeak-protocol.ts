/** The messages between the espeak engine and its worker thread (see espeak-worker.ts). */

/** What the bundled espeak-ng data offers. */
export interface EspeakCatalogue {
  /** The language voices, as espeak lists them; language names lower case. */
  voices: Array<{
    /** e.g. `gmw/en-US`: what `set_voice` is given. */
    identifier: string;
    /** e.g. `English (America)`. */
    name: string;
    /** The language names the voice answers to; a lower priority is a closer match. */
    languages: Array<{ name: string; priority: number }>;
  }>;
  /** The voice variants (`m1`, `f3`, `whisper`, `Alex`, …), as the data files spell them. */
  variants: string[];
}

export interface EspeakSynthesisRequest {
  id: number;
  /** SSML-safe text: markup characters already escaped. */
  text: string;
  /** A voice identifier, with `+variant` when there is one. */
  voice: string;
  rate: number;
  pitch: number;
}

export type EspeakReply =
  | { kind: 'ready'; catalogue: EspeakCatalogue }
  | { kind: 'failed-to-start'; message: string }
  | { kind: 'audio'; id: number; sampleRate: number; samples: Int16Array }
  | { kind: 'error'; id: number; message: string };
