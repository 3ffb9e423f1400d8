import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ContractContext } from './contract-context.js';

/** `/voice listening` and `/voice ignore me`: rules every process reads the same, allowed and default until set. */
export function discordVoiceRulesContract(context: ContractContext): void {
  describe('Discord voice call rules', () => {
    it('allow listening everywhere with the default thresholds in a server never configured', async () => {
      const guildId = randomUUID();
      expect(await context.store().discordVoiceRules.guild(guildId)).toEqual({ guildId, listening: true, forbiddenChannelIds: [], silenceMs: null, minimumSpeechMs: null });
      expect(await context.store().discordVoiceRules.forbidden(guildId, randomUUID())).toBeUndefined();
    });

    it('forbid listening in a server or a channel as one pool sets it and the other reads it, and allow it again', async () => {
      const [store, other] = [context.store(), context.other()];
      const [guildId, quiet, open] = [randomUUID(), randomUUID(), randomUUID()];
      await store.discordVoiceRules.setListening({ guildId, channelId: quiet }, false);
      await other.discordVoiceRules.setListening({ guildId, channelId: quiet }, false);
      expect(await other.discordVoiceRules.forbidden(guildId, quiet)).toBe('channel');
      expect(await other.discordVoiceRules.forbidden(guildId, open)).toBeUndefined();

      await other.discordVoiceRules.setListening({ guildId }, false);
      // The whole server's ban is named first: allowing the channel alone would not help.
      expect(await store.discordVoiceRules.forbidden(guildId, open)).toBe('server');
      expect(await store.discordVoiceRules.forbidden(guildId, quiet)).toBe('server');
      expect(await store.discordVoiceRules.guild(guildId)).toMatchObject({ listening: false, forbiddenChannelIds: [quiet] });

      await store.discordVoiceRules.setListening({ guildId }, true);
      expect(await other.discordVoiceRules.forbidden(guildId, open)).toBeUndefined();
      expect(await other.discordVoiceRules.forbidden(guildId, quiet)).toBe('channel');
      await store.discordVoiceRules.setListening({ guildId, channelId: quiet }, true);
      await store.discordVoiceRules.setListening({ guildId, channelId: quiet }, true);
      expect(await other.discordVoiceRules.guild(guildId)).toMatchObject({ listening: true, forbiddenChannelIds: [] });
    });

    it('tune a server’s thresholds one at a time, keep its listening rule, and go back to the defaults on null', async () => {
      const [store, other] = [context.store(), context.other()];
      const guildId = randomUUID();
      await store.discordVoiceRules.setListening({ guildId }, false);
      expect(await store.discordVoiceRules.tune(guildId, { silenceMs: 900 })).toMatchObject({ listening: false, silenceMs: 900, minimumSpeechMs: null });
      // Two managers each tuning their own threshold at once: both are kept.
      await Promise.all([other.discordVoiceRules.tune(guildId, { minimumSpeechMs: 150 }), store.discordVoiceRules.tune(guildId, { silenceMs: 700 })]);
      expect(await other.discordVoiceRules.guild(guildId)).toMatchObject({ listening: false, silenceMs: 700, minimumSpeechMs: 150 });
      expect(await other.discordVoiceRules.tune(guildId, {})).toMatchObject({ silenceMs: 700, minimumSpeechMs: 150 });
      expect(await other.discordVoiceRules.tune(guildId, { silenceMs: null })).toMatchObject({ silenceMs: null, minimumSpeechMs: 150 });
      // A server first configured by tuning allows listening.
      const fresh = randomUUID();
      expect(await store.discordVoiceRules.tune(fresh, { minimumSpeechMs: 0 })).toMatchObject({ listening: true, silenceMs: null, minimumSpeechMs: 0 });
    });

    it('keep who opted out by Discord user id, across pools, until they opt back in (twice is once)', async () => {
      const [store, other] = [context.store(), context.other()];
      const [carol, dave] = [randomUUID(), randomUUID()];
      expect(await store.discordVoiceRules.ignores(carol)).toBe(false);
      await Promise.all([store.discordVoiceRules.setIgnored(carol, true), other.discordVoiceRules.setIgnored(carol, true)]);
      expect(await other.discordVoiceRules.ignores(carol)).toBe(true);
      expect(await other.discordVoiceRules.ignores(dave)).toBe(false);
      await other.discordVoiceRules.setIgnored(carol, false);
      await store.discordVoiceRules.setIgnored(carol, false);
      expect(await store.discordVoiceRules.ignores(carol)).toBe(false);
    });
  });
}
