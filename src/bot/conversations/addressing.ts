/**
 * Who a message on Discord speaks to, among the characters present (a channel's cast, a
 * scene's characters). A webhook persona is not a user and cannot be @-mentioned, so people
 * address a character the ways they address each other: by replying to one of its messages,
 * by starting with its name ("Ada, what do you think?", "@Ada hi"), or by mentioning the bot
 * together with the character's name ("@Likeness what would Ada say?").
 */

export interface CastMember {
  id: string;
  name: string;
}

export interface IncomingWords {
  /** The text as written, mentions in Discord's `<@id>` form. */
  content: string;
  /** The bot's own user id, to recognise a mention of it. */
  botUserId: string;
  /** The character who wrote the message this one replies to, when it replies to one. */
  repliedToCharacterId?: string | undefined;
}

export type Addressing =
  | { characterId: string; by: 'reply' | 'name' | 'mention' }
  /** The bot was mentioned without naming anyone present. */
  | { characterId: undefined; by: 'mention' }
  | undefined;

const mentionPattern = (userId: string): RegExp => new RegExp(`<@!?${userId}>`, 'g');

/** Case and width folded, so "ＡＤＡ" and "ada" match "Ada". */
const fold = (text: string): string => text.normalize('NFKC').toLocaleLowerCase('en');

/** A letter, digit or joiner: a name must not run on into one ("Ada" is not in "Adam"). */
const wordCharacter = /[\p{L}\p{N}_'’-]/u;

/** Where `name` occurs in `text` as a whole word (both already folded), from `from` on; -1 if not. */
function wordIndex(text: string, name: string, from = 0): number {
  for (let at = text.indexOf(name, from); at !== -1; at = text.indexOf(name, at + 1)) {
    const before = at === 0 ? '' : text[at - 1]!;
    const after = text.slice(at + name.length, at + name.length + 1);
    if (!wordCharacter.test(before) && !wordCharacter.test(after)) return at;
  }
  return -1;
}

/**
 * The character a message addresses, or undefined when it addresses none. A name said outright
 * wins: the bot mentioned with a name, or a message that starts with a name (an `@` before it
 * allowed). A reply to a character present comes next, and beats a name at the start that is
 * not said to someone ("Bo said so", replying to Ada, is for Ada; "Bo, what do you think?" is
 * for Bo). Longer names are tried first, so "Ada Lovelace" is not taken for "Ada" when both are
 * present.
 */
export function addressedCharacter(words: IncomingWords, cast: readonly CastMember[]): Addressing {
  const repliedTo = words.repliedToCharacterId !== undefined && cast.some((member) => member.id === words.repliedToCharacterId) ? words.repliedToCharacterId : undefined;
  const mention = mentionPattern(words.botUserId);
  const mentioned = mention.test(words.content);
  const text = fold(words.content.replace(mention, ' ')).trim();
  const named = [...cast]
    .map((member) => ({ member, name: fold(member.name).trim() }))
    .filter(({ name }) => name !== '')
    .sort((a, b) => b.name.length - a.name.length);
  const opening = text.replace(/^@\s*/, '');
  const first = named.find(({ name }) => opening.startsWith(name) && !wordCharacter.test(opening.slice(name.length, name.length + 1)));
  const calledOut = first !== undefined && (repliedTo === undefined || mentioned || vocative.test(opening.slice(first.name.length)));
  if (first && calledOut) return { characterId: first.member.id, by: mentioned ? 'mention' : 'name' };
  let earliest: { id: string; at: number } | undefined;
  if (mentioned) {
    for (const { member, name } of named) {
      const at = wordIndex(text, name);
      // Same start: the longer name (tried first) stays.
      if (at !== -1 && (earliest === undefined || at < earliest.at)) earliest = { id: member.id, at };
    }
  }
  if (earliest) return { characterId: earliest.id, by: 'mention' };
  if (repliedTo !== undefined) return { characterId: repliedTo, by: 'reply' };
  return mentioned ? { characterId: undefined, by: 'mention' } : undefined;
}

/** After a name at the start: said to someone ("Bo, …", "Bo: …", "Bo!", "Bo?", or the name alone). */
const vocative = /^\s*(?:$|[,:;!?…—–])/u;

/** The words as the character should read them: the bot's mention taken out, nothing else changed. */
export function withoutBotMention(content: string, botUserId: string): string {
  return content.replace(mentionPattern(botUserId), ' ').replace(/[ \t]{2,}/g, ' ').trim();
}
