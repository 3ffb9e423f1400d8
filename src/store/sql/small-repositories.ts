import type { Selectable } from 'kysely';
import { notFound } from '../../core/errors.js';
import type {
  DiscordChannelLink,
  DiscordLinkRepository,
  FaceModelRepository,
  FactRepository,
  JobDelivery,
  JobDeliveryRepository,
} from '../../core/repositories.js';
import type { FaceModelRecord, FaceModelStatus } from '../../core/records.js';
import type { SqlContext } from './sql-context.js';
import type { Database, FaceModelsTable } from './schema.js';

/** The repositories that are plain rows: face models, Discord links, deliveries, facts. */
export class SqlFaceModelRepository implements FaceModelRepository {
  constructor(private readonly context: SqlContext) {}

  async create(faceModel: FaceModelRecord): Promise<FaceModelRecord> {
    await this.context.db.insertInto('face_models').values(faceModelRow(faceModel)).execute();
    return faceModel;
  }

  async get(faceModelId: string): Promise<FaceModelRecord | undefined> {
    const row = await this.context.db.selectFrom('face_models').selectAll().where('id', '=', faceModelId).executeTakeFirst();
    return row && faceModelRecord(row);
  }

  async listFor(characterId: string): Promise<FaceModelRecord[]> {
    const rows = await this.context.db
      .selectFrom('face_models')
      .selectAll()
      .where('character_id', '=', characterId)
      .orderBy('created_millis')
      .orderBy('id')
      .execute();
    return rows.map(faceModelRecord);
  }

  async update(faceModel: FaceModelRecord): Promise<FaceModelRecord> {
    const { id, ...fields } = faceModelRow(faceModel);
    const result = await this.context.db.updateTable('face_models').set(fields).where('id', '=', id).executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw notFound('Face model', id);
    return faceModel;
  }
}

export class SqlDiscordLinkRepository implements DiscordLinkRepository {
  constructor(private readonly context: SqlContext) {}

  async forChannel(channelId: string): Promise<DiscordChannelLink | undefined> {
    const row = await this.context.db.selectFrom('discord_channel_links').selectAll().where('channel_id', '=', channelId).executeTakeFirst();
    return row && { channelId: row.channel_id, conversationId: row.conversation_id, guildId: row.guild_id };
  }

  async forConversation(conversationId: string): Promise<DiscordChannelLink | undefined> {
    const row = await this.context.db
      .selectFrom('discord_channel_links')
      .selectAll()
      .where('conversation_id', '=', conversationId)
      .executeTakeFirst();
    return row && { channelId: row.channel_id, conversationId: row.conversation_id, guildId: row.guild_id };
  }

  async link(link: DiscordChannelLink): Promise<void> {
    await this.context.db
      .insertInto('discord_channel_links')
      .values({ channel_id: link.channelId, conversation_id: link.conversationId, guild_id: link.guildId })
      .onConflict((conflict) => conflict.column('channel_id').doUpdateSet({ conversation_id: link.conversationId, guild_id: link.guildId }))
      .execute();
  }

  async followers(channelId: string): Promise<string[]> {
    const rows = await this.context.db
      .selectFrom('discord_voice_followers')
      .select('discord_user_id')
      .where('channel_id', '=', channelId)
      .orderBy('discord_user_id')
      .execute();
    return rows.map((row) => row.discord_user_id);
  }

  async setFollowing(channelId: string, discordUserId: string, on: boolean): Promise<void> {
    const { db } = this.context;
    if (on) {
      await db
        .insertInto('discord_voice_followers')
        .values({ channel_id: channelId, discord_user_id: discordUserId })
        .onConflict((conflict) => conflict.columns(['channel_id', 'discord_user_id']).doNothing())
        .execute();
    } else {
      await db.deleteFrom('discord_voice_followers').where('channel_id', '=', channelId).where('discord_user_id', '=', discordUserId).execute();
    }
  }

  async dmCharacter(discordUserId: string): Promise<string | undefined> {
    const row = await this.context.db
      .selectFrom('discord_dm_characters')
      .select('character_id')
      .where('discord_user_id', '=', discordUserId)
      .executeTakeFirst();
    return row?.character_id;
  }

  async chooseDmCharacter(discordUserId: string, characterId: string): Promise<void> {
    await this.context.db
      .insertInto('discord_dm_characters')
      .values({ discord_user_id: discordUserId, character_id: characterId })
      .onConflict((conflict) => conflict.column('discord_user_id').doUpdateSet({ character_id: characterId }))
      .execute();
  }

  async dmConversation(discordUserId: string, characterId: string): Promise<string | undefined> {
    const row = await this.context.db
      .selectFrom('discord_dm_conversations')
      .select('conversation_id')
      .where('discord_user_id', '=', discordUserId)
      .where('character_id', '=', characterId)
      .executeTakeFirst();
    return row?.conversation_id;
  }

  async setDmConversation(discordUserId: string, characterId: string, conversationId: string): Promise<void> {
    await this.context.db
      .insertInto('discord_dm_conversations')
      .values({ discord_user_id: discordUserId, character_id: characterId, conversation_id: conversationId })
      .onConflict((conflict) => conflict.columns(['discord_user_id', 'character_id']).doUpdateSet({ conversation_id: conversationId }))
      .execute();
  }

  async voiceReplies(conversationId: string): Promise<boolean> {
    const row = await this.context.db
      .selectFrom('discord_voice_replies')
      .select('conversation_id')
      .where('conversation_id', '=', conversationId)
      .executeTakeFirst();
    return row !== undefined;
  }

  async setVoiceReplies(conversationId: string, on: boolean): Promise<void> {
    const { db } = this.context;
    if (on) {
      await db
        .insertInto('discord_voice_replies')
        .values({ conversation_id: conversationId })
        .onConflict((conflict) => conflict.column('conversation_id').doNothing())
        .execute();
    } else {
      await db.deleteFrom('discord_voice_replies').where('conversation_id', '=', conversationId).execute();
    }
  }

  async accountOf(discordUserId: string): Promise<string | undefined> {
    const row = await this.context.db.selectFrom('discord_users').select('account_id').where('discord_user_id', '=', discordUserId).executeTakeFirst();
    return row?.account_id;
  }

  async bindAccount(discordUserId: string, accountId: string): Promise<string> {
    await this.context.db
      .insertInto('discord_users')
      .values({ discord_user_id: discordUserId, account_id: accountId })
      .onConflict((conflict) => conflict.column('discord_user_id').doNothing())
      .execute();
    const bound = await this.accountOf(discordUserId);
    if (bound === undefined) throw notFound('Discord user', discordUserId);
    return bound;
  }
}

export class SqlJobDeliveryRepository implements JobDeliveryRepository {
  constructor(private readonly context: SqlContext) {}

  async add(delivery: JobDelivery): Promise<void> {
    await this.context.db
      .insertInto('job_deliveries')
      .values({
        job_id: delivery.jobId,
        kind: delivery.kind,
        application_id: delivery.applicationId,
        interaction_token: delivery.interactionToken,
        token_expires_millis: delivery.tokenExpiresMillis,
        channel_id: delivery.channelId,
        guild_id: delivery.guildId,
        user_id: delivery.userId,
        title: delivery.title,
      })
      .onConflict((conflict) => conflict.column('job_id').doNothing())
      .execute();
  }

  async get(jobId: string): Promise<JobDelivery | undefined> {
    const row = await this.context.db.selectFrom('job_deliveries').selectAll().where('job_id', '=', jobId).executeTakeFirst();
    return row && deliveryRecord(row);
  }

  async remove(jobId: string): Promise<boolean> {
    const result = await this.context.db.deleteFrom('job_deliveries').where('job_id', '=', jobId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async pending(limit: number): Promise<JobDelivery[]> {
    const rows = await this.context.db.selectFrom('job_deliveries').selectAll().orderBy('position').limit(limit).execute();
    return rows.map(deliveryRecord);
  }
}

export class SqlFactRepository implements FactRepository {
  constructor(private readonly context: SqlContext) {}

  async get<T>(key: string): Promise<T | undefined> {
    const row = await this.context.db.selectFrom('facts').select('value').where('key', '=', key).executeTakeFirst();
    return row === undefined ? undefined : (JSON.parse(row.value) as T);
  }

  async set<T>(key: string, value: T): Promise<void> {
    const text = JSON.stringify(value);
    await this.context.db
      .insertInto('facts')
      .values({ key, value: text })
      .onConflict((conflict) => conflict.column('key').doUpdateSet({ value: text }))
      .execute();
  }

  async delete(key: string): Promise<void> {
    await this.context.db.deleteFrom('facts').where('key', '=', key).execute();
  }
}

function deliveryRecord(row: Selectable<Database['job_deliveries']>): JobDelivery {
  return {
    jobId: row.job_id,
    kind: row.kind as JobDelivery['kind'],
    applicationId: row.application_id,
    interactionToken: row.interaction_token,
    tokenExpiresMillis: Number(row.token_expires_millis),
    channelId: row.channel_id,
    guildId: row.guild_id,
    userId: row.user_id,
    title: row.title,
  };
}

function faceModelRow(faceModel: FaceModelRecord): FaceModelsTable {
  return {
    id: faceModel.id,
    character_id: faceModel.characterId,
    job_id: faceModel.jobId,
    created_millis: faceModel.createdMillis,
    status: faceModel.status,
    archive_key: faceModel.archive?.key ?? null,
    archive_mime_type: faceModel.archive?.mimeType ?? null,
    trigger_token: faceModel.triggerToken,
    failure: faceModel.failure,
  };
}

function faceModelRecord(row: Selectable<Database['face_models']>): FaceModelRecord {
  return {
    id: row.id,
    characterId: row.character_id,
    jobId: row.job_id,
    createdMillis: Number(row.created_millis),
    status: row.status as FaceModelStatus,
    archive: row.archive_key === null ? null : { key: row.archive_key, mimeType: row.archive_mime_type ?? 'application/octet-stream' },
    triggerToken: row.trigger_token,
    failure: row.failure,
  };
}
