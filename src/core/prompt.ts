import type { ChatContentPart, ChatMessage, FileStore } from './ports.js';
import type { AccountRecord, CharacterRecord, MemoryRecord, MessageRecord } from './records.js';

/**
 * A conservative token estimate. The engine's tokenizer is unknown (any OpenAI-compatible
 * server), and common tokenizers average 3.5 to 4.5 characters a token for English, so
 * three characters a token keeps us under the real count; each message adds framing tokens.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3) + 4;
}

/** What an image costs in the context, as most vision models count a downscaled image. */
export const imageTokens = 800;
/** Only the newest images are sent as pixels; older ones become a short placeholder. */
export const maxImagesInContext = 4;

export function systemPrompt(character: CharacterRecord, memories: readonly MemoryRecord[]): string {
  const lines = [`You are ${character.name}. Stay in character and answer as ${character.name} only.`];
  if (character.description.trim()) lines.push('', `About you: ${character.description.trim()}`);
  if (character.personalitySummary.trim()) lines.push('', `Your personality: ${character.personalitySummary.trim()}`);
  if (memories.length > 0) {
    lines.push('', 'Things you remember:', ...memories.map((memory) => `- ${memory.text}`));
  }
  return lines.join('\n');
}

export interface HistoryOptions {
  /** Token budget for the history alone (context minus system prompt minus reply). */
  budget: number;
  /** Names of account speakers; prefixed to their lines when several people share the conversation. */
  accounts: ReadonlyMap<string, AccountRecord>;
  files: FileStore;
}

/**
 * Turns the newest messages that fit the budget into chat messages, oldest first. Messages
 * are given newest first; consecutive messages of one role are merged, because several chat
 * templates reject two user turns in a row.
 */
export async function buildHistory(newestFirst: readonly MessageRecord[], options: HistoryOptions): Promise<ChatMessage[]> {
  const severalPeople = options.accounts.size > 1;
  const kept: { message: MessageRecord; withPixels: boolean }[] = [];
  let used = 0;
  let images = 0;
  for (const message of newestFirst) {
    const withPixels = message.file !== null && message.mimeType.startsWith('image/') && images < maxImagesInContext;
    const cost = estimateTokens(message.content) + (withPixels ? imageTokens : 0);
    if (used + cost > options.budget) break;
    used += cost;
    if (withPixels) images++;
    kept.push({ message, withPixels });
  }
  const turns: ChatMessage[] = [];
  for (const { message, withPixels } of kept.reverse()) {
    const role = message.participantType === 'character' ? 'assistant' : 'user';
    const speaker = severalPeople && role === 'user' ? options.accounts.get(message.participantId)?.username : undefined;
    const parts: ChatContentPart[] = [];
    const text = speaker ? `${speaker}: ${message.content}` : message.content;
    if (message.file && message.mimeType.startsWith('image/')) {
      const bytes = withPixels ? await options.files.read(message.file.key) : undefined;
      if (bytes) parts.push({ type: 'image', mimeType: message.file.mimeType, data: bytes });
      else parts.push({ type: 'text', text: speaker ? `${speaker}: [an image]` : '[an image]' });
      if (message.content) parts.push({ type: 'text', text });
    } else {
      parts.push({ type: 'text', text });
    }
    const previous = turns.at(-1);
    if (previous && previous.role === role) {
      previous.content = [...asParts(previous.content), { type: 'text', text: '\n\n' }, ...parts];
    } else {
      turns.push({ role, content: parts });
    }
  }
  return turns.map((turn) => ({ role: turn.role, content: simplify(asParts(turn.content)) }));
}

function asParts(content: ChatMessage['content']): ChatContentPart[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/** Text-only content goes out as one plain string, which every server accepts. */
function simplify(parts: ChatContentPart[]): ChatMessage['content'] {
  if (parts.every((part) => part.type === 'text')) return parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return parts;
}
