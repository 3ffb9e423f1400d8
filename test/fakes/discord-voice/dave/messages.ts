/**
 * What a DAVE voice gateway and the clients in a call say to each other (daveprotocol.com,
 * "Voice Gateway Opcodes"), as data: the gateway's group logic speaks these, and each kind of
 * client (the bot over its WebSocket, a simulated member in process) turns them into its own wire.
 */
import { VoiceOpcodes } from 'discord-api-types/voice/v8';

/** DAVE protocol version 1: MLS ciphersuite 2, the only version there is. */
export const DAVE_PROTOCOL_VERSION = 1;

/** Gateway → client. */
export type DaveServerMessage =
  | { op: VoiceOpcodes.DavePrepareTransition; transitionId: number; protocolVersion: number }
  | { op: VoiceOpcodes.DaveExecuteTransition; transitionId: number }
  | { op: VoiceOpcodes.DavePrepareEpoch; epoch: number; protocolVersion: number }
  | { op: VoiceOpcodes.DaveMlsExternalSender; externalSender: Buffer }
  | { op: VoiceOpcodes.DaveMlsProposals; proposals: Buffer }
  | { op: VoiceOpcodes.DaveMlsAnnounceCommitTransition; transitionId: number; commit: Buffer }
  | { op: VoiceOpcodes.DaveMlsWelcome; transitionId: number; welcome: Buffer };

/** A client in the call as the gateway's group logic sees it. */
export interface DaveParticipant {
  readonly userId: string;
  deliver(message: DaveServerMessage): void;
}

/** One DAVE message either way, kept for tests; times are `performance.now()` ms. */
export interface DaveEvent {
  at: number;
  userId: string;
  /** `sent` by the gateway to the user, or `received` from them. */
  direction: 'sent' | 'received';
  op: number;
  transitionId?: number;
  epoch?: number;
  /** What the gateway made of a received message when it did not simply take it. */
  note?: string;
}

/**
 * The binary form of a gateway → client message after the 2-byte sequence number and 1-byte
 * opcode; null for the JSON ones. Ops 29 and 30 put the transition id (u16) before the MLS bytes.
 */
export function binaryBody(message: DaveServerMessage): Buffer | null {
  switch (message.op) {
    case VoiceOpcodes.DaveMlsExternalSender:
      return message.externalSender;
    case VoiceOpcodes.DaveMlsProposals:
      return message.proposals;
    case VoiceOpcodes.DaveMlsAnnounceCommitTransition:
      return Buffer.concat([transitionIdBytes(message.transitionId), message.commit]);
    case VoiceOpcodes.DaveMlsWelcome:
      return Buffer.concat([transitionIdBytes(message.transitionId), message.welcome]);
    default:
      return null;
  }
}

/** The JSON `d` of a gateway → client message; null for the binary ones. */
export function jsonBody(message: DaveServerMessage): Record<string, number> | null {
  switch (message.op) {
    case VoiceOpcodes.DavePrepareTransition:
      return { transition_id: message.transitionId, protocol_version: message.protocolVersion };
    case VoiceOpcodes.DaveExecuteTransition:
      return { transition_id: message.transitionId };
    case VoiceOpcodes.DavePrepareEpoch:
      return { epoch: message.epoch, protocol_version: message.protocolVersion };
    default:
      return null;
  }
}

function transitionIdBytes(transitionId: number): Buffer {
  const bytes = Buffer.alloc(2);
  bytes.writeUInt16BE(transitionId);
  return bytes;
}
