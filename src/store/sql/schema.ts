import type { ColumnType, Generated } from 'kysely';

/**
 * The tables as Kysely sees them. Booleans are integers 0/1 and structured values JSON text in
 * both dialects, so one query path reads both; times are Unix milliseconds or microseconds as
 * in the records. `position` columns are identity/autoincrement: the order every process agrees on.
 */
export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  characters: CharactersTable;
  memories: MemoriesTable;
  conversations: ConversationsTable;
  conversation_speakers: ConversationSpeakersTable;
  conversation_invitations: ConversationInvitationsTable;
  conversation_characters: ConversationCharactersTable;
  messages: MessagesTable;
  message_alternatives: MessageAlternativesTable;
  ledger_transactions: LedgerTransactionsTable;
  jobs: JobsTable;
  job_statuses: JobStatusesTable;
  face_models: FaceModelsTable;
  discord_channel_links: DiscordChannelLinksTable;
  discord_voice_followers: DiscordVoiceFollowersTable;
  discord_dm_characters: DiscordDmCharactersTable;
  discord_dm_conversations: DiscordDmConversationsTable;
  discord_users: DiscordUsersTable;
  discord_voice_replies: DiscordVoiceRepliesTable;
  discord_character_channels: DiscordCharacterChannelsTable;
  discord_channel_characters: DiscordChannelCharactersTable;
  discord_character_messages: DiscordCharacterMessagesTable;
  discord_voice_guilds: DiscordVoiceGuildsTable;
  discord_voice_forbidden_channels: DiscordVoiceForbiddenChannelsTable;
  discord_voice_ignored_users: DiscordVoiceIgnoredUsersTable;
  job_deliveries: JobDeliveriesTable;
  facts: FactsTable;
  job_signals: JobSignalsTable;
  learned_memories: LearnedMemoriesTable;
  memory_batches: MemoryBatchesTable;
  memory_spending: MemorySpendingTable;
  lorebook_entries: LorebookEntriesTable;
  reply_lorebook_entries: ReplyLorebookEntriesTable;
  memory_batch_parts: MemoryBatchPartsTable;
  reply_memories: ReplyMemoriesTable;
  unlearned_messages: UnlearnedMessagesTable;
  file_releases: FileReleasesTable;
  speech_audio: SpeechAudioTable;
  unlearned_message_characters: UnlearnedMessageCharactersTable;
  learning_notices: LearningNoticesTable;
  memory_person_spending: MemoryPersonSpendingTable;
}

export interface AccountsTable {
  position: Generated<number>;
  id: string;
  username: string;
  created_millis: number;
  is_verified: number;
  is_disabled: number;
  is_subscribed: number;
  date_of_birth: string | null;
  referred_by_account_id: string | null;
  tags: string;
  character_id: string;
  profile_picture_url: string | null;
  /** The sum of the account's ledger, written in the same transaction as every ledger row. */
  balance: number;
}

export interface ApiKeysTable {
  key_hash: string;
  account_id: string;
  created_millis: number;
}

export interface CharactersTable {
  id: string;
  account_id: string;
  name: string;
  /** lower(name), byte-ordered in both dialects, so a prefix is an index range. */
  name_lower: string;
  description: string;
  personality_summary: string;
  is_public: number;
  avatar_key: string | null;
  avatar_mime_type: string | null;
  tts_voice_id: string | null;
  created_micros: number;
  updated_micros: number;
  /** JSON of the core's `CharacterDefinition`. */
  definition: string;
  /** JSON of the core's `LorebookSettings`; written by the lorebook repository alone. */
  lorebook_settings: ColumnType<string, string | undefined, string>;
  /** When the owner deleted it; the row stays, scrubbed, so old conversations still name it. */
  deleted_micros: number | null;
  /** Moved by every write to the lorebook; written by the lorebook repository alone. */
  lorebook_revision: ColumnType<number, number | undefined, number>;
}

export interface ReplyLorebookEntriesTable {
  position: Generated<number>;
  message_id: string;
  alternative_id: string;
  entry_id: string;
}

export interface LorebookEntriesTable {
  position: Generated<number>;
  id: string;
  character_id: string;
  /** JSON of the core's `LorebookEntry` without its id. */
  entry: string;
}

export interface MemoriesTable {
  position: Generated<number>;
  id: string;
  character_id: string;
  text: string;
  created_micros: number;
}

export interface ConversationsTable {
  id: string;
  account_id: string;
  character_id: string;
  created_micros: number;
  updated_micros: number;
  summary: string | null;
  summary_through_position: number | null;
}

export interface ConversationSpeakersTable {
  position: Generated<number>;
  conversation_id: string;
  account_id: string;
  joined_micros: number;
}

export interface ConversationInvitationsTable {
  conversation_id: string;
  /** Who is invited. */
  account_id: string;
  invited_by_account_id: string;
  created_micros: number;
}

export interface ConversationCharactersTable {
  position: Generated<number>;
  conversation_id: string;
  character_id: string;
  joined_micros: number;
}

export interface MessagesTable {
  position: Generated<number>;
  id: string;
  conversation_id: string;
  content: string;
  mime_type: string;
  participant_id: string;
  participant_type: string;
  created_micros: number;
  file_key: string | null;
  file_mime_type: string | null;
  file_width: number | null;
  file_height: number | null;
  finish_reason: string | null;
  /** How many alternatives the message has: 1 for most, with no rows in `message_alternatives`. */
  swipe_count: Generated<number>;
  /** The chosen alternative; `content` and `finish_reason` are its copy. */
  swipe_index: Generated<number>;
  /** 1 for a character's greeting (opening or scene): swiped between, never regenerated. */
  is_greeting: Generated<number>;
}

/** The alternatives of a message that has more than one, by index (0 the oldest). */
export interface MessageAlternativesTable {
  message_id: string;
  alternative_index: number;
  id: string;
  content: string;
  finish_reason: string | null;
  created_micros: number;
}

export interface LedgerTransactionsTable {
  position: Generated<number>;
  id: string;
  account_id: string;
  type: string;
  amount: number;
  reason: string;
  created_millis: number;
  /** Unique: a debit is refunded at most once. */
  refund_of: string | null;
  reference: string | null;
}

export interface JobsTable {
  position: Generated<number>;
  id: string;
  account_id: string;
  client_id: string | null;
  created_millis: number;
  type: string;
  payload: string;
  face_model: string | null;
  photos: string | null;
  status: string;
  output_files: string;
  transaction_id: string | null;
  external_id: string | null;
  started_millis: number | null;
  failure: string | null;
  settled: number;
  lease_owner: string | null;
  lease_expires_millis: number | null;
  claims: Generated<number>;
}

export interface JobStatusesTable {
  position: Generated<number>;
  id: string;
  job_id: string;
  status: string;
  created_millis: number;
}

export interface FaceModelsTable {
  id: string;
  character_id: string;
  job_id: string;
  created_millis: number;
  status: string;
  archive_key: string | null;
  archive_mime_type: string | null;
  trigger_token: string | null;
  failure: string | null;
}

export interface DiscordChannelLinksTable {
  channel_id: string;
  conversation_id: string;
  guild_id: string | null;
}

export interface DiscordVoiceFollowersTable {
  channel_id: string;
  discord_user_id: string;
}

export interface DiscordDmCharactersTable {
  discord_user_id: string;
  character_id: string;
}

export interface DiscordDmConversationsTable {
  discord_user_id: string;
  character_id: string;
  conversation_id: string;
}

export interface DiscordUsersTable {
  discord_user_id: string;
  account_id: string;
}

/** A row per conversation whose character answers voice messages by voice message. */
export interface DiscordVoiceRepliesTable {
  conversation_id: string;
}

export interface DiscordCharacterChannelsTable {
  channel_id: string;
  guild_id: string;
  conversation_id: string;
  listen: number;
}

export interface DiscordChannelCharactersTable {
  channel_id: string;
  character_id: string;
  added_millis: number;
}

export interface DiscordCharacterMessagesTable {
  message_id: string;
  character_id: string;
  created_millis: number;
  /** The last message of the reply this one is part of, which carries its buttons; null until the reply is written. */
  reply_message_id: string | null;
  /** This message's place in that reply, from 0. */
  part: number | null;
}

/** A server's voice call rules; no row: listening allowed, default thresholds. */
export interface DiscordVoiceGuildsTable {
  guild_id: string;
  /** 1 allowed, 0 forbidden in the whole server. */
  listening: number;
  silence_ms: number | null;
  minimum_speech_ms: number | null;
}

/** A voice channel where listening is forbidden. */
export interface DiscordVoiceForbiddenChannelsTable {
  channel_id: string;
  guild_id: string;
}

/** A Discord user who opted out of being heard in voice calls (/voice ignore me). */
export interface DiscordVoiceIgnoredUsersTable {
  discord_user_id: string;
}

export interface JobDeliveriesTable {
  position: Generated<number>;
  job_id: string;
  kind: string;
  application_id: string;
  interaction_token: string;
  token_expires_millis: number;
  channel_id: string;
  guild_id: string | null;
  user_id: string;
  title: string;
}

export interface FactsTable {
  key: string;
  value: string;
}

/** SQLite only: the log processes poll for job changes (PostgreSQL uses NOTIFY). */
export interface JobSignalsTable {
  position: Generated<number>;
  job_id: string;
  created_millis: number;
}

export interface LearnedMemoriesTable {
  position: Generated<number>;
  id: string;
  character_id: string;
  subject_account_id: string;
  kind: string;
  text: string;
  /** `normaliseMemoryText(text)`: unique per character, subject and kind among rows not superseded. */
  normalised_text: string;
  status: string;
  origin: string;
  conversation_id: string;
  /** JSON array of message ids. */
  message_ids: string;
  importance: number;
  stated_micros: number;
  created_micros: number;
  updated_micros: number;
  superseded_micros: number | null;
  superseded_by: string | null;
  /** A pending own memory: the active one it replaces once approved. */
  replaces: string | null;
}

export interface MemoryBatchesTable {
  position: Generated<number>;
  id: string;
  conversation_id: string;
  /** Unique per conversation: two processes queueing the same messages make one batch. */
  from_position: number;
  through_position: number;
  status: string;
  attempts: Generated<number>;
  run_after_millis: number;
  lease_owner: string | null;
  lease_until_millis: number | null;
  created_micros: number;
  last_error: string | null;
}

/** Tokens memory extraction spent per character and day (YYYY-MM-DD). */
export interface MemorySpendingTable {
  character_id: string;
  day: string;
  tokens: number;
}

/** A character of a batch whose facts are stored: a retry of the batch runs only the others. */
export interface MemoryBatchPartsTable {
  batch_id: string;
  character_id: string;
  done_micros: number;
}

/** A memory a reply was written with (written or learned); goes with the reply, and with the memory. */
export interface ReplyMemoriesTable {
  position: Generated<number>;
  message_id: string;
  /** The alternative (swipe) of the message written with the memory; the message's own id for its first. */
  alternative_id: string;
  memory_id: string;
}

/** A message nothing is learned from (kept only as context, or written by the admin as someone). */
export interface UnlearnedMessagesTable {
  message_id: string;
}

/** A message one character learns nothing from: its author had learning off for that character when they said it. */
export interface UnlearnedMessageCharactersTable {
  message_id: string;
  character_id: string;
}

/** A person told, once, that a character learns from what they say. */
export interface LearningNoticesTable {
  account_id: string;
  character_id: string;
  told_micros: number;
}

/** What extraction spent on a person's lines for a character on a day (within LEARNING_DAILY_TOKENS_PER_PERSON). */
export interface MemoryPersonSpendingTable {
  character_id: string;
  account_id: string;
  day: string;
  tokens: number;
}

/** A file a deleted character let go of: removed by the sweep once unheld a grace period after `released_micros`. */
export interface FileReleasesTable {
  file_key: string;
  account_id: string;
  /** When it was let go of, or last stored again. */
  released_micros: number;
}

/** An audio spoken once, kept to be reused until the sweep lets go of it (SPEECH_CACHE_*). */
export interface SpeechAudioTable {
  /** SHA-256 of the engine, the voice and the text said aloud. */
  hash: string;
  file_key: string;
  mime_type: string;
  bytes: number;
  /** The owner of the character that spoke it: whose image jobs the release narrows to; '' for any. */
  account_id: string;
  /** When it was last asked for. */
  used_micros: number;
}
