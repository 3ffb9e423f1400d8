import type { DiscordChannelRepository, DiscordCharacterChannel } from '../../core/repositories.js';
import { type SqlContext, atomic } from './sql-context.js';

/** Channels where characters speak, their casts, and who wrote which of the bot's messages. */
export class SqlDiscordChannelRepository implements DiscordChannelRepository {
  constructor(private readonly context: SqlContext) {}

  async get(channelId: string): Promise<DiscordCharacterChannel | undefined> {
    const [row, cast] = await Promise.all([
      this.context.db.selectFrom('discord_character_channels').selectAll().where('channel_id', '=', channelId).executeTakeFirst(),
      this.#cast([channelId]),
    ]);
    return row && { channelId: row.channel_id, guildId: row.guild_id, conversationId: row.conversation_id, listen: row.listen === 1, characterIds: cast.get(channelId) ?? [] };
  }

  async guildOfConversation(conversationId: string): Promise<string | undefined> {
    const row = await this.context.db.selectFrom('discord_character_channels').select('guild_id').where('conversation_id', '=', conversationId).executeTakeFirst();
    return row?.guild_id;
  }

  async inGuild(guildId: string): Promise<DiscordCharacterChannel[]> {
    const rows = await this.context.db.selectFrom('discord_character_channels').selectAll().where('guild_id', '=', guildId).execute();
    const cast = await this.#cast(rows.map((row) => row.channel_id));
    return rows
      .map((row) => ({ channelId: row.channel_id, guildId: row.guild_id, conversationId: row.conversation_id, listen: row.listen === 1, characterIds: cast.get(row.channel_id) ?? [] }))
      .filter((channel) => channel.characterIds.length > 0);
  }

  async addCharacter(channel: { channelId: string; guildId: string; conversationId: string }, characterId: string, addedMillis: number): Promise<DiscordCharacterChannel> {
    await atomic(this.context.db, async (db) => {
      // A concurrent first add stores its conversation or ours, never both.
      await db
        .insertInto('discord_character_channels')
        .values({ channel_id: channel.channelId, guild_id: channel.guildId, conversation_id: channel.conversationId, listen: 0 })
        .onConflict((conflict) => conflict.column('channel_id').doNothing())
        .execute();
      await db
        .insertInto('discord_channel_characters')
        .values({ channel_id: channel.channelId, character_id: characterId, added_millis: addedMillis })
        .onConflict((conflict) => conflict.columns(['channel_id', 'character_id']).doNothing())
        .execute();
    });
    return (await this.get(channel.channelId))!;
  }

  async removeCharacter(channelId: string, characterId: string): Promise<boolean> {
    const result = await this.context.db
      .deleteFrom('discord_channel_characters')
      .where('channel_id', '=', channelId)
      .where('character_id', '=', characterId)
      .executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async setListen(channelId: string, listen: boolean): Promise<boolean> {
    const result = await this.context.db
      .updateTable('discord_character_channels')
      .set({ listen: listen ? 1 : 0 })
      .where('channel_id', '=', channelId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async recordCharacterMessages(messageIds: readonly string[], characterId: string, createdMillis: number): Promise<void> {
    if (messageIds.length === 0) return;
    await this.context.db
      .insertInto('discord_character_messages')
      .values(messageIds.map((messageId) => ({ message_id: messageId, character_id: characterId, created_millis: createdMillis })))
      .onConflict((conflict) => conflict.column('message_id').doNothing())
      .execute();
  }

  async characterOfMessage(messageId: string): Promise<string | undefined> {
    const row = await this.context.db.selectFrom('discord_character_messages').select('character_id').where('message_id', '=', messageId).executeTakeFirst();
    return row?.character_id;
  }

  async recordReplyMessages(messageIds: readonly string[], characterId: string, createdMillis: number): Promise<void> {
    const last = messageIds.at(-1);
    if (last === undefined) return;
    await atomic(this.context.db, async (db) => {
      // Messages an earlier record put in this reply and this one leaves out are in none now.
      await db
        .updateTable('discord_character_messages')
        .set({ reply_message_id: null, part: null })
        .where('reply_message_id', '=', last)
        .where('message_id', 'not in', messageIds)
        .execute();
      await db
        .insertInto('discord_character_messages')
        .values(messageIds.map((messageId, part) => ({ message_id: messageId, character_id: characterId, created_millis: createdMillis, reply_message_id: last, part })))
        .onConflict((conflict) =>
          conflict.column('message_id').doUpdateSet((row) => ({ reply_message_id: row.ref('excluded.reply_message_id'), part: row.ref('excluded.part') })),
        )
        .execute();
    });
  }

  async replyMessages(messageId: string): Promise<string[]> {
    const rows = await this.context.db
      .selectFrom('discord_character_messages')
      .select('message_id')
      .where('reply_message_id', '=', messageId)
      .orderBy('part')
      .execute();
    const ids = rows.map((row) => row.message_id);
    return ids.at(-1) === messageId ? ids : [messageId];
  }

  async forgetCharacterMessages(createdMillis: number, limit: number): Promise<number> {
    // A bounded batch (neither SQLite nor PostgreSQL takes DELETE … LIMIT as such), oldest first by the index.
    const result = await this.context.db
      .deleteFrom('discord_character_messages')
      .where('message_id', 'in', (query) =>
        query.selectFrom('discord_character_messages').select('message_id').where('created_millis', '<', createdMillis).orderBy('created_millis').limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Each channel's characters in the order they were added. */
  async #cast(channelIds: readonly string[]): Promise<Map<string, string[]>> {
    const cast = new Map<string, string[]>();
    if (channelIds.length === 0) return cast;
    const rows = await this.context.db
      .selectFrom('discord_channel_characters')
      .select(['channel_id', 'character_id'])
      .where('channel_id', 'in', channelIds)
      .orderBy('added_millis')
      .orderBy('character_id')
      .execute();
    for (const row of rows) cast.set(row.channel_id, [...(cast.get(row.channel_id) ?? []), row.character_id]);
    return cast;
  }
}
