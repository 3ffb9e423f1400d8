/**
 * The form in which two learned memories count as the same fact (see `LearnedMemoryRepository`):
 * lower case, runs of white space made one space, trimmed, the end's `.`, `!` and `?` removed.
 * "Likes  green tea." and "likes green tea!" are one fact. Composed and decomposed accents are
 * made one (NFC) too, since they look the same to whoever wrote them.
 *
 * The store keeps this form in a column with a unique index, and the core may use it to compare
 * facts before asking the store: both must use this one function.
 */
export function normaliseMemoryText(text: string): string {
  return text
    .normalize('NFC')
    .toLowerCase()
    .replace(/\s+/gu, ' ')
    .trim()
    .replace(/[.!?]+$/u, '')
    .trimEnd();
}
