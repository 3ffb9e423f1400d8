/**
 * The fake voice server: a WSS endpoint (https + ws, since @discordjs/voice only speaks `wss://`)
 * and one UDP socket for every session, told apart by SSRC as Discord's media servers do. It
 * answers IP discovery, then checks, decrypts and decodes the RTP each session sends, and relays
 * what test users say to the bot's sessions in their channel (see speaker.ts).
 */
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { VoiceCloseCodes, VoiceEncryptionMode, VoiceOpcodes } from 'discord-api-types/voice/v8';
import { WebSocketServer, type WebSocket } from 'ws';
import type { LoopbackCertificate } from './certificate.js';
import { DaveService, type DaveOptions } from './dave/dave-service.js';
import type { SimulatedDaveMember } from './dave/simulated-member.js';
import { ConnectionRecording, type VoiceConnectionRecord } from './recording.js';
import { discoveryRequestSsrc, discoveryResponse, isKeepalive, parseRtpHeader } from './rtp.js';
import { Speaker, type SpeakerHost } from './speaker.js';
import type { VoiceGrant } from './voice-states.js';
import { serveVoiceSocket, type VoiceSessionHost } from './voice-socket.js';
import { VoiceSession } from './voice-session.js';

export interface VoiceServerOptions {
  certificate: LoopbackCertificate;
  heartbeatIntervalMs: number;
  /** Negotiate DAVE (and require it, as Discord does since March 2026); null answers protocol version 0. */
  dave: DaveOptions | null;
  /** The bot's user id: everyone else in a voice channel is a test user, whose DAVE client the fake plays. */
  botUserId: string;
  /** The grant of a guild's latest VOICE_SERVER_UPDATE. */
  grant(guildId: string): VoiceGrant | undefined;
  /** Users in a voice channel. */
  occupants(guildId: string, channelId: string): string[];
  /** The voice channel a user is in, or null. */
  channelOf(guildId: string, userId: string): string | null;
  /** Whether a user's voice state is self-deafened; Discord sends a deafened client no audio. */
  deafened(guildId: string, userId: string): boolean;
  changed(): void;
}

export class FakeVoiceServer implements VoiceSessionHost, SpeakerHost {
  readonly heartbeatIntervalMs: number;
  /** Only the mode a fake can decrypt with node:crypto; @discordjs/voice prefers it anyway. */
  readonly modes: readonly string[] = [VoiceEncryptionMode.AeadAes256GcmRtpSize];
  /** Datagrams no session could claim (e.g. the keepalive sent before IP discovery). */
  strayDatagrams = 0;
  readonly #options: VoiceServerOptions;
  readonly #https: Server;
  readonly #webSockets: WebSocketServer;
  readonly #udp: Socket;
  readonly #sessions: VoiceSession[] = [];
  readonly #bySsrc = new Map<number, VoiceSession>();
  readonly #byRemote = new Map<string, VoiceSession>();
  /** Test users' audio streams by `guildId:userId`; one SSRC each until they leave voice. */
  readonly #speakers = new Map<string, Speaker>();
  readonly #dave: DaveService | null;
  #nextSsrc = 1000;

  private constructor(options: VoiceServerOptions) {
    this.#options = options;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs;
    this.#dave = options.dave === null ? null : new DaveService({ ...options.dave, changed: () => options.changed() });
    this.#https = createServer({ key: options.certificate.key, cert: options.certificate.cert });
    this.#webSockets = new WebSocketServer({ server: this.#https, perMessageDeflate: false });
    this.#webSockets.on('connection', (socket) => serveVoiceSocket(socket, this));
    this.#udp = createSocket('udp4');
    this.#udp.on('message', (packet, remote) => this.#datagram(packet, remote));
  }

  /** Listens on ephemeral 127.0.0.1 ports, TCP and UDP. */
  static async start(options: VoiceServerOptions): Promise<FakeVoiceServer> {
    const server = new FakeVoiceServer(options);
    await new Promise<void>((resolve, reject) => {
      server.#https.once('error', reject);
      server.#https.listen(0, '127.0.0.1', () => resolve());
    });
    await new Promise<void>((resolve, reject) => {
      server.#udp.once('error', reject);
      server.#udp.bind(0, '127.0.0.1', () => resolve());
    });
    return server;
  }

  /** `127.0.0.1:PORT`, VOICE_SERVER_UPDATE's `endpoint`. */
  get endpoint(): string {
    return `127.0.0.1:${(this.#https.address() as AddressInfo).port}`;
  }

  get udpPort(): number {
    return this.#udp.address().port;
  }

  get connections(): VoiceConnectionRecord[] {
    return this.#sessions.map((session) => session.record);
  }

  /** DAVE's groups and simulated members; null when the server answers protocol version 0. */
  get dave(): DaveService | null {
    return this.#dave;
  }

  identify(data: Record<string, unknown>, socket: WebSocket): VoiceSession | number {
    const guildId = String(data['server_id']);
    const grant = this.#options.grant(guildId);
    if (grant === undefined || grant.userId !== data['user_id'] || grant.sessionId !== data['session_id'] || grant.token !== data['token']) {
      return VoiceCloseCodes.AuthenticationFailed;
    }
    const dave = typeof data['max_dave_protocol_version'] === 'number' ? data['max_dave_protocol_version'] : null;
    // Discord has required DAVE since March 2026: a client offering none is refused.
    if (this.#dave !== null && (dave ?? 0) < 1) return VoiceCloseCodes.EndToEndEncryptionDAVEProtocolRequired;
    // A new identify replaces whatever session this user had in the guild.
    for (const old of this.#sessions) if (old.record.guildId === guildId && old.record.userId === grant.userId) old.end();
    const record = new ConnectionRecording(this.#sessions.length + 1, guildId, grant.userId, grant.channelId, grant.sessionId, this.#nextSsrc++, dave);
    const session: VoiceSession = new VoiceSession(record, grant.token, socket, () => this.#dave?.leaveSession(session));
    this.#sessions.push(session);
    this.#bySsrc.set(record.ssrc, session);
    return session;
  }

  resumable(data: Record<string, unknown>): VoiceSession | undefined {
    return this.#sessions.findLast(
      (session) => !session.ended && session.record.guildId === data['server_id'] && session.record.sessionId === data['session_id'] && session.token === data['token'],
    );
  }

  occupants(session: VoiceSession): string[] {
    return this.#options.occupants(session.record.guildId, session.record.channelId).filter((userId) => userId !== session.record.userId);
  }

  changed(): void {
    this.#options.changed();
  }

  daveProtocolVersion(): number {
    return this.#dave === null ? 0 : 1;
  }

  daveStarted(session: VoiceSession): void {
    this.#dave?.joinSession(session);
  }

  daveBinary(session: VoiceSession, op: number, payload: Buffer): boolean {
    return this.#dave?.binary(session, op, payload) ?? false;
  }

  daveMessage(session: VoiceSession, op: number, data: Record<string, unknown>): boolean {
    return this.#dave?.json(session, op, data) ?? false;
  }

  /** A test user's DAVE client, which encrypts what they say; null with DAVE off. */
  endToEnd(guildId: string, userId: string): SimulatedDaveMember | null {
    return this.#dave?.member(guildId, userId) ?? null;
  }

  /** A user's audio stream in a guild, with an SSRC from the same range as the sessions'. */
  speaker(guildId: string, userId: string): Speaker {
    const key = `${guildId}:${userId}`;
    let speaker = this.#speakers.get(key);
    if (speaker === undefined) this.#speakers.set(key, (speaker = new Speaker(guildId, userId, this.#nextSsrc++, this)));
    return speaker;
  }

  listeners(guildId: string, channelId: string): VoiceSession[] {
    return this.#sessions.filter(
      ({ ended, record }) =>
        !ended && record.status === 'ready' && record.guildId === guildId && record.channelId === channelId && !this.#options.deafened(guildId, record.userId),
    );
  }

  channelOf(guildId: string, userId: string): string | null {
    return this.#options.channelOf(guildId, userId);
  }

  sendDatagram(packet: Buffer, address: { address: string; port: number }): void {
    this.#udp.send(packet, address.port, address.address);
  }

  /** Someone changed channel: ops 11/13 to the sessions sharing it; the bot leaving ends its sessions with 4014. */
  moved(guildId: string, userId: string, from: string | null, to: string | null): void {
    // Leaving voice ends the user's stream; back in, their client gets a new SSRC.
    if (to === null) this.#speakers.delete(`${guildId}:${userId}`);
    for (const session of this.#sessions) {
      const record = session.record;
      if (session.ended || record.guildId !== guildId) continue;
      if (record.userId === userId) {
        if (to === null) session.drop(VoiceCloseCodes.Disconnected, false);
        continue;
      }
      if (record.status !== 'ready') continue;
      if (record.channelId === to) session.sendSequenced(VoiceOpcodes.ClientsConnect, { user_ids: [userId] });
      else if (record.channelId === from) session.sendSequenced(VoiceOpcodes.ClientDisconnect, { user_id: userId });
    }
    // After ops 11/13, so the bot knows whom the proposals that follow add.
    if (userId !== this.#options.botUserId) this.#dave?.moved(guildId, userId, from, to);
  }

  /** Closes the open voice sockets of a guild with `code`, or without a close frame; returns how many. */
  drop(guildId: string, code: number, abrupt: boolean): number {
    let dropped = 0;
    for (const session of this.#sessions) if (session.record.guildId === guildId && !session.ended && session.drop(code, abrupt)) dropped += 1;
    return dropped;
  }

  async close(): Promise<void> {
    for (const socket of this.#webSockets.clients) socket.terminate();
    this.#webSockets.close();
    this.#https.closeAllConnections();
    await new Promise<void>((resolve) => this.#https.close(() => resolve()));
    await new Promise<void>((resolve) => this.#udp.close(() => resolve()));
    for (const session of this.#sessions) session.record.close();
    this.#dave?.close();
  }

  #datagram(packet: Buffer, remote: RemoteInfo): void {
    const discoverySsrc = discoveryRequestSsrc(packet);
    if (discoverySsrc !== null) {
      const session = this.#bySsrc.get(discoverySsrc);
      if (session === undefined || session.ended) return void (this.strayDatagrams += 1);
      this.#byRemote.set(`${remote.address}:${remote.port}`, session);
      this.#udp.send(discoveryResponse(discoverySsrc, remote.address, remote.port), remote.port, remote.address);
      return;
    }
    if (isKeepalive(packet)) {
      const session = this.#byRemote.get(`${remote.address}:${remote.port}`);
      if (session === undefined) this.strayDatagrams += 1;
      else session.record.keepalives += 1;
      return;
    }
    const header = parseRtpHeader(packet);
    const session = typeof header === 'string' ? undefined : this.#bySsrc.get(header.ssrc);
    if (session === undefined || typeof header === 'string') return void (this.strayDatagrams += 1);
    session.record.receive(packet, header, { address: remote.address, port: remote.port }, performance.now());
    this.#options.changed();
  }
}
