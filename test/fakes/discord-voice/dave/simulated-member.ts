/**
 * A test user's DAVE client, played by @snazzah/davey (the library the bot itself uses, so the
 * members' side of MLS is a real implementation, not the fake's guess). It reacts to the gateway
 * as @discordjs/voice 0.19 does: key package on start and on a new group, commit for proposals,
 * ready for each transition, op 31 and a fresh key package when a commit or welcome fails.
 *
 * Unlike libdave, which switches its sender key when op 22 executes the transition, davey
 * switches as soon as it processes the commit: a frame sent in that instant can reach a receiver
 * that has not processed the commit yet, as with any davey client.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { DAVESession } from '@snazzah/davey';
import { VoiceOpcodes } from 'discord-api-types/voice/v8';
import { DAVE_PROTOCOL_VERSION, type DaveParticipant, type DaveServerMessage } from './messages.js';

/** What a member says to the gateway. */
/** davey's `MediaType.AUDIO` (a const enum, which isolated modules cannot read from its declarations). */
const MEDIA_TYPE_AUDIO = 0;

export interface DaveGatewayPort {
  keyPackage(userId: string, payload: Buffer): void;
  commitWelcome(userId: string, payload: Buffer): void;
  transitionReady(userId: string, transitionId: number): void;
  invalidCommitWelcome(userId: string, transitionId: number): void;
}

/** How a simulated member behaves; tests change these to play faulty clients. */
export interface DaveMemberBehaviour {
  /** Commits the proposals it gets (default true): in DAVE v1 every member is a committing member. */
  commits: boolean;
  /** Answers each transition with op 23 (default true); false plays a client the gateway must wait out. */
  answersTransitions: boolean;
  /** Encrypts its audio once it has keys (default true); false plays a client sending plain Opus in an E2EE call. */
  encrypts: boolean;
}

export class SimulatedDaveMember implements DaveParticipant {
  readonly session: DAVESession;
  readonly behaviour: DaveMemberBehaviour = { commits: true, answersTransitions: true, encrypts: true };
  /** What went wrong on this client's side (a commit it could not process, …). */
  readonly problems: string[] = [];
  readonly #gateway: DaveGatewayPort;
  readonly #changed: () => void;
  readonly #queue: DaveServerMessage[] = [];
  #draining = false;
  #corruptNextWelcome = false;
  #closed = false;

  constructor(
    readonly userId: string,
    readonly channelId: string,
    gateway: DaveGatewayPort,
    changed: () => void = () => undefined,
  ) {
    this.#gateway = gateway;
    this.#changed = changed;
    this.session = new DAVESession(DAVE_PROTOCOL_VERSION, userId, channelId);
  }

  /** Sends the first key package, as a client does on the session description. */
  start(): void {
    this.#later(() => this.#gateway.keyPackage(this.userId, this.session.getSerializedKeyPackage()));
  }

  /** The next welcome this member sends (as committer) arrives damaged: its group info fails to decrypt. */
  corruptNextWelcome(): void {
    this.#corruptNextWelcome = true;
  }

  /** Messages are handled in order, each on a later turn of the event loop, as if over a socket. */
  deliver(message: DaveServerMessage): void {
    this.#queue.push(message);
    if (this.#draining) return;
    this.#draining = true;
    void this.#drain();
  }

  /** The frame as this client sends it: end-to-end encrypted once it is in a group, else as it is. */
  encrypt(frame: Buffer): Buffer {
    if (!this.behaviour.encrypts || !this.session.ready) return frame;
    return this.session.encryptOpus(frame);
  }

  /** Decrypts a frame another member sent; the reason when it cannot. */
  decrypt(fromUserId: string, frame: Buffer): Buffer | string {
    if (!this.session.ready) return `${this.userId} has no DAVE keys yet`;
    try {
      return this.session.decrypt(fromUserId, MEDIA_TYPE_AUDIO, frame);
    } catch (error) {
      return `${this.userId} could not decrypt ${fromUserId}'s frame: ${(error as Error).message}`;
    }
  }

  close(): void {
    this.#closed = true;
    this.#queue.length = 0;
    try {
      this.session.reset();
    } catch {
      // Already reset.
    }
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      await nextTurn();
      const message = this.#queue.shift();
      if (message === undefined || this.#closed) break;
      try {
        this.#handle(message);
      } catch (error) {
        this.problems.push(`op ${message.op}: ${(error as Error).message}`);
      }
      // Tests wait on the fake's changes: a member that got keys is one.
      this.#changed();
    }
    this.#draining = false;
  }

  #handle(message: DaveServerMessage): void {
    switch (message.op) {
      case VoiceOpcodes.DaveMlsExternalSender:
        return this.session.setExternalSender(message.externalSender);
      case VoiceOpcodes.DaveMlsProposals: {
        const { commit, welcome } = this.session.processProposals(message.proposals[0] ?? 0, message.proposals.subarray(1));
        if (commit === undefined || !this.behaviour.commits) return;
        this.#gateway.commitWelcome(this.userId, welcome === undefined ? commit : Buffer.concat([commit, this.#damaged(welcome)]));
        return;
      }
      case VoiceOpcodes.DaveMlsAnnounceCommitTransition:
        return this.#joinEpoch(message.transitionId, () => this.session.processCommit(message.commit));
      case VoiceOpcodes.DaveMlsWelcome:
        return this.#joinEpoch(message.transitionId, () => this.session.processWelcome(message.welcome));
      case VoiceOpcodes.DavePrepareTransition:
        if (message.transitionId !== 0 && this.behaviour.answersTransitions) this.#gateway.transitionReady(this.userId, message.transitionId);
        return;
      case VoiceOpcodes.DavePrepareEpoch:
        if (message.epoch === 1) this.#restart();
        return;
      case VoiceOpcodes.DaveExecuteTransition:
        return;
    }
  }

  #joinEpoch(transitionId: number, process: () => void): void {
    try {
      process();
    } catch (error) {
      this.problems.push(`transition ${transitionId}: ${(error as Error).message}`);
      this.#gateway.invalidCommitWelcome(this.userId, transitionId);
      this.#restart();
      return;
    }
    if (transitionId !== 0 && this.behaviour.answersTransitions) this.#gateway.transitionReady(this.userId, transitionId);
  }

  /** A new local group and key package: after op 24 with epoch 1, or to be added again after op 31. */
  #restart(): void {
    this.session.reinit(DAVE_PROTOCOL_VERSION, this.userId, this.channelId);
    this.#gateway.keyPackage(this.userId, this.session.getSerializedKeyPackage());
  }

  #damaged(welcome: Buffer): Buffer {
    if (!this.#corruptNextWelcome) return welcome;
    this.#corruptNextWelcome = false;
    const damaged = Buffer.from(welcome);
    damaged[damaged.length - 1]! ^= 0xff;
    return damaged;
  }

  #later(action: () => void): void {
    setImmediate(() => {
      if (!this.#closed) action();
    });
  }
}
