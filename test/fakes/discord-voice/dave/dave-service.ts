/**
 * DAVE across the fake voice server: one group per voice channel (the gateway's side, dave-group.ts),
 * one simulated member per test user in a voice channel (the members' side, played by davey), and
 * the bot's voice sessions as members over their WebSocket. The server hands it the DAVE messages a
 * session sends and asks it who can decrypt the bot's frames, as the other people in the call would.
 */
import { VoiceOpcodes } from 'discord-api-types/voice/v8';
import type { VoiceSession } from '../voice-session.js';
import { DaveGroup } from './dave-group.js';
import { binaryBody, jsonBody, type DaveParticipant, type DaveServerMessage } from './messages.js';
import { ExternalSender } from './mls.js';
import { SimulatedDaveMember } from './simulated-member.js';

/** How the gateway runs DAVE. */
export interface DaveOptions {
  /** How long a commit transition waits for every member's op 23 before executing anyway; default 2,000 ms. */
  transitionTimeoutMs?: number;
}

/** The bot's voice session as a group member: JSON ops sequenced, MLS ops as binary messages. */
class SessionParticipant implements DaveParticipant {
  constructor(readonly session: VoiceSession) {}

  get userId(): string {
    return this.session.record.userId;
  }

  deliver(message: DaveServerMessage): void {
    // Told to start a new group, the client drops its keys: plain frames are right again until it has new ones.
    if (message.op === VoiceOpcodes.DavePrepareEpoch && message.epoch === 1) this.session.record.restartEndToEnd();
    const json = jsonBody(message);
    if (json !== null) this.session.sendSequenced(message.op, json);
    else this.session.sendBinary(message.op, binaryBody(message) ?? Buffer.alloc(0));
  }
}

export class DaveService {
  readonly externalSender = new ExternalSender(Buffer.from('fake-discord-voice-gateway'));
  readonly #transitionTimeoutMs: number;
  readonly #changed: () => void;
  readonly #groups = new Map<string, DaveGroup>();
  readonly #members = new Map<string, SimulatedDaveMember>();
  readonly #participants = new Map<VoiceSession, SessionParticipant>();

  constructor(options: DaveOptions & { changed(): void }) {
    this.#transitionTimeoutMs = options.transitionTimeoutMs ?? 2000;
    this.#changed = options.changed;
  }

  /** The group of a voice channel; made when first needed. */
  group(guildId: string, channelId: string): DaveGroup {
    const key = `${guildId}:${channelId}`;
    let group = this.#groups.get(key);
    if (group === undefined) {
      group = new DaveGroup({ channelId, externalSender: this.externalSender, transitionTimeoutMs: this.#transitionTimeoutMs, changed: this.#changed });
      this.#groups.set(key, group);
    }
    return group;
  }

  existingGroup(guildId: string, channelId: string): DaveGroup | undefined {
    return this.#groups.get(`${guildId}:${channelId}`);
  }

  /** A test user's DAVE client in a guild, while they are in a voice channel there. */
  member(guildId: string, userId: string): SimulatedDaveMember | undefined {
    return this.#members.get(`${guildId}:${userId}`);
  }

  /** A test user changed channel: their client leaves one call and starts afresh in the other. */
  moved(guildId: string, userId: string, from: string | null, to: string | null): void {
    const key = `${guildId}:${userId}`;
    const old = this.#members.get(key);
    if (old !== undefined) {
      this.#members.delete(key);
      old.close();
      if (from !== null) this.existingGroup(guildId, from)?.leave(userId, old);
    }
    if (to === null) return;
    const group = this.group(guildId, to);
    const member = new SimulatedDaveMember(userId, to, group, this.#changed);
    this.#members.set(key, member);
    group.join(member);
    member.start();
  }

  /** The bot's session got `dave_protocol_version: 1`: it joins its channel's group, and its frames are read as the members would. */
  joinSession(session: VoiceSession): void {
    const { guildId, channelId, userId } = session.record;
    const participant = new SessionParticipant(session);
    this.#participants.set(session, participant);
    const group = this.group(guildId, channelId);
    session.record.endToEnd = (frame) => {
      const listeners = [...this.#members.values()].filter((member) => member.channelId === channelId && this.member(guildId, member.userId) === member && group.isMember(member.userId));
      if (listeners.length === 0) return null;
      let reason = '';
      for (const listener of listeners) {
        const clear = listener.decrypt(userId, frame);
        if (typeof clear !== 'string') return clear;
        reason = clear;
      }
      return reason;
    };
    group.join(participant);
  }

  /** The session ended: its client leaves the call. */
  leaveSession(session: VoiceSession): void {
    const participant = this.#participants.get(session);
    if (participant === undefined) return;
    this.#participants.delete(session);
    this.existingGroup(session.record.guildId, session.record.channelId)?.leave(participant.userId, participant);
  }

  /** A binary message from the bot (its opcode already read); false for an opcode a client may not send. */
  binary(session: VoiceSession, op: number, payload: Buffer): boolean {
    const group = this.#groupOf(session);
    if (group === undefined) return false;
    if (op === VoiceOpcodes.DaveMlsKeyPackage) group.keyPackage(session.record.userId, payload);
    else if (op === VoiceOpcodes.DaveMlsCommitWelcome) group.commitWelcome(session.record.userId, payload);
    else return false;
    return true;
  }

  /** Op 23 or 31 from the bot; false for another opcode. */
  json(session: VoiceSession, op: number, data: Record<string, unknown>): boolean {
    const group = this.#groupOf(session);
    const transitionId = Number(data['transition_id']);
    if (group === undefined) return false;
    if (op === VoiceOpcodes.DaveTransitionReady) {
      group.transitionReady(session.record.userId, transitionId);
    } else if (op === VoiceOpcodes.DaveMlsInvalidCommitWelcome) {
      session.record.restartEndToEnd();
      group.invalidCommitWelcome(session.record.userId, transitionId);
    } else {
      return false;
    }
    return true;
  }

  close(): void {
    for (const member of this.#members.values()) member.close();
    for (const group of this.#groups.values()) group.close();
  }

  #groupOf(session: VoiceSession): DaveGroup | undefined {
    if (!this.#participants.has(session)) return undefined;
    return this.existingGroup(session.record.guildId, session.record.channelId);
  }
}
