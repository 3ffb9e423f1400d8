/**
 * Statements that put a database back where it was before a migration, newest first: each
 * array undoes one (after the later ones), for the migration tests that run it, or an earlier
 * one, on older data.
 */

/** Migration 0017 (learning per person: unlearned per character, notices, spending). */
export const undo0017 = [
  'drop table memory_person_spending',
  'drop table learning_notices',
  'drop table unlearned_message_characters',
  "delete from kysely_migration where name = '0017-learning-per-person'",
];

/** Migration 0016 (spoken audio as rows, not facts), after 0017 was undone; its audio is not put back as facts. */
export const undo0016 = ['drop table speech_audio', "delete from kysely_migration where name = '0016-speech-audio'"];

/** Migration 0015 (conversation invitations), after 0016 was undone. */
export const undo0015 = ['drop table conversation_invitations', "delete from kysely_migration where name = '0015-conversation-invitations'"];

/** Migration 0014 (file releases, and the Discord messages of a reply), after 0015 was undone. */
export const undo0014 = [
  'drop table file_releases',
  'drop index discord_character_messages_reply',
  'alter table discord_character_messages drop column part',
  'alter table discord_character_messages drop column reply_message_id',
  "delete from kysely_migration where name >= '0014'",
];

/** Migration 0013 (voice listening rules), after 0014 was undone. */
export const undo0013 = [
  'drop table discord_voice_ignored_users',
  'drop table discord_voice_forbidden_channels',
  'drop table discord_voice_guilds',
  "delete from kysely_migration where name >= '0013'",
];

/** Migration 0012 (message alternatives), after 0013 was undone. */
export const undo0012 = [
  'drop table message_alternatives',
  // SQLite drops a column only when no other column's CHECK names it: the index's names the count.
  'alter table messages drop column swipe_index',
  'alter table messages drop column swipe_count',
  'alter table messages drop column is_greeting',
  'alter table messages add column superseded_micros bigint',
  "delete from kysely_migration where name >= '0012'",
];

/** Statements that undo migration 0011 (many characters, lorebooks) after 0012 was undone. */
export const undo0011 = [
  'drop table reply_lorebook_entries',
  'drop table lorebook_entries',
  'drop index characters_avatar',
  'drop index messages_file',
  'drop index face_models_archive',
  'alter table characters drop column definition',
  'alter table characters drop column lorebook_settings',
  'alter table characters drop column deleted_micros',
  'alter table characters drop column lorebook_revision',
  "delete from kysely_migration where name >= '0011'",
];

/** Statements that undo migration 0010 (learning's progress and records) after 0011 was undone. */
export const undo0010 = [
  'drop table unlearned_messages',
  'drop table reply_memories',
  'drop table memory_batch_parts',
  'alter table learned_memories drop column replaces',
  "delete from kysely_migration where name >= '0010'",
];
