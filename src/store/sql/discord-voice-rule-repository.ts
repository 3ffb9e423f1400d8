import type { DiscordVoiceGuildRules, DiscordVoiceRuleRepository, DiscordVoiceTuning } from '../../core/repositories.js';
import type { SqlContext } from './sql-context.js';

/** Where characters may listen in voice calls, each server's thresholds, and who opted out. */
export class SqlDiscordVoiceRuleRepository implements DiscordVoiceRuleRepository {
  constructor(private readonly context: SqlContext) {}

  async guild(guildId: string): Promise<DiscordVoiceGuildRules> {
    const { db } = this.context;
    const [row, channels] = await Promise.all([
      db.selectFrom('discord_voice_guilds').selectAll().where('guild_id', '=', guildId).executeTakeFirst(),
      db.selectFrom('discord_voice_forbidden_channels').select('channel_id').where('guild_id', '=', guildId).orderBy('channel_id').execute(),
    ]);
    return {
      guildId,
      listening: (row?.listening ?? 1) === 1,
      forbiddenChannelIds: channels.map((channel) => channel.channel_id),
      silenceMs: row?.silence_ms ?? null,
      minimumSpeechMs: row?.minimum_speech_ms ?? null,
    };
  }

  async forbidden(guildId: string, channelId: string): Promise<'server' | 'channel' | undefined> {
    const { db } = this.context;
    const [server, channel] = await Promise.all([
      db.selectFrom('discord_voice_guilds').select('guild_id').where('guild_id', '=', guildId).where('listening', '=', 0).executeTakeFirst(),
      db.selectFrom('discord_voice_forbidden_channels').select('channel_id').where('channel_id', '=', channelId).executeTakeFirst(),
    ]);
    return server ? 'server' : channel ? 'channel' : undefined;
  }

  async setListening(place: { guildId: string; channelId?: string | undefined }, allowed: boolean): Promise<void> {
    const { db } = this.context;
    if (place.channelId === undefined) {
      const listening = allowed ? 1 : 0;
      await db
        .insertInto('discord_voice_guilds')
        .values({ guild_id: place.guildId, listening, silence_ms: null, minimum_speech_ms: null })
        .onConflict((conflict) => conflict.column('guild_id').doUpdateSet({ listening }))
        .execute();
    } else if (allowed) {
      await db.deleteFrom('discord_voice_forbidden_channels').where('channel_id', '=', place.channelId).execute();
    } else {
      await db
        .insertInto('discord_voice_forbidden_channels')
        .values({ channel_id: place.channelId, guild_id: place.guildId })
        .onConflict((conflict) => conflict.column('channel_id').doNothing())
        .execute();
    }
  }

  async tune(guildId: string, tuning: DiscordVoiceTuning): Promise<DiscordVoiceGuildRules> {
    // Only the thresholds named change: one upsert, so two managers tuning each their own never lose either.
    const changes = {
      ...(tuning.silenceMs === undefined ? {} : { silence_ms: tuning.silenceMs }),
      ...(tuning.minimumSpeechMs === undefined ? {} : { minimum_speech_ms: tuning.minimumSpeechMs }),
    };
    if (Object.keys(changes).length > 0) {
      await this.context.db
        .insertInto('discord_voice_guilds')
        .values({ guild_id: guildId, listening: 1, silence_ms: null, minimum_speech_ms: null, ...changes })
        .onConflict((conflict) => conflict.column('guild_id').doUpdateSet(changes))
        .execute();
    }
    return this.guild(guildId);
  }

  async ignores(discordUserId: string): Promise<boolean> {
    const row = await this.context.db.selectFrom('discord_voice_ignored_users').select('discord_user_id').where('discord_user_id', '=', discordUserId).executeTakeFirst();
    return row !== undefined;
  }

  async setIgnored(discordUserId: string, ignored: boolean): Promise<void> {
    const { db } = this.context;
    if (!ignored) {
      await db.deleteFrom('discord_voice_ignored_users').where('discord_user_id', '=', discordUserId).execute();
      return;
    }
    await db
      .insertInto('discord_voice_ignored_users')
      .values({ discord_user_id: discordUserId })
      .onConflict((conflict) => conflict.column('discord_user_id').doNothing())
      .execute();
  }
}
