/**
 * The ports the core needs from the outside world. Adapters live in `src/store` and
 * `src/engines`; `src/main.ts` wires them. Nothing here knows Discord or HTTP.
 */

// ---------------------------------------------------------------------------------------------
// Files (records live behind the repository ports, `repositories.ts`)

/** A file kept by the service (avatars, message images, later audio and images). */
export interface StoredFile {
  /** Opaque storage key; also the path under which the file is served. */
  key: string;
  mimeType: string;
  size: number;
}

export interface FileStore {
  /** Stores bytes; the same bytes give the same key. */
  put(bytes: Uint8Array, mimeType: string): Promise<StoredFile>;
  /** The key `put` stores these bytes under, without storing them. */
  keyOf(bytes: Uint8Array, mimeType: string): string;
  read(key: string): Promise<Buffer | undefined>;
  /** The MIME type of a key this store made, or undefined for anything it could not have made. */
  typeOf(key: string): string | undefined;
  /** Removes a file nothing holds any more; a key it does not hold is no error. */
  remove(key: string): Promise<void>;
  /**
   * Every file this store holds last written before `modifiedBeforeMillis`, and every write
   * that never finished (a process killed mid-write) begun before it; for the sweep, which
   * finds in them the files nothing recorded. A store that cannot list leaves it out.
   */
  scan?(modifiedBeforeMillis: number): AsyncIterable<ScannedFile>;
}

/** What `FileStore.scan` finds: a stored file by its key, or a partial write to remove. */
export type ScannedFile = { kind: 'stored'; key: string } | { kind: 'partial'; name: string; remove(): Promise<void> };

/** Links to stored files that someone outside (an engine, a client) can fetch for a while. */
export interface FileLinks {
  /** A time-limited signed URL of the stored file `key`. */
  sign(key: string): string;
}

/** Time, so tests can control it. `nowMicros` is strictly increasing within a process. */
export interface Clock {
  nowMillis(): number;
  nowMicros(): number;
}

export interface IdGenerator {
  uuid(): string;
}

// ---------------------------------------------------------------------------------------------
// Images received

/** What an image's header says, read without decoding its pixels. */
export interface ImageInfo {
  mimeType: 'image/png' | 'image/jpeg' | 'image/webp';
  width: number;
  height: number;
  frames: number;
}

/** An image scaled to fit a box and re-encoded. */
export interface FittedImage {
  data: Uint8Array;
  mimeType: 'image/png' | 'image/jpeg';
  width: number;
  height: number;
}

/**
 * Reads and re-encodes images people send. Both refuse, as an `AppError` naming `field`,
 * anything that is not a PNG, JPEG or WebP still image, is damaged, or has more pixels than
 * the codec allows (a decompression bomb is refused by its header, before its pixels cost
 * memory).
 */
export interface ImageCodec {
  inspect(field: string, bytes: Uint8Array): Promise<ImageInfo>;
  /**
   * Scales down so neither side exceeds `maxSide` (never up) and re-encodes (JPEG stays JPEG,
   * others become PNG; `as` asks for PNG whatever came); a full decode.
   */
  fit(field: string, bytes: Uint8Array, maxSide: number, as?: 'image/png'): Promise<FittedImage>;
}

// ---------------------------------------------------------------------------------------------
// Chat model

export type ChatRole = 'system' | 'user' | 'assistant';

export type ChatContentPart =
  | { type: 'text'; text: string }
  | { type: 'image'; mimeType: string; data: Uint8Array };

export interface ChatMessage {
  role: ChatRole;
  content: string | ChatContentPart[];
}

export interface ChatRequest {
  messages: ChatMessage[];
  maxTokens?: number;
  temperature?: number;
  /**
   * Asks the engine to answer one JSON value following `schema` (a JSON Schema object), where it
   * can: OpenAI-compatible servers get it as `response_format`, the embedded engine as a grammar.
   * Nothing is promised: a server may ignore it, and a reply cut at `maxTokens` is not whole JSON,
   * so the caller must still parse and validate the answer. `name` labels it for the engine
   * (OpenAI takes letters, digits, `_` and `-`, up to 64).
   */
  responseFormat?: ChatResponseFormat;
}

/** The structure asked of a chat answer: see `ChatRequest.responseFormat`. */
export interface ChatResponseFormat {
  name: string;
  schema: Record<string, unknown>;
}

export interface ChatUsage {
  promptTokens?: number;
  completionTokens?: number;
}

export interface ChatResult {
  text: string;
  finishReason: string;
  usage?: ChatUsage;
  /** The engine cut the prompt to fit its context (llama-server's context shift). */
  truncated?: boolean;
}

export type ChatStreamPart =
  | { type: 'text'; text: string }
  | { type: 'finish'; finishReason: string; usage?: ChatUsage; truncated?: boolean };

export interface CallOptions {
  signal?: AbortSignal | undefined;
  /**
   * Called while the request waits for the engine (every slot busy) with how many requests are
   * served before it, again whenever that changes; engines without a queue of their own never call it.
   */
  onQueued?: ((ahead: number) => void) | undefined;
  /**
   * Work nobody waits for (learning from a conversation): an engine with a queue of its own serves
   * every reply waiting before it; others ignore it.
   */
  background?: boolean | undefined;
}

/**
 * A chat completion engine. Failures are thrown as `EngineError`, including failures in the
 * middle of a stream; a stream that ends normally always ends with one `finish` part.
 */
export interface ChatModel {
  readonly provider: string;
  readonly modelId: string;
  generate(request: ChatRequest, options?: CallOptions): Promise<ChatResult>;
  stream(request: ChatRequest, options?: CallOptions): AsyncIterable<ChatStreamPart>;
}

/**
 * Counts tokens as the chat model will, for fitting prompts into its context. Counts are of
 * text alone: the caller adds each message's framing. Adapters that cannot ask the engine
 * over-count rather than under-count.
 */
export interface TokenCounter {
  /** True when counts come from the engine's own tokenizer. */
  readonly exact: boolean;
  /** One count per text, in order. Never fails: an engine that cannot answer is estimated. */
  count(texts: readonly string[], options?: CallOptions): Promise<number[]>;
  /** An answer's `usage.prompt_tokens` for a prompt this counter put at `estimatedTokens`. */
  observe(estimatedTokens: number, promptTokens: number): void;
  /** The context one request gets, when the engine tells (llama-server: per slot, `-c` / `-np`). */
  engineContext?(options?: CallOptions): Promise<number | undefined>;
  /**
   * What the model's chat template adds to a prompt, measured as the engine applies it
   * (llama-server: `POST /apply-template`); undefined when the engine cannot tell.
   */
  promptFraming?(options?: CallOptions): Promise<PromptFraming | undefined>;
}

/** The tokens a chat template adds to the text of a prompt's messages. */
export interface PromptFraming {
  /** Around each message: role markers and separators (ChatML: five). */
  messageTokens: number;
  /**
   * Once a prompt: the generation prompt that opens the reply (ChatML's `<|im_start|>assistant\n`:
   * three), a begin-of-text token, any preamble the template writes itself.
   */
  promptTokens: number;
}

/** Text embeddings, used to rank a character's memories when configured. */
export interface Embedder {
  readonly modelId: string;
  embed(texts: readonly string[], options?: CallOptions): Promise<number[][]>;
}

// ---------------------------------------------------------------------------------------------
// Lorebook regular expressions

/** A lorebook key's regular expression: its pattern and flags (never `g` or `y`). */
export interface RegexKey {
  source: string;
  flags: string;
}

/** One pattern to run on one text: `texts[text]` of the same call. */
export interface RegexCheck {
  key: RegexKey;
  text: number;
}

/**
 * Runs lorebook regular-expression keys, which come from whoever wrote a card: JavaScript's
 * engine backtracks, and one pattern can run for minutes on a short text. An adapter bounds the
 * wait whatever the pattern, and learns which patterns ran past the bound.
 */
export interface RegexKeyRunner {
  /** The wait one prompt's keys may cost in all, in milliseconds. */
  readonly boundMs: number;
  /**
   * For each check, whether its pattern matches its text; undefined where that was not decided
   * within `timeoutMs` (the pattern ran too long, or waited behind one that did) or the pattern
   * is refused. Never rejects.
   */
  run(texts: readonly string[], checks: readonly RegexCheck[], timeoutMs: number): Promise<(boolean | undefined)[]>;
  /** Why a pattern is no longer run (it ran past the bound), or undefined. */
  refusal(key: RegexKey): string | undefined;
}

// ---------------------------------------------------------------------------------------------
// Logging

/** The slice of pino the core uses; pino's Logger satisfies it. */
export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

// ---------------------------------------------------------------------------------------------
// Speech

/** Mono 16-bit PCM: what every speech engine is turned into, before mp3 or Opus. */
export interface PcmAudio {
  sampleRate: number;
  samples: Int16Array;
}

/** A voice an engine offers, or one made for a character. */
export interface SpeechVoice {
  /** What goes into a character's `tts_voice_id`. */
  id: string;
  name: string;
  /** BCP 47 language tag when the engine says, e.g. `en-US`. */
  language?: string;
  description?: string;
}

/** A voice sample uploaded for cloning. */
export interface VoiceSample {
  filename: string;
  mimeType: string;
  data: Uint8Array;
}

/**
 * A text-to-speech engine. Failures are thrown as `EngineError` (the engine's status and
 * reason kept); an unknown voice id is a `VALIDATION_FAILED` naming it.
 */
export interface SpeechEngine {
  readonly provider: string;
  /** The voices a character can be given without cloning (espeak presets, OpenAI voices, …). */
  listVoices(options?: CallOptions): Promise<SpeechVoice[]>;
  /** Speaks `text` in `voiceId`. */
  synthesize(request: { text: string; voiceId: string }, options?: CallOptions): Promise<PcmAudio>;
  /**
   * Speaks `text` piece by piece as it is made, for live playback; engines that cannot stream
   * yield one piece.
   */
  stream(request: { text: string; voiceId: string }, options?: CallOptions): AsyncIterable<PcmAudio>;
  /** Makes a new voice from samples; only engines that clone (ElevenLabs) have it. */
  cloneVoice?(request: { name: string; samples: readonly VoiceSample[] }, options?: CallOptions): Promise<SpeechVoice>;
  /** Deletes a voice this engine cloned (with the samples it holds); one already gone is no error. */
  deleteVoice?(voiceId: string, options?: CallOptions): Promise<void>;
  /** The longest text one call accepts, in characters. */
  readonly maxTextLength: number;
}

/** Recorded speech to be written down: a voice message, an uploaded audio file. */
export interface TranscriptionRequest {
  /** The encoded file as received (Ogg Opus, MP3, WAV, M4A, WebM, FLAC); never decoded by us. */
  audio: Uint8Array;
  /** e.g. `audio/ogg`; engines that guess the format from the file name get `filename` too. */
  mimeType: string;
  /** Whose extension names the format, e.g. `voice-message.ogg`. */
  filename: string;
  /** ISO 639-1 code (`en`) when known; the engine detects the language when absent. */
  language?: string;
}

/** What was said. */
export interface Transcription {
  /** The words, trimmed; empty when the engine heard no speech. */
  text: string;
  /** ISO 639-1 code when the engine reports one, e.g. `en`. */
  language?: string;
  /** The audio's length as the engine measured it, in seconds. */
  durationSeconds?: number;
}

/**
 * A speech-to-text engine. Failures are thrown as `EngineError` with purpose `transcription`;
 * their messages are ours, never the engine's.
 */
export interface Transcriber {
  readonly provider: string;
  /** The largest file the engine accepts, in bytes; bigger files are refused before sending. */
  readonly maxAudioBytes: number;
  transcribe(request: TranscriptionRequest, options?: CallOptions): Promise<Transcription>;
}

/** What the bytes of a recording were found to be, by its own header. */
export interface InspectedAudio {
  /** Its real type, e.g. `audio/ogg`, whatever the sender declared. */
  mimeType: string;
  /** A name whose extension transcription servers recognise, e.g. `voice-message.ogg`. */
  filename: string;
  /** From the header, where the container states it cheaply. */
  durationSeconds?: number;
}

/**
 * Identifies audio people send by its bytes and bounds it, before any engine is paid to hear
 * it: throws `AppError` (`PAYLOAD_TOO_LARGE`, `UNSUPPORTED_MEDIA_TYPE`, `VALIDATION_FAILED`)
 * for anything too large, too long, empty or not audio we take. Passed in, like `ImageCodec`,
 * so the core reads no container format itself.
 */
export interface AudioInspector {
  inspect(bytes: Uint8Array, limits: { maxBytes: number; maxDurationSeconds: number }): InspectedAudio;
}

/** Voice messages: the gate for the audio, and the engine that writes it down. */
export interface SpeechToText {
  inspector: AudioInspector;
  transcriber: Transcriber;
}

/** Audio encodings the core asks for, passed in so the core has no codec. */
export interface AudioEncoder {
  /** MP3 of mono PCM; long audio is encoded without holding the event loop. */
  mp3(pcm: PcmAudio): Promise<Uint8Array>;
}

/**
 * Uses of a costly action counted per key (an account) over a rolling minute. Where the store
 * is shared (PostgreSQL) the count is kept in it, so the limit holds across processes.
 */
export interface UseLimit {
  /** The uses a key has a minute. */
  readonly perMinute: number;
  /** Takes one use for `key`: undefined when it is allowed, else the milliseconds until one is. */
  take(key: string): Promise<number | undefined>;
}

// ---------------------------------------------------------------------------------------------
// Images

/**
 * The parameters of an image job, in the core's names; the stored payload, and all of it, so
 * the same payload reproduces the same images. Engine adapters map it onto their wire:
 * Replicate and Cog send the spec's snake_case `input` (`toSpecImagePayload` in
 * src/engines/image/spec-payload.ts, which also makes the Job JSON's `payload` and says which
 * spec name each field has), A1111 its txt2img body (`txt2imgBody`).
 */
export interface ImagePayload {
  /** The trigger token already stands in place of a character reference. */
  prompt: string;
  negativePrompt: string;
  width: number;
  height: number;
  /** Images the run makes (the request's `samples`). */
  samples: number;
  /** Always set, so the same payload reproduces the same images. */
  seed: number;
  guidanceScale: number;
  /** Denoising steps. */
  steps: number;
  promptStrength: number;
  /** Whether the face is repainted with the face model; on exactly when one applies. */
  faceInpainting: boolean;
  maxFaceInpaintSize: number;
  faceInpaintingPrompt: string;
  faceInpaintingNegativePrompt: string;
  /** How strongly the face model applies (the request's `loraScale`); only with a face model. */
  loraScale?: number;
}

/** A trained face model as an engine applies it. */
export interface AppliedFaceModel {
  id: string;
  /** Signed URL of the trained archive (`trained_model.tar`), fetchable from the engine. */
  archiveUrl: string;
  /** The token the trainer bound the face to, e.g. `<s0><s1>`; the prompt already contains it. */
  triggerToken: string;
}

export interface ImageRequest {
  /** Our job id: engines that take a prediction id (Cog) use it, so sending again is idempotent. */
  jobId: string;
  payload: ImagePayload;
  faceModel: AppliedFaceModel | null;
}

/** A file an engine made, already downloaded (engine URLs expire). */
export interface EngineFile {
  data: Uint8Array;
  mimeType: string;
}

/** How the job runner follows and steers one engine run. */
export interface EngineRun {
  /**
   * Aborts the run: cancellation or the job's time limit, and adapters cancel the remote work
   * when they can. When the reason is `ServiceStopping` the remote work is left running.
   */
  signal: AbortSignal;
  /**
   * Set when the engine already holds this run (found in the job after a restart): follow it
   * instead of starting another.
   */
  resumeId?: string | undefined;
  /** Called once the engine has accepted the work under `externalId`, before waiting on it. */
  submitted(externalId: string): Promise<void>;
  /** Progress from 0 to 1 when the engine reports it. */
  progress(fraction: number): void;
}

/**
 * A diffusion image engine (AUTOMATIC1111, Replicate, Cog). Failures are thrown as
 * `EngineError` with the engine's reason; an aborted run throws the signal's reason.
 */
export interface ImageEngine {
  readonly provider: string;
  /** How many runs the engine takes at once; further jobs wait, in order, in our queue. */
  readonly concurrency: number;
  generate(request: ImageRequest, run: EngineRun): Promise<EngineFile[]>;
  close(): Promise<void>;
}

export interface FaceTrainingRequest {
  jobId: string;
  /** Signed URL of a zip of the face photos, fetchable from the trainer. */
  imagesUrl: string;
}

export interface TrainedFace {
  archive: EngineFile;
  /** The token that brings the face into a prompt, e.g. `<s0><s1>`. */
  triggerToken: string;
}

/** Trains a LoRA face model from photos (Replicate trainings). */
export interface FaceTrainer {
  readonly provider: string;
  readonly concurrency: number;
  train(request: FaceTrainingRequest, run: EngineRun): Promise<TrainedFace>;
  close(): Promise<void>;
}
