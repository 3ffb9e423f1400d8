/**
 * The fake voice gateway's DAVE group on its own, with test users' clients played by davey: the
 * hand-written MLS messages (external sender, signed external proposals, proposal refs, welcome
 * shares) are accepted by a real MLS implementation, and the gateway refuses what Discord's would.
 */
import { VoiceOpcodes } from 'discord-api-types/voice/v8';
import { describe, expect, it } from 'vitest';
import { DaveGroup } from '../fakes/discord-voice/dave/dave-group.js';
import { ExternalSender, readKeyPackage } from '../fakes/discord-voice/dave/mls.js';
import { SimulatedDaveMember } from '../fakes/discord-voice/dave/simulated-member.js';
import { PATIENCE_MS } from '../support/patience.js';

const CHANNEL = '1300000000000000001';
const [ALICE, BOB, CAROL] = ['1300000000000000011', '1300000000000000012', '1300000000000000013'] as const;
const FRAME = Buffer.from([0x78, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07]);

/** A group and its members, with a wait that re-checks on every change either reports. */
function call(transitionTimeoutMs = 1000) {
  const waiters = new Set<() => void>();
  const changed = (): void => {
    for (const waiter of [...waiters]) waiter();
  };
  const group = new DaveGroup({ channelId: CHANNEL, externalSender: new ExternalSender(Buffer.from('test gateway')), transitionTimeoutMs, changed });
  const members = new Map<string, SimulatedDaveMember>();
  function until<T>(check: () => T | false | undefined): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (waiters.delete(evaluate), reject(new Error(`until: not reached; last transition ${JSON.stringify(group.transitions.at(-1))}`))), PATIENCE_MS);
      function evaluate(): void {
        const value = check();
        if (value === false || value === undefined) return;
        clearTimeout(timer);
        waiters.delete(evaluate);
        resolve(value);
      }
      waiters.add(evaluate);
      evaluate();
    });
  }
  return {
    group,
    members,
    join(userId: string): SimulatedDaveMember {
      const member = new SimulatedDaveMember(userId, CHANNEL, group, changed);
      members.set(userId, member);
      group.join(member);
      member.start();
      return member;
    },
    leave(userId: string): void {
      members.get(userId)?.close();
      members.delete(userId);
      group.leave(userId);
    },
    /** Resolves with the first truthy value of `check`, re-run on every change. */
    until,
    /** Resolves once a transition announced after `since` ran, no other is pending, and every member has keys for the epoch. */
    settled(since = -Infinity): Promise<true> {
      return until(() => {
        const pending = group.transitions.some((transition) => transition.executedAt === null) || (group.transitions.at(-1)?.announcedAt ?? -Infinity) < since;
        const keyed = [...members.values()].every((member) => member.session.ready && member.session.epoch === BigInt(group.epoch));
        return !pending && keyed && group.epoch > 0;
      });
    },
  };
}

describe('the fake gateway’s DAVE group, with davey clients', () => {
  it('makes a group of two pending members, takes in a third, removes one who leaves, and resets the last one left alone', async () => {
    const { group, join, leave, settled, members } = call();
    const alice = join(ALICE);
    const bob = join(BOB);
    await settled();
    expect(group.epoch).toBe(1);
    expect(group.transitions).toMatchObject([{ id: 0, epoch: 1, removed: [] }]);
    expect(bob.decrypt(ALICE, alice.encrypt(FRAME))).toEqual(FRAME);

    let since = performance.now();
    join(CAROL);
    await settled(since);
    expect(group.transitions.at(-1)).toMatchObject({ epoch: 2, added: [CAROL], timedOut: false });
    expect(group.transitions.at(-1)!.id).toBeGreaterThan(0);
    expect(group.members.map((member) => member.userId).sort()).toEqual([ALICE, BOB, CAROL]);
    // Every member executed the transition only after all three said they were ready.
    const readies = group.log.filter((event) => event.op === VoiceOpcodes.DaveTransitionReady).map((event) => event.at);
    const executes = group.log.filter((event) => event.op === VoiceOpcodes.DaveExecuteTransition).map((event) => event.at);
    expect(Math.min(...executes)).toBeGreaterThanOrEqual(Math.max(...readies));
    expect(members.get(CAROL)!.decrypt(BOB, bob.encrypt(FRAME))).toEqual(FRAME);

    since = performance.now();
    leave(BOB);
    await settled(since);
    expect(group.transitions.at(-1)).toMatchObject({ epoch: 3, removed: [BOB] });
    expect(group.members.map((member) => member.userId)).not.toContain(BOB);

    leave(CAROL);
    const reset = () => group.log.filter((event) => event.userId === ALICE && event.direction === 'sent' && (event.op === VoiceOpcodes.DavePrepareEpoch || event.op === VoiceOpcodes.DavePrepareTransition));
    expect(reset()).toMatchObject([
      { op: VoiceOpcodes.DavePrepareEpoch, epoch: 1 },
      { op: VoiceOpcodes.DavePrepareTransition, transitionId: 0 },
    ]);
    expect(group.epoch).toBe(0);
    expect(group.problems).toEqual([]);
    for (const member of [alice, bob]) expect(member.problems).toEqual([]);
  });

  it('drops the commits that lost the race, without calling them problems', async () => {
    const { group, join, settled } = call();
    join(ALICE);
    join(BOB);
    await settled();
    const since = performance.now();
    join(CAROL);
    await settled(since);
    const dropped = group.log.filter((event) => event.note?.startsWith('dropped'));
    // Alice and bob both commit each change; one of the two loses every time.
    expect(dropped.length).toBeGreaterThanOrEqual(1);
    expect(group.problems).toEqual([]);
  });

  it('refuses a key package whose credential names someone else, or whose signature does not verify', async () => {
    const { group, join } = call();
    const alice = join(ALICE);
    const stolen = alice.session.getSerializedKeyPackage();
    group.keyPackage(ALICE, Buffer.concat([stolen.subarray(0, -1), Buffer.from([stolen.at(-1)! ^ 0x01])]));
    group.join({ userId: BOB, deliver: () => undefined });
    group.keyPackage(BOB, stolen);
    expect(group.problems).toEqual([`${ALICE}: key package signature does not verify`, `${BOB}: key package credential names someone else than ${BOB}`]);
    expect(() => readKeyPackage(stolen, ALICE)).not.toThrow();
  });

  it('removes a member that says it could not process a commit (op 31) at once, and adds it back with its next key package', async () => {
    const { group, join, until } = call();
    const alice = join(ALICE);
    const bob = join(BOB);
    await until(() => alice.session.ready && bob.session.ready);
    group.invalidCommitWelcome(BOB, 0);
    const removal = await until(() => group.transitions.find((transition) => transition.removed.includes(BOB) && transition.executedAt !== null));
    expect(removal).toMatchObject({ committer: ALICE, added: [] });
    expect(group.members.map((member) => member.userId)).toEqual([ALICE]);
    // Its client starts over, as @discordjs/voice does after op 31.
    bob.session.reinit(1, BOB, CHANNEL);
    group.keyPackage(BOB, bob.session.getSerializedKeyPackage());
    await until(() => group.transitions.find((transition) => transition.added.includes(BOB) && transition.executedAt !== null) && bob.session.ready);
    expect(bob.decrypt(ALICE, alice.encrypt(FRAME))).toEqual(FRAME);
    expect(group.problems).toEqual([]);
  });

  it('executes a transition after the timeout when a member never says it is ready', async () => {
    const { group, join, settled } = call(300);
    const alice = join(ALICE);
    join(BOB);
    await settled();
    alice.behaviour.answersTransitions = false;
    const since = performance.now();
    join(CAROL);
    await settled(since);
    const transition = group.transitions.at(-1)!;
    expect(transition).toMatchObject({ timedOut: true, awaiting: [ALICE] });
    expect(transition.executedAt! - transition.announcedAt).toBeGreaterThanOrEqual(295);
  });
});
