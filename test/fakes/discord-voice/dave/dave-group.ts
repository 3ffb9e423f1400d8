/**
 * The voice gateway's side of DAVE for one voice channel (daveprotocol.com, "Group Key
 * Exchange"): it is the MLS group's delivery service and its one external sender. It knows the
 * epoch, which user holds which leaf, and the proposals it sent this epoch, never a group secret.
 *
 * - A client joining gets the external sender (op 25) and sends a key package (op 26).
 * - Before a group exists every client is pending with a one-member local group: each key package
 *   becomes an Add proposal (op 27) sent to every other client, and a newcomer gets the Adds
 *   already out. The first valid commit (op 28) establishes the group: announced (op 29) to its
 *   committer and welcomed (op 30) to the rest with transition id 0, which clients execute at once.
 * - In an established group an Add or a Remove goes to the members, the first commit of the epoch
 *   that references every proposal of the epoch wins, and its transition runs: op 29 to members,
 *   op 30 to the added, each answers ready (op 23), and op 22 executes it once all have, or after
 *   `transitionTimeoutMs` as Discord does with a member that never answers.
 * - A client that cannot process a commit or welcome says so (op 31): it is removed and added
 *   again with the key package it sends next. When one client is left, it is told to start a new
 *   group (op 24 with epoch 1, then op 21 with transition 0): no one keeps a group alone.
 */
import { VoiceOpcodes } from 'discord-api-types/voice/v8';
import { addProposal, appendProposals, MlsRejection, readCommitWelcome, readKeyPackage, removeProposal, revokeProposals, snowflakeBytes, welcomeFor, type ExternalSender, type KeyPackage } from './mls.js';
import { DAVE_PROTOCOL_VERSION, type DaveEvent, type DaveParticipant, type DaveServerMessage } from './messages.js';
import { Transitions, type DaveTransition } from './transitions.js';

export type { DaveTransition } from './transitions.js';

/** A read-only view of one channel's group, for tests. */
export interface DaveGroupView {
  readonly channelId: string;
  /** 0 before a group is established. */
  readonly epoch: number;
  /** Members by leaf index, as the gateway tracks them. */
  readonly members: ReadonlyArray<{ leafIndex: number; userId: string }>;
  readonly transitions: readonly DaveTransition[];
  /** Every DAVE message either way, oldest first. */
  readonly log: readonly DaveEvent[];
  /** What clients sent that the gateway refused; empty when every client behaved. */
  readonly problems: readonly string[];
}

export interface DaveGroupOptions {
  channelId: string;
  externalSender: ExternalSender;
  transitionTimeoutMs: number;
  changed(): void;
}

interface Participant {
  client: DaveParticipant;
  /** The key package it last sent that no welcome has used yet. */
  keyPackage: KeyPackage | null;
  /** Said op 31: to be removed and added again with its next key package. */
  invalid: boolean;
}

interface Proposal {
  ref: Buffer;
  message: Buffer;
  kind: 'add' | 'remove';
  userId: string;
  leafIndex: number | null;
  keyPackage: KeyPackage | null;
  recipients: Set<string>;
}

export class DaveGroup implements DaveGroupView {
  readonly channelId: string;
  readonly log: DaveEvent[] = [];
  readonly problems: string[] = [];
  readonly #options: DaveGroupOptions;
  readonly #groupId: Buffer;
  readonly #participants = new Map<string, Participant>();
  /** Leaf index → user id; empty while no group is established. */
  #members = new Map<number, string>();
  #epoch = 0;
  /** Unrevoked proposals of the current epoch. */
  #proposals: Proposal[] = [];
  /** Refs revoked this epoch: a commit made before the revocation reached its author names them. */
  #revoked: Buffer[] = [];
  readonly #transitions: Transitions;

  constructor(options: DaveGroupOptions) {
    this.#options = options;
    this.channelId = options.channelId;
    this.#groupId = snowflakeBytes(options.channelId);
    this.#transitions = new Transitions({ timeoutMs: options.transitionTimeoutMs, execute: (transition) => this.#execute(transition) });
  }

  get transitions(): readonly DaveTransition[] {
    return this.#transitions.records;
  }

  get epoch(): number {
    return this.#epoch;
  }

  get members(): Array<{ leafIndex: number; userId: string }> {
    return [...this.#members].sort(([left], [right]) => left - right).map(([leafIndex, userId]) => ({ leafIndex, userId }));
  }

  get established(): boolean {
    return this.#epoch > 0;
  }

  /** Whether `userId` holds a leaf in the established group. */
  isMember(userId: string): boolean {
    return [...this.#members.values()].includes(userId);
  }

  /** A client entered the call with DAVE: it gets the external sender, and the Adds already out when no group exists. */
  join(client: DaveParticipant): void {
    this.#participants.set(client.userId, { client, keyPackage: null, invalid: false });
    this.#send(client.userId, { op: VoiceOpcodes.DaveMlsExternalSender, externalSender: this.#options.externalSender.serialize() });
    if (!this.established) {
      const inFlight = this.#proposals.filter((proposal) => proposal.kind === 'add' && proposal.userId !== client.userId);
      for (const proposal of inFlight) proposal.recipients.add(client.userId);
      if (inFlight.length > 0) this.#send(client.userId, { op: VoiceOpcodes.DaveMlsProposals, proposals: appendProposals(inFlight.map((proposal) => proposal.message)) });
    }
    this.#options.changed();
  }

  /** A client left the call (its voice session ended); `client`, when given, must be the one that joined. */
  leave(userId: string, client?: DaveParticipant): void {
    const participant = this.#participants.get(userId);
    if (participant === undefined || (client !== undefined && participant.client !== client)) return;
    this.#participants.delete(userId);
    this.#note(userId, 'received', -1, { note: 'left the call' });
    for (const proposal of this.#proposals.filter((candidate) => candidate.kind === 'add' && candidate.userId === userId)) this.#revoke(proposal);
    this.#transitions.excuse(userId);
    if (this.#participants.size === 0) {
      this.#reset();
    } else if (this.established && (this.#participants.size === 1 || ![...this.#members.values()].some((member) => member !== userId && this.#participants.has(member)))) {
      this.#recreate();
    } else {
      const leaf = this.#leafOf(userId);
      const removing = this.#proposals.some((proposal) => proposal.kind === 'remove' && proposal.userId === userId);
      if (leaf !== null && !removing) this.#propose('remove', userId, removeProposal(leaf), { leafIndex: leaf });
    }
    this.#options.changed();
  }

  /** Op 26. */
  keyPackage(userId: string, payload: Buffer): void {
    const participant = this.#participants.get(userId);
    this.#note(userId, 'received', VoiceOpcodes.DaveMlsKeyPackage);
    if (participant === undefined) return this.#refuse(userId, 'key package from a client not in the call');
    let keyPackage: KeyPackage;
    try {
      keyPackage = readKeyPackage(payload, userId);
    } catch (error) {
      if (error instanceof MlsRejection) return this.#refuse(userId, error.message);
      throw error;
    }
    // A pending member may replace its key package, never use two.
    for (const proposal of this.#proposals.filter((candidate) => candidate.kind === 'add' && candidate.userId === userId)) this.#revoke(proposal);
    participant.keyPackage = keyPackage;
    if (this.established && this.isMember(userId) && !participant.invalid) this.#flag(participant);
    this.#propose('add', userId, addProposal(keyPackage.bytes), { keyPackage });
    this.#options.changed();
  }

  /** Op 28: the first valid commit of the epoch wins; later or stale ones are dropped. */
  commitWelcome(userId: string, payload: Buffer): void {
    let parsed: ReturnType<typeof readCommitWelcome>;
    try {
      parsed = readCommitWelcome(payload);
    } catch (error) {
      this.#note(userId, 'received', VoiceOpcodes.DaveMlsCommitWelcome);
      if (error instanceof MlsRejection) return this.#refuse(userId, error.message);
      throw error;
    }
    const { commit, welcome } = parsed;
    const epoch = Number(commit.epoch);
    this.#note(userId, 'received', VoiceOpcodes.DaveMlsCommitWelcome, { epoch });
    if (!this.#participants.has(userId)) return this.#refuse(userId, 'commit from a client not in the call');
    if (!commit.groupId.equals(this.#groupId)) return this.#refuse(userId, 'commit for another group');
    if (epoch !== this.#epoch) return this.#drop(userId, `commit for epoch ${epoch}; the group is at ${this.#epoch}`);
    const ownLeaf = this.established ? this.#leafOf(userId) : 0;
    if (commit.senderLeafIndex !== ownLeaf) return this.#refuse(userId, `commit sent as leaf ${commit.senderLeafIndex}, not ${userId}'s (${ownLeaf})`);
    if (commit.pathLeaf !== null && !commit.pathLeaf.identity.equals(snowflakeBytes(userId))) return this.#refuse(userId, 'commit changes the committer’s credential');
    const expected = this.#proposals.filter((proposal) => this.established || proposal.recipients.has(userId));
    if (commit.proposalRefs.some((ref) => this.#revoked.some((revoked) => revoked.equals(ref)))) return this.#drop(userId, 'commit names a proposal revoked since');
    const referenced = commit.proposalRefs.map((ref) => expected.find((proposal) => proposal.ref.equals(ref)));
    if (referenced.some((proposal) => proposal === undefined)) return this.#refuse(userId, 'commit references a proposal the gateway did not send');
    const proposals = referenced as Proposal[];
    if (proposals.length === 0) return this.#refuse(userId, 'commit references no proposal');
    // Missing some: made before the latest proposals reached its author, who commits again.
    if (new Set(proposals).size < expected.length) return this.#drop(userId, 'commit misses proposals sent since');
    const adds = proposals.filter((proposal) => proposal.kind === 'add');
    if (adds.length > 0 && welcome === null) return this.#refuse(userId, 'commit adds members but carries no welcome');
    this.#apply(userId, commit.message, welcome, proposals);
  }

  /** Op 23. */
  transitionReady(userId: string, transitionId: number): void {
    this.#note(userId, 'received', VoiceOpcodes.DaveTransitionReady, this.#transitions.isPending(transitionId) ? { transitionId } : { transitionId, note: 'no such transition pending' });
    this.#transitions.ready(userId, transitionId);
    this.#options.changed();
  }

  /** Op 31: the client is removed and added again once it sends a new key package. */
  invalidCommitWelcome(userId: string, transitionId: number): void {
    this.#note(userId, 'received', VoiceOpcodes.DaveMlsInvalidCommitWelcome, { transitionId });
    const participant = this.#participants.get(userId);
    if (participant !== undefined && !participant.invalid) this.#flag(participant);
    this.#transitions.excuse(userId);
    this.#options.changed();
  }

  close(): void {
    this.#transitions.abandon();
  }

  #apply(committer: string, commit: Buffer, welcome: Buffer | null, proposals: Proposal[]): void {
    const establishing = !this.established;
    const before = establishing ? new Map([[0, committer]]) : new Map(this.#members);
    const members = new Map(before);
    const removed: string[] = [];
    const added: Array<{ userId: string; keyPackage: KeyPackage }> = [];
    for (const proposal of proposals.filter((candidate) => candidate.kind === 'remove')) {
      members.delete(proposal.leafIndex ?? -1);
      removed.push(proposal.userId);
    }
    for (const proposal of proposals.filter((candidate) => candidate.kind === 'add')) {
      let leaf = 0;
      while (members.has(leaf)) leaf += 1;
      members.set(leaf, proposal.userId);
      added.push({ userId: proposal.userId, keyPackage: proposal.keyPackage! });
    }
    this.#epoch += 1;
    this.#members = members;
    this.#proposals = [];
    this.#revoked = [];
    const transition = this.#transitions.open({ epoch: this.#epoch, committer, added: added.map((entry) => entry.userId), removed }, establishing);
    const transitionId = transition.id;
    // The old epoch's members that stay process the commit (the committer merges its own);
    // the added join from their share of the welcome.
    for (const userId of new Set(before.values())) {
      if (!removed.includes(userId) && this.#participants.has(userId)) this.#send(userId, { op: VoiceOpcodes.DaveMlsAnnounceCommitTransition, transitionId, commit });
    }
    for (const { userId, keyPackage } of added) {
      const participant = this.#participants.get(userId);
      const share = welcome === null ? null : welcomeFor(welcome, keyPackage.ref);
      if (share === null) this.problems.push(`welcome from ${committer} has no secrets for ${userId}`);
      else if (participant !== undefined) this.#send(userId, { op: VoiceOpcodes.DaveMlsWelcome, transitionId, welcome: share });
      if (participant !== undefined) Object.assign(participant, { keyPackage: null, invalid: false });
    }
    this.#transitions.await(transition, [...new Set(members.values())].filter((userId) => this.#participants.has(userId)));
    // Whoever is in the call and still outside the group is proposed in the new epoch.
    for (const [userId, participant] of this.#participants) {
      if (participant.keyPackage !== null && !this.isMember(userId)) this.#propose('add', userId, addProposal(participant.keyPackage.bytes), { keyPackage: participant.keyPackage });
      else if (participant.invalid && this.isMember(userId)) this.#flag(participant);
    }
    this.#options.changed();
  }

  /** Op 22 to the members, once the transition is executed. */
  #execute(transition: DaveTransition): void {
    for (const userId of new Set(this.#members.values())) {
      if (this.#participants.has(userId)) this.#send(userId, { op: VoiceOpcodes.DaveExecuteTransition, transitionId: transition.id });
    }
    this.#options.changed();
  }

  /** Marks a member to be removed (and added again on its next key package). */
  #flag(participant: Participant): void {
    participant.invalid = true;
    const leaf = this.#leafOf(participant.client.userId);
    const removing = this.#proposals.some((proposal) => proposal.kind === 'remove' && proposal.userId === participant.client.userId);
    if (leaf !== null && !removing) this.#propose('remove', participant.client.userId, removeProposal(leaf), { leafIndex: leaf });
  }

  /** Signs a proposal for the current epoch and sends it to whoever must commit it. */
  #propose(kind: Proposal['kind'], userId: string, body: Buffer, details: { leafIndex?: number; keyPackage?: KeyPackage }): void {
    const { message, ref } = this.#options.externalSender.proposal(this.#groupId, BigInt(this.#epoch), body);
    const recipients = this.established
      ? [...new Set(this.#members.values())].filter((member) => member !== userId && this.#participants.has(member) && this.#participants.get(member)?.invalid !== true)
      : [...this.#participants.keys()].filter((participant) => participant !== userId);
    const proposal: Proposal = { ref, message, kind, userId, leafIndex: details.leafIndex ?? null, keyPackage: details.keyPackage ?? null, recipients: new Set(recipients) };
    this.#proposals.push(proposal);
    for (const recipient of recipients) this.#send(recipient, { op: VoiceOpcodes.DaveMlsProposals, proposals: appendProposals([message]) });
  }

  #revoke(proposal: Proposal): void {
    this.#proposals = this.#proposals.filter((candidate) => candidate !== proposal);
    this.#revoked.push(proposal.ref);
    for (const recipient of proposal.recipients) {
      if (this.#participants.has(recipient)) this.#send(recipient, { op: VoiceOpcodes.DaveMlsProposals, proposals: revokeProposals([proposal.ref]) });
    }
  }

  /** Everyone left starts a new group: op 24 with epoch 1, then op 21 with the initialisation transition 0. */
  #recreate(): void {
    this.#reset();
    for (const userId of this.#participants.keys()) {
      this.#send(userId, { op: VoiceOpcodes.DavePrepareEpoch, epoch: 1, protocolVersion: DAVE_PROTOCOL_VERSION });
      this.#send(userId, { op: VoiceOpcodes.DavePrepareTransition, transitionId: 0, protocolVersion: DAVE_PROTOCOL_VERSION });
    }
  }

  #reset(): void {
    this.#transitions.abandon();
    this.#epoch = 0;
    this.#members = new Map();
    this.#proposals = [];
    this.#revoked = [];
    for (const participant of this.#participants.values()) Object.assign(participant, { keyPackage: null, invalid: false });
  }

  #leafOf(userId: string): number | null {
    for (const [leaf, member] of this.#members) if (member === userId) return leaf;
    return null;
  }

  #send(userId: string, message: DaveServerMessage): void {
    const participant = this.#participants.get(userId);
    if (participant === undefined) return;
    const details: Partial<DaveEvent> = {};
    if ('transitionId' in message) details.transitionId = message.transitionId;
    if ('epoch' in message) details.epoch = message.epoch;
    else if (message.op === VoiceOpcodes.DaveMlsProposals) details.epoch = this.#epoch;
    this.#note(userId, 'sent', message.op, details);
    participant.client.deliver(message);
  }

  #refuse(userId: string, reason: string): void {
    this.problems.push(`${userId}: ${reason}`);
    this.#note(userId, 'received', -1, { note: `refused: ${reason}` });
    this.#options.changed();
  }

  /** A message dropped in the normal run of things (a commit that lost the race). */
  #drop(userId: string, reason: string): void {
    this.#note(userId, 'received', -1, { note: `dropped: ${reason}` });
    this.#options.changed();
  }

  #note(userId: string, direction: DaveEvent['direction'], op: number, details: Partial<DaveEvent> = {}): void {
    this.log.push({ at: performance.now(), userId, direction, op, ...details });
  }
}
