import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ContractContext } from './contract-context.js';

/** `/voice replies`: the per-conversation choice, seen by every process, off until turned on. */
export function discordVoiceRepliesContract(context: ContractContext): void {
  describe('Discord voice-message replies', () => {
    it('are off by default, on once set (twice is once), off again, per conversation and across pools', async () => {
      const [store, other] = [context.store(), context.other()];
      const [conversationId, neighbourId] = [randomUUID(), randomUUID()];
      expect(await store.discordLinks.voiceReplies(conversationId)).toBe(false);

      await store.discordLinks.setVoiceReplies(conversationId, true);
      await other.discordLinks.setVoiceReplies(conversationId, true);
      expect(await other.discordLinks.voiceReplies(conversationId)).toBe(true);
      expect(await store.discordLinks.voiceReplies(neighbourId)).toBe(false);

      await other.discordLinks.setVoiceReplies(conversationId, false);
      await store.discordLinks.setVoiceReplies(conversationId, false);
      expect(await store.discordLinks.voiceReplies(conversationId)).toBe(false);
    });

    it('keeps the last of concurrent switches from two pools without a conflict', async () => {
      const [store, other] = [context.store(), context.other()];
      const conversationId = randomUUID();
      await Promise.all([store.discordLinks.setVoiceReplies(conversationId, true), other.discordLinks.setVoiceReplies(conversationId, true)]);
      expect(await store.discordLinks.voiceReplies(conversationId)).toBe(true);
    });
  });
}
