import { type CardSections, examplesSection, ourInstruction } from './card-prompt.js';
import type { ChatContentPart, ChatMessage, FileStore } from './ports.js';
import type { AccountRecord, CharacterRecord, MemoryRecord, MessageRecord } from './records.js';

export { estimateTokens } from './tokens.js';

/** Only the newest images are sent as pixels; older ones become a short placeholder. */
export const maxImagesInContext = 4;
/** Images are stored with neither side above this, so no engine has to scale them. */
export const maxImageSide = 1024;

/**
 * What an image costs in the context, from its real size. Vision models count differently, so
 * this takes the larger of the two common ways: OpenAI's tiles (fit in 2048², shortest side down
 * to 768, 85 tokens plus 170 per 512-pixel tile) and one token per 28×28 patch (Qwen2-VL, and about
 * llava-style encoders at this size). Older images without a recorded size count as the largest
 * stored one.
 */
export function imageTokens(width = maxImageSide, height = maxImageSide): number {
  let w = width;
  let h = height;
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const shortest = Math.min(1, 768 / Math.min(w, h));
  w *= shortest;
  h *= shortest;
  const tiles = 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
  const patches = Math.ceil(width / 28) * Math.ceil(height / 28);
  return Math.max(tiles, patches);
}

/**
 * The answering character's own system prompt: who it is, its own memories only, the summary,
 * and in a scene, who else is present (their lines come as user turns headed by their names).
 * With `card`, the card's parts (macros expanded) take their places: its instruction for ours,
 * lorebook entries around the definition, the scenario, and the example dialogue last, which
 * the context window drops first.
 */
export function systemPrompt(
  character: CharacterRecord,
  memories: readonly MemoryRecord[],
  summary?: string,
  others: readonly string[] = [],
  /** What the character learned about the person it answers (memory-scope.ts decides which). */
  person?: { name: string; facts: readonly string[] },
  card?: CardSections,
): string {
  const lines = [card?.instruction ?? ourInstruction(character)];
  if (others.length > 0) {
    lines.push(
      '',
      `Also in this scene: ${others.join(', ')}. Their lines come to you headed by their names ("${others[0]}: …"); never write their lines, answer only as ${character.name}.`,
    );
  }
  if (card && card.loreBefore.length > 0) lines.push('', card.loreBefore.join('\n'));
  const description = card?.description ?? character.description.trim();
  const personality = card?.personality ?? character.personalitySummary.trim();
  if (description) lines.push('', `About you: ${description}`);
  if (personality) lines.push('', `Your personality: ${personality}`);
  if (card?.scenario) lines.push('', `Scenario: ${card.scenario}`);
  if (card && card.loreAfter.length > 0) lines.push('', card.loreAfter.join('\n'));
  if (memories.length > 0) {
    lines.push('', 'Things you remember:', ...memories.map((memory) => `- ${memory.text}`));
  }
  if (person && person.facts.length > 0) {
    lines.push('', `What you know about ${person.name} from earlier conversations:`, ...person.facts.map((fact) => `- ${fact}`));
  }
  if (summary?.trim()) lines.push('', `Earlier in this conversation: ${summary.trim()}`);
  if (card && card.examples.length > 0) lines.push('', examplesSection(card.examples));
  return lines.join('\n');
}

/** The placeholders that stand for an image not sent as pixels, saying why. */
export const imagePlaceholders = {
  unseen: '[an image; this model cannot see images]',
  older: '[an earlier image, left out to fit the context]',
} as const;

/** What a character reads for a recording the speech-to-text engine failed to write down. */
export const unheardRecording = '[a voice message that could not be written down]';

export interface HistoryOptions {
  /** Token budget for the history alone (context minus system prompt minus reply). */
  budget: number;
  /** What a message's text costs, framing included (the engine's count where it offers one). */
  textCost(message: MessageRecord): number;
  /** Whether images may go as pixels (false once the model refused them). */
  seeImages: boolean;
  /** Ids of messages to leave out (replaced replies); they still count as kept, at no cost. */
  omit?: ReadonlySet<string>;
  /** Names of account speakers; prefixed to their lines when several people share the conversation. */
  accounts: ReadonlyMap<string, AccountRecord>;
  /**
   * The character answering: its lines are `assistant` turns; every other character's lines are
   * `user` turns headed by its name (from `characterNames`). Absent: every character line is the answerer's.
   */
  answererId?: string;
  /** Names of the characters whose lines may appear, by id. */
  characterNames?: ReadonlyMap<string, string>;
  /** Head people's lines with their names even when only one person speaks (several characters are present). */
  labelPeople?: boolean;
  files: FileStore;
}

export interface History {
  messages: ChatMessage[];
  /** How many of the given messages were kept, from the newest. */
  kept: number;
  /** Whether any image goes as pixels. */
  withImages: boolean;
  /** What the kept messages cost against the budget, images included. */
  used: number;
}

/**
 * Turns the newest messages that fit the budget into chat messages, oldest first. Messages
 * are given newest first, and the first is always kept: the caller made sure it fits. An
 * image that does not fit (or is beyond the newest few) is kept as a placeholder that says
 * so. Consecutive messages of one role are merged, because several chat templates reject two
 * user turns in a row.
 */
export async function buildHistory(newestFirst: readonly MessageRecord[], options: HistoryOptions): Promise<History> {
  const severalPeople = options.accounts.size > 1 || options.labelPeople === true;
  const kept: { message: MessageRecord; placeholder?: string; omitted?: true }[] = [];
  let used = 0;
  let images = 0;
  for (const message of newestFirst) {
    if (options.omit?.has(message.id)) {
      kept.push({ message, omitted: true });
      continue;
    }
    const text = options.textCost(message);
    const isImage = message.file !== null && message.mimeType.startsWith('image/');
    const first = kept.length === 0;
    if (!isImage) {
      if (!first && used + text > options.budget) break;
      used += text;
      kept.push({ message });
      continue;
    }
    const pixels = imageTokens(message.file?.width, message.file?.height);
    if (options.seeImages && images < maxImagesInContext && (first || used + text + pixels <= options.budget)) {
      used += text + pixels;
      images++;
      kept.push({ message });
      continue;
    }
    // The placeholder's few words are covered by the framing counted in `text`.
    if (!first && used + text > options.budget) break;
    used += text;
    kept.push({ message, placeholder: options.seeImages ? imagePlaceholders.older : imagePlaceholders.unseen });
  }
  const turns: ChatMessage[] = [];
  let withImages = false;
  for (const { message, placeholder, omitted } of [...kept].reverse()) {
    if (omitted) continue;
    const role = ownLine(message, options.answererId) ? 'assistant' : 'user';
    const speaker = speakerName(message, role, severalPeople, options);
    const parts: ChatContentPart[] = [];
    const words = message.content === '' && message.file !== null && message.mimeType.startsWith('audio/') ? unheardRecording : message.content;
    const text = speaker ? `${speaker}: ${words}` : words;
    if (message.file && message.mimeType.startsWith('image/')) {
      const bytes = placeholder === undefined ? await options.files.read(message.file.key) : undefined;
      if (bytes) {
        parts.push({ type: 'image', mimeType: message.file.mimeType, data: bytes });
        withImages = true;
      } else {
        const label = placeholder ?? imagePlaceholders.older;
        parts.push({ type: 'text', text: speaker ? `${speaker}: ${label}` : label });
      }
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
  return { messages: turns.map((turn) => ({ role: turn.role, content: simplify(asParts(turn.content)) })), kept: kept.length, withImages, used };
}

function ownLine(message: MessageRecord, answererId: string | undefined): boolean {
  return message.participantType === 'character' && (answererId === undefined || message.participantId === answererId);
}

/** The name heading a user turn: another character always, a person when several share the conversation. */
function speakerName(message: MessageRecord, role: 'assistant' | 'user', severalPeople: boolean, options: HistoryOptions): string | undefined {
  if (role === 'assistant') return undefined;
  if (message.participantType === 'character') return options.characterNames?.get(message.participantId) ?? 'Another character';
  return severalPeople ? options.accounts.get(message.participantId)?.username : undefined;
}

function asParts(content: ChatMessage['content']): ChatContentPart[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/** Text-only content goes out as one plain string, which every server accepts. */
function simplify(parts: ChatContentPart[]): ChatMessage['content'] {
  if (parts.every((part) => part.type === 'text')) return parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return parts;
}
