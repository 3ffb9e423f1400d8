/**
 * Statements that put a database back where it was before migration 0012 (message
 * alternatives), for the migration tests that run it, or an earlier one, on older data.
 */
export const undo0012 = [
  'drop table message_alternatives',
  // SQLite drops a column only when no other column's CHECK names it: the index's names the count.
  'alter table messages drop column swipe_index',
  'alter table messages drop column swipe_count',
  'alter table messages add column superseded_micros bigint',
  "delete from kysely_migration where name >= '0012'",
];
