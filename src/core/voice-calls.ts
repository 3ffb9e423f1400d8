/**
 * Conversations held by voice in a call: a person's turn is written down and stored as their
 * message (the words only: audio is never stored), and a reply a person interrupted is kept as
 * far as it was heard. The front end finds the turns and plays the replies; what is stored and
 * how is decided here.
 */
import type { Actor } from './actor.js';
import type { Chat, Reply } from './chat.js';
import type { Conversations } from './conversations.js';
import { AppError } from './errors.js';
import type { CallOptions, Logger, SpeechToText, Transcription, TranscriptionRequest } from './ports.js';
import type { StoredMessage } from './repositories.js';

/** The finish reason of a reply a listener talked over: it ends where they stopped hearing it. */
export const INTERRUPTED = 'interrupted';

/**
 * The finish reason of a reply whose end never reached the call though no one talked over it:
 * a sentence's speech failed (the speech engine is down) or its generation failed part way.
 * It ends, like an interrupted one, where it stopped being heard.
 */
export const UNHEARD = 'unheard';

/** A turn as stored, and the language the engine heard, to force on that person's next turns. */
export interface HeardTurn {
  message: StoredMessage;
  language?: string | undefined;
}

export class VoiceCalls {
  constructor(
    private readonly chat: Chat,
    private readonly conversations: Conversations,
    private readonly speechToText: SpeechToText | undefined,
    private readonly logger: Logger,
  ) {}

  /** Throws `TRANSCRIPTION_UNAVAILABLE` when no speech-to-text engine is configured. */
  requireListening(): void {
    if (this.speechToText) return;
    throw new AppError('TRANSCRIPTION_UNAVAILABLE', 'Listening in voice channels needs a speech-to-text engine: set STT_ENGINE and STT_BASE_URL and restart.');
  }

  /**
   * Writes a turn down and stores the words as `actor`'s message; undefined when the engine
   * heard no words (a turn of noise is not a message). The recording itself is not kept.
   */
  async hear(actor: Actor, conversationId: string, recording: TranscriptionRequest, options: CallOptions = {}): Promise<HeardTurn | undefined> {
    return this.keep(actor, conversationId, await this.transcribe(recording, options), recording.language);
  }

  /**
   * Writes a turn down and stores nothing: a call may have a turn transcribed before it is
   * known to be over (the person paused), and drop the transcript if they go on.
   */
  async transcribe(recording: TranscriptionRequest, options: CallOptions = {}): Promise<Transcription> {
    this.requireListening();
    return this.speechToText!.transcriber.transcribe(recording, options);
  }

  /**
   * Stores a transcribed turn as `actor`'s message, once the turn is over; undefined when it
   * holds no words. `language` is the one forced on the engine, if any.
   */
  async keep(actor: Actor, conversationId: string, transcription: Transcription, language?: string): Promise<HeardTurn | undefined> {
    const text = transcription.text.trim();
    if (text === '') return undefined;
    const message = await this.chat.post(actor, conversationId, { text });
    return { message, language: transcription.language ?? language };
  }

  /**
   * Keeps of `reply` only `heard`, the part played before a person talked over it (or before
   * its speech or generation failed), marked `finishReason` (`interrupted` by default, else
   * `unheard`), so the character's next prompt holds what was said aloud and no more (as
   * OpenAI's Realtime API truncates an interrupted item). A reply stopped before it was stored
   * is stored as heard; one already stored gets the heard text as a new chosen alternative (the
   * whole text stays behind it, as an unchosen swipe). Nothing heard leaves nothing stored.
   */
  async keepHeard(reply: Reply, heard: string, finishReason: typeof INTERRUPTED | typeof UNHEARD = INTERRUPTED): Promise<StoredMessage | undefined> {
    const conversationId = reply.userMessage.conversationId;
    const content = heard.trim();
    const stored = await reply.done.catch(() => undefined);
    const log = { conversationId, characterId: reply.characterId, heardLength: content.length, finishReason };
    if (stored === undefined) {
      if (content === '') return undefined;
      this.logger.info(log, 'reply cut short while being written: stored as far as it was heard');
      return this.conversations.appendMessage(conversationId, { content, finishReason, mimeType: 'text/plain', participantId: reply.characterId, participantType: 'character', file: null });
    }
    if (content === stored.content.trim()) return stored;
    this.logger.info({ ...log, storedLength: stored.content.length }, 'reply cut short while being spoken: the heard part is chosen');
    return this.conversations.addAlternative(conversationId, stored.id, reply.characterId, { content: content === '' ? '…' : content, finishReason });
  }
}
