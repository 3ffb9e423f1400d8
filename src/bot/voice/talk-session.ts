/**
 * A character in a voice call (/voice talk): it listens to each person on their own receive
 * stream, finds their turns, has them written down and stored, and answers aloud. Everything is
 * keyed by the user id captured when that person's stream was subscribed, never by who spoke
 * last, so words are never given to the wrong person. In a scene the character a turn
 * addresses answers, in its own voice (`callAnswerer`, `Speech.voicedCast`).
 */
import { type AudioPlayer, EndBehaviorType, NoSubscriberBehavior, type VoiceConnection, VoiceConnectionStatus, createAudioPlayer, entersState, joinVoiceChannel } from '@discordjs/voice';
import { joinTimedOut } from './voice-playback.js';
import type { Guild, User } from 'discord.js';
import type { Readable } from 'node:stream';
import { OpusReserveFull, SpeakerListener } from '../../audio/speaker-listener.js';
import { DEFAULT_TURN_OPTIONS, type Turn, type TurnEvent, type TurnOptions } from '../../audio/turn-detector.js';
import type { VoiceActivityAggressiveness, VoiceActivityDetectors } from '../../audio/voice-activity.js';
import { encodeWav } from '../../audio/wav.js';
import { type Actor, adminActor } from '../../core/actor.js';
import type { Core } from '../../core/core.js';
import { AppError } from '../../core/errors.js';
import type { AccountRecord, CharacterRecord } from '../../core/records.js';
import type { Logger, PcmAudio, Transcription, TranscriptionRequest } from '../../core/ports.js';
import { INTERRUPTED, UNHEARD } from '../../core/voice-calls.js';
import { existingCharacters } from '../characters.js';
import { explainError } from '../explain-error.js';
import { type CallAnswerer, callAnswerer } from './call-answerer.js';
import { SpokenReply } from './spoken-reply.js';

export interface TalkSessionOptions {
  turns: Partial<TurnOptions>;
  aggressiveness: VoiceActivityAggressiveness;
  /** ISO 639-1 code forced on speech-to-text (faster and surer on short turns); unset: detected. */
  language?: string | undefined;
  /** How long joining may take. */
  joinTimeoutMs: number;
  /** The call ends after this long with nobody speaking and nothing said (DISCORD_VOICE_IDLE_SECONDS). */
  idleMs: number;
  /**
   * How long one turn may take to be written down (VOICE_TALK_TRANSCRIPTION_TIMEOUT_MS): turns
   * are taken one at a time, so a stalled engine would hold up every turn after it.
   */
  transcriptionTimeoutMs: number;
}

export interface TalkSessionDependencies {
  core: Core;
  logger: Logger;
  detectors: VoiceActivityDetectors;
  accountOf(user: User): Promise<{ actor: Actor; account: AccountRecord }>;
  /**
   * Whether a member opted out (/voice ignore me), read afresh from the database: asked before
   * each subscription and each transcription, so they are never subscribed, decoded or
   * transcribed whichever process they opted out through.
   */
  ignores(userId: string): Promise<boolean>;
  /** Called once when the session ends, whatever ended it. */
  ended(reason: string): void;
}

interface Hearing {
  stream: Readable;
  listener: SpeakerListener;
}

/** A turn over, waiting to be taken; its words may already be on their way. */
interface EndedTurn {
  userId: string;
  turn: Turn;
  early?: Speculation | undefined;
}

/**
 * A character asked to speak next, in turn with people's turns: to answer what was said last
 * (/scene next), or to say `words` already stored (its greeting on joining the scene).
 */
interface Cue {
  actor: Actor;
  characterId: string;
  words?: string | undefined;
}

type Queued = EndedTurn | Cue;

/** A transcript asked for while a person is quiet but their turn not yet over. */
interface Speculation {
  transcription: Promise<Transcription>;
  abort: AbortController;
}

/** How often silence is checked for when no packet comes (people send nothing in pauses). */
const TICK_MS = 20;
/** Frames (20 ms) a speech engine may fall behind mid-sentence before the sentence is given up. */
const ENGINE_STALL_FRAMES = 100;

export class TalkSession {
  readonly #hearing = new Map<string, Hearing>();
  /** Members found to have opted out, left out of `people()`; those being asked about. */
  readonly #ignored = new Set<string>();
  /** Other bots (a music bot): never subscribed, decoded or transcribed. */
  readonly #bots = new Set<string>();
  /** Per person, aborted when they are forgotten (opted out, left): their turns in flight stop. */
  readonly #personAborts = new Map<string, AbortController>();
  /** Aborted when the call ends: the turn in flight stops, whatever it was waiting on. */
  readonly #ending = new AbortController();
  /** When the character last started and stopped being heard (stop undefined: still speaking). */
  #spoke: { from: number; to?: number | undefined } | undefined;
  readonly #asking = new Set<string>();
  /** The language each person's speech was heard in, forced on their next turns. */
  readonly #languages = new Map<string, string>();
  readonly #turns: Queued[] = [];
  /** The language the newest turn was heard in, for a character cued to speak. */
  #language: string | undefined;
  /** Per person, the transcript of their turn so far, asked for once they went quiet. */
  readonly #speculations = new Map<string, Speculation>();
  // A sentence plays as its audio arrives: an engine slower than real time for a moment leaves
  // the player without a frame, which must not end the sentence (the default gives up after 5).
  readonly #player: AudioPlayer = createAudioPlayer({ behaviors: { noSubscriber: NoSubscriberBehavior.Pause, maxMissedFrames: ENGINE_STALL_FRAMES } });
  #connection: VoiceConnection | undefined;
  #ticker: NodeJS.Timeout | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #reply: SpokenReply | undefined;
  #characterSpeaking = false;
  /** Characters whose refusal to speak (made private, deleted) was told in the call's chat: once each. */
  readonly #toldRefusals = new Set<string>();
  #working = false;
  #ended = false;

  constructor(
    readonly guild: Guild,
    readonly joinedChannelId: string,
    readonly character: CharacterRecord,
    readonly conversationId: string,
    private readonly dependencies: TalkSessionDependencies,
    private readonly options: TalkSessionOptions,
  ) {
    this.#player.on('error', (error) => dependencies.logger.warn({ err: error, guildId: guild.id }, 'voice talk player error'));
  }

  /** Joins undeafened (a deafened bot receives nothing) and starts listening. */
  async start(): Promise<void> {
    const connection = joinVoiceChannel({ channelId: this.joinedChannelId, guildId: this.guild.id, adapterCreator: this.guild.voiceAdapterCreator, selfDeaf: false });
    this.#connection = connection;
    connection.subscribe(this.#player);
    try {
      await entersState(connection, VoiceConnectionStatus.Ready, this.options.joinTimeoutMs);
    } catch (error) {
      this.end('Could not join the voice channel.');
      // Said as playback says it, not as "something went wrong".
      throw joinTimedOut(this.voiceChannelId, this.options.joinTimeoutMs, error);
    }
    connection.on(VoiceConnectionStatus.Destroyed, () => this.end('The voice connection ended.'));
    connection.on(VoiceConnectionStatus.Disconnected, () => {
      // A move or a resumable drop recovers on its own; otherwise the call is over.
      void Promise.race([entersState(connection, VoiceConnectionStatus.Signalling, 5_000), entersState(connection, VoiceConnectionStatus.Connecting, 5_000)]).catch(() => this.end('The voice connection dropped.'));
    });
    // Subscribing inside `start` still gets the packet that caused it.
    connection.receiver.speaking.on('start', (userId) => this.#listen(userId));
    this.#ticker = setInterval(() => this.#tick(), TICK_MS);
    this.#ticker.unref();
    this.#stillActive();
  }

  /** Puts the idle time off: someone spoke, or the character did. */
  #stillActive(): void {
    clearTimeout(this.#idleTimer);
    if (this.#ended) return;
    this.#idleTimer = setTimeout(() => {
      // A reply still being spoken or a turn still waiting is activity too.
      if (this.#reply || this.#working) this.#stillActive();
      else this.end('Left after being idle.');
    }, this.options.idleMs);
    this.#idleTimer.unref();
  }

  /**
   * The channel the call is in: where the bot's own voice state says it is, as it may have been
   * moved since it joined (a move keeps the connection); the one it joined until that is known.
   */
  get voiceChannelId(): string {
    return this.guild.members.me?.voice.channelId ?? this.joinedChannelId;
  }

  /** People in the call, bots and those who opted out left aside. */
  people(): string[] {
    const channel = this.guild.channels.cache.get(this.voiceChannelId);
    if (!channel?.isVoiceBased()) return [];
    return [...channel.members.filter((member) => !member.user.bot && !this.#ignored.has(member.id)).keys()];
  }

  /** Stops the reply being spoken (/voice stop); it is kept as far as it was heard. */
  interrupt(): boolean {
    return this.#reply?.interrupt() ?? false;
  }

  /** A member opted out (what they had started saying is dropped) or back in. */
  ignore(userId: string, ignored: boolean): void {
    if (!ignored) {
      this.#ignored.delete(userId);
      return;
    }
    this.#ignored.add(userId);
    this.forget(userId);
  }

  /**
   * Someone left the call's channel: their receive stream and decoder are freed now, not when
   * the call ends. A turn they had finished is still taken (their last words before leaving).
   */
  left(userId: string): void {
    const hearing = this.#hearing.get(userId);
    // Its `close` handler frees the listener and hands on a turn under way.
    hearing?.stream.destroy();
  }

  /** Stops hearing someone; what they had started saying is dropped, even a turn being written down. */
  forget(userId: string): void {
    this.#personAborts.get(userId)?.abort(new Error('forgotten'));
    this.#personAborts.delete(userId);
    const hearing = this.#hearing.get(userId);
    this.#hearing.delete(userId);
    hearing?.stream.destroy();
    hearing?.listener.close(performance.now());
    this.#withdraw(userId);
    for (let index = this.#turns.length - 1; index >= 0; index--) {
      const queued = this.#turns[index]!;
      if ('userId' in queued && queued.userId === userId) this.#turns.splice(index, 1);
    }
  }

  /** Leaves: a reply being spoken stops and is kept as far as it was heard. */
  end(reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#ending.abort(new Error('the call ended'));
    clearInterval(this.#ticker);
    clearTimeout(this.#idleTimer);
    this.#reply?.interrupt();
    for (const userId of [...this.#hearing.keys()]) this.forget(userId);
    this.#turns.length = 0;
    for (const userId of [...this.#speculations.keys()]) this.#withdraw(userId);
    if (this.#connection && this.#connection.state.status !== VoiceConnectionStatus.Destroyed) this.#connection.destroy();
    this.dependencies.logger.info({ guildId: this.guild.id, channelId: this.voiceChannelId, reason }, 'voice talk ended');
    this.dependencies.ended(reason);
  }

  #listen(userId: string): void {
    if (this.#ended || this.#hearing.has(userId) || this.#asking.has(userId) || this.#bots.has(userId) || userId === this.guild.client.user.id) return;
    // Only once it is known to be a person, not a bot, and the database says they did not opt
    // out: a failed read hears nobody (they are asked about again when they next start speaking).
    this.#asking.add(userId);
    this.#whoIs(userId).then(
      (who) => {
        this.#asking.delete(userId);
        if (who === 'bot') this.#bots.add(userId);
        else if (who === 'opted out') this.ignore(userId, true);
        else this.#subscribe(userId);
      },
      (error: unknown) => {
        this.#asking.delete(userId);
        this.dependencies.logger.warn({ err: error, guildId: this.guild.id, userId }, 'could not tell whether a member is a bot or opted out; not listening to them');
      },
    );
  }

  /** A bot (a music bot: never heard), a member who opted out, or a person to hear. */
  async #whoIs(userId: string): Promise<'bot' | 'opted out' | 'person'> {
    const user = this.guild.client.users.cache.get(userId) ?? (await this.guild.client.users.fetch(userId));
    if (user.bot) return 'bot';
    return (await this.dependencies.ignores(userId)) ? 'opted out' : 'person';
  }

  #subscribe(userId: string): void {
    if (this.#ended || this.#hearing.has(userId)) return;
    this.#ignored.delete(userId);
    const receiver = this.#connection?.receiver;
    if (!receiver) return;
    let listener: SpeakerListener;
    try {
      listener = new SpeakerListener(this.dependencies.detectors.create({ aggressiveness: this.options.aggressiveness }), this.options.turns);
    } catch (error) {
      if (!(error instanceof OpusReserveFull)) throw error;
      this.dependencies.logger.warn({ guildId: this.guild.id, userId }, 'not listening to a person: this process holds as many Opus decoders as it reserved memory for');
      return;
    }
    const stream = receiver.subscribe(userId, { end: { behavior: EndBehaviorType.Manual } });
    listener.turns.setCharacterSpeaking(this.#characterSpeaking);
    const hearing = { stream, listener };
    this.#hearing.set(userId, hearing);
    let failed = false;
    stream.on('data', (packet: Buffer) => this.#handle(userId, listener.receive(packet, performance.now())));
    // A stream that fails (DAVE decryption failures destroy it) is subscribed again once the
    // receiver has forgotten it: subscribing before its `close` would hand back the dead stream.
    stream.on('error', (error) => {
      failed = true;
      this.dependencies.logger.warn({ err: error, guildId: this.guild.id, userId }, 'voice receive stream failed; subscribing again');
    });
    stream.on('close', () => {
      if (this.#hearing.get(userId) !== hearing) return;
      this.#hearing.delete(userId);
      this.#handle(userId, listener.close(performance.now()));
      if (failed) this.#listen(userId);
    });
  }

  #tick(): void {
    const now = performance.now();
    for (const [userId, { listener }] of this.#hearing) this.#handle(userId, listener.tick(now));
  }

  #handle(userId: string, events: TurnEvent[]): void {
    if (events.length > 0) this.#stillActive();
    for (const event of events) {
      if (event.type === 'barge-in' && this.#reply?.interrupt()) {
        this.dependencies.logger.info({ guildId: this.guild.id, userId }, 'interrupted by a person talking');
      } else if (event.type === 'turn-likely') {
        this.#speculate(userId, event.turn);
      } else if (event.type === 'speech-resumed' || event.type === 'dropped') {
        this.#withdraw(userId);
      } else if (event.type === 'turn') {
        this.dependencies.logger.debug({ guildId: this.guild.id, userId, voicedMs: event.turn.voicedMs, early: event.turn.likely && this.#speculations.has(userId) }, 'voice turn over');
        // The early transcript stands only if nothing voiced came after the audio it was made of.
        const early = event.turn.likely ? this.#speculations.get(userId) : undefined;
        if (early) this.#speculations.delete(userId);
        else this.#withdraw(userId);
        this.#turns.push({ userId, turn: event.turn, early });
        void this.#work();
      }
    }
  }

  /**
   * The person went quiet: their turn so far is written down now, so the words are ready when
   * the silence threshold says the turn is over. Nothing is stored and no reply starts before
   * then; if they go on, the request is aborted and the whole turn is written down at its end.
   */
  #speculate(userId: string, turn: Turn): void {
    this.#withdraw(userId);
    if (this.#ended) return;
    const abort = new AbortController();
    // Asked only once the database says they have not opted out (maybe through another process).
    const transcription = this.dependencies.ignores(userId).then((ignored) => {
      if (ignored) throw new Error('opted out: not transcribed');
      abort.signal.throwIfAborted();
      return this.dependencies.core.voiceCalls.transcribe(this.#recording(userId, turn), { signal: abort.signal });
    });
    // Withdrawn speculations are never awaited: their failure (an abort) is expected.
    transcription.catch(() => undefined);
    this.#speculations.set(userId, { transcription, abort });
  }

  #withdraw(userId: string): void {
    this.#speculations.get(userId)?.abort.abort();
    this.#speculations.delete(userId);
  }

  /** A turn's audio as the speech-to-text engine takes it (16 kHz, made as it arrived: only encoded here), in the language known for the person. */
  #recording(userId: string, turn: Turn): TranscriptionRequest {
    const language = this.options.language ?? this.#languages.get(userId);
    return { audio: encodeWav(turn.speech), mimeType: 'audio/wav', filename: 'turn.wav', ...(language ? { language } : {}) };
  }

  #setCharacterSpeaking(speaking: boolean): void {
    const now = performance.now();
    // Told at each sentence's start and once at the reply's end: one span per reply.
    if (speaking && (this.#spoke === undefined || this.#spoke.to !== undefined)) this.#spoke = { from: now };
    else if (!speaking && this.#spoke && this.#spoke.to === undefined) this.#spoke.to = now;
    this.#characterSpeaking = speaking;
    for (const { listener } of this.#hearing.values()) listener.turns.setCharacterSpeaking(speaking);
  }

  /** Turns are taken one at a time, in the order they ended; one said meanwhile waits its turn. */
  async #work(): Promise<void> {
    if (this.#working) return;
    this.#working = true;
    try {
      for (let next = this.#turns.shift(); next && !this.#ended; next = this.#turns.shift()) {
        const taken = 'userId' in next ? this.#take(next) : this.#speakNext(next);
        await taken.catch((error: unknown) => this.#ended || this.dependencies.logger.warn({ err: error, guildId: this.guild.id, ...('userId' in next ? { userId: next.userId } : { characterId: next.characterId }) }, 'a voice turn failed'));
      }
    } finally {
      this.#working = false;
    }
  }

  async #take({ userId, turn, early }: EndedTurn): Promise<void> {
    const { core } = this.dependencies;
    const person = this.#personAbort(userId);
    // Writing down stops when they are forgotten (opted out, left), when the call ends, and when
    // the engine takes too long: turns are taken one at a time, and the next ones wait.
    const signal = AbortSignal.any([person.signal, this.#ending.signal, AbortSignal.timeout(this.options.transcriptionTimeoutMs)]);
    if (early) follow(signal, early.abort);
    // They may have opted out through another process since they were subscribed.
    if (await this.dependencies.ignores(userId)) return this.ignore(userId, true);
    const transcribe = () => core.voiceCalls.transcribe(this.#recording(userId, turn), { signal });
    // Asked now, before the account look-ups, so they overlap the engine's work.
    const asked = early ? untilAborted(early.transcription, signal) : transcribe();
    asked.catch(() => undefined);
    const user = await this.guild.client.users.fetch(userId);
    const { actor, account } = await this.dependencies.accountOf(user);
    await core.conversations.addSpeaker(adminActor, this.conversationId, account.id);
    // An early transcript that failed is not the turn's last chance: it is asked for again.
    let transcription: Transcription;
    try {
      transcription = await asked.catch((error: unknown) => {
        if (!early || signal.aborted) throw error;
        this.dependencies.logger.warn({ err: error, guildId: this.guild.id, userId }, 'the early transcript failed; transcribing the turn again');
        return transcribe();
      });
    } catch (error) {
      // Stopped on purpose (they opted out or left, the call ended): not a failure. A timeout is.
      if (person.signal.aborted || this.#ended) return;
      throw error;
    }
    // They may have opted out (here or through another process) or left while it was written down.
    if (this.#ended || person.signal.aborted || this.#ignored.has(userId)) return;
    if (await this.dependencies.ignores(userId)) return this.ignore(userId, true);
    if (this.#ended || person.signal.aborted) return;
    const backchannel = this.#backchannel(turn);
    const heard = await core.voiceCalls.keep(actor, this.conversationId, transcription, this.options.language ?? this.#languages.get(userId));
    if (!heard || this.#ended) return;
    if (heard.language) this.#languages.set(userId, heard.language);
    this.#language = heard.language;
    this.dependencies.logger.info({ guildId: this.guild.id, userId, conversationId: this.conversationId, voicedMs: turn.voicedMs, backchannel }, 'voice turn heard');
    // A "yeah" said over the character was said (so it is stored) but asked nothing; nor is a
    // part of a long turn cut while the person goes on: its last part is answered, with all of it.
    if (backchannel || turn.cut) return;
    const answerer = await callAnswerer(core, { conversationId: this.conversationId, text: heard.message.content, alone: this.people().length <= 1, callCharacterId: this.character.id, botUserId: this.guild.client.user.id });
    if (!answerer || this.#ended) return;
    await this.#answer(actor, heard.message.id, answerer, heard.language);
  }

  #personAbort(userId: string): AbortController {
    let abort = this.#personAborts.get(userId);
    if (!abort) this.#personAborts.set(userId, (abort = new AbortController()));
    return abort;
  }

  /**
   * A backchannel ("yeah", "mm-hm"): a turn begun and ended while the character was speaking,
   * shorter than what interrupts it. It did not interrupt, and it is not answered after.
   */
  #backchannel(turn: Turn): boolean {
    const spoke = this.#spoke;
    const bargeInMs = this.options.turns.bargeInMs ?? DEFAULT_TURN_OPTIONS.bargeInMs;
    return spoke !== undefined && turn.startedAt >= spoke.from && (spoke.to === undefined || turn.lastVoicedAt <= spoke.to) && turn.voicedMs < bargeInMs;
  }

  /**
   * Has one of the call's characters speak next, aloud: to what was said last (/scene next in
   * the call's conversation), or `words` it already said in writing (a greeting on joining the
   * scene). After the turns already waiting, as a reply to them would.
   */
  cue(actor: Actor, characterId: string, words?: string): void {
    if (this.#ended) return;
    this.#turns.push({ actor, characterId, words });
    void this.#work();
  }

  async #speakNext({ actor, characterId, words }: Cue): Promise<void> {
    const { core } = this.dependencies;
    const [conversation, latest] = await Promise.all([core.conversations.get(adminActor, this.conversationId), core.conversations.messages(this.conversationId, { newest: true, limit: 1 })]);
    const cast = await existingCharacters(core, conversation.characterIds);
    const character = cast.find((member) => member.id === characterId);
    if (!character || !latest[0] || this.#ended) return;
    const language = this.options.language ?? this.#language;
    if (words === undefined) return this.#answer(actor, latest[0].id, { character, cast }, language);
    // Already stored and shown: an interruption stops it and changes nothing.
    const abort = new AbortController();
    const release = follow(this.#ending.signal, abort);
    await this.#speak({ character, cast }, language, abort, (async function* () {
      yield words;
    })()).finally(release);
  }

  /**
   * `character` answers aloud in its own voice; one without a voice of its own speaks in a
   * stand-in the others in the scene do not have (see `Speech.voicedCast`), chosen while the
   * reply is being written.
   */
  async #answer(actor: Actor, messageId: string, { character, cast }: CallAnswerer, language: string | undefined): Promise<void> {
    const { core, logger } = this.dependencies;
    if (!core.speech) return;
    const abort = new AbortController();
    // The call may end while the reply is being asked for: it stops then, and nothing plays.
    const release = follow(this.#ending.signal, abort);
    try {
      const reply = await core.chat.respond(actor, this.conversationId, messageId, { stream: true, signal: abort.signal, characterId: character.id }).catch(async (error: unknown) => {
        await this.#tellRefusal(character, error);
        throw error;
      });
      if (this.#ended) {
        reply.done.catch(() => undefined);
        return;
      }
      const spoken = await this.#speak({ character, cast }, language, abort, reply.pieces);
      if (!spoken) return;
      // Only what was heard stays: a reply talked over, or one whose speech or writing failed part way.
      if (spoken.interrupted || spoken.failed) await core.voiceCalls.keepHeard(reply, spoken.heard(), spoken.interrupted ? INTERRUPTED : UNHEARD);
      else await reply.done.catch((error: unknown) => logger.warn({ err: error, conversationId: this.conversationId }, 'the spoken reply failed'));
    } finally {
      release();
    }
  }

  /**
   * A character that may no longer speak here (its owner made it private, or deleted it) is
   * silent: the call's chat says why, once, rather than leaving people talking to nobody.
   */
  async #tellRefusal(character: CharacterRecord, error: unknown): Promise<void> {
    if (!(error instanceof AppError) || (error.code !== 'CHARACTER_PRIVATE' && error.code !== 'CHARACTER_DELETED') || this.#toldRefusals.has(character.id)) return;
    this.#toldRefusals.add(character.id);
    const channel = this.guild.channels.cache.get(this.voiceChannelId);
    if (!channel?.isSendable()) return;
    await channel
      .send({ content: `⚠️ ${explainError(error)}`, allowedMentions: { parse: [] } })
      .catch((failure: unknown) => this.dependencies.logger.info({ err: failure, channelId: channel.id }, 'could not tell the call why a character is silent'));
  }

  /**
   * Speaks `pieces` as they come, in `character`'s voice, or a stand-in the others in the scene
   * do not have (see `Speech.voicedCast`), chosen while the words are being written; barge-in
   * stops it. Undefined without a speech engine.
   */
  async #speak({ character, cast }: CallAnswerer, language: string | undefined, abort: AbortController, pieces: AsyncIterable<string>): Promise<SpokenReply | undefined> {
    const speech = this.dependencies.core.speech;
    if (!speech || this.#ended) return undefined;
    const voiced = character.ttsVoiceId ? Promise.resolve(character) : speech.voicedCast(cast, { language, signal: abort.signal }).then((voices) => voices.find((member) => member.id === character.id) ?? character);
    voiced.catch(() => undefined);
    const spoken = new SpokenReply(this.#player, (sentence, signal) => inVoiceOf(voiced, (speaker) => speech.streamAs(speaker, sentence, { signal })), abort, this.dependencies.logger, (speaking) => this.#setCharacterSpeaking(speaking));
    this.#reply = spoken;
    try {
      await spoken.speak(pieces);
    } finally {
      this.#reply = undefined;
    }
    return spoken;
  }
}

/** Speech in the speaker's voice, once it is known which (a stand-in is looked up while the reply is written). */
async function* inVoiceOf(speaker: Promise<CharacterRecord>, speak: (speaker: CharacterRecord) => AsyncIterable<PcmAudio>): AsyncGenerator<PcmAudio> {
  yield* speak(await speaker);
}

/** Aborts `abort` when `signal` is; returns what stops following it. */
function follow(signal: AbortSignal, abort: AbortController): () => void {
  const stop = (): void => abort.abort(signal.reason);
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
  return () => signal.removeEventListener('abort', stop);
}

/** `promise`, or its rejection with the signal's reason once `signal` is aborted. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const stop = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}
