import { type APIActionRowComponent, type APIButtonComponent, ButtonStyle, ComponentType } from 'discord.js';
import type { StoredMessage } from '../../core/repositories.js';

/**
 * The 🔄 button under a character's reply (finished or failed): it asks for a new reply to the
 * same message. Its custom id carries the conversation and the message answered
 * (`chat:again:<conversationId>:<messageId>`), so it works after a restart; both are UUIDs,
 * which keeps the id under Discord's 100 characters.
 */
export interface RegenerateButton {
  conversationId: string;
  messageId: string;
}

const prefix = 'chat:again';

export function regenerateButtonId(button: RegenerateButton): string {
  return `${prefix}:${button.conversationId}:${button.messageId}`;
}

/** The button a custom id names, or undefined for another one. */
export function parseRegenerateButton(customId: string): RegenerateButton | undefined {
  const [command, action, conversationId, messageId] = customId.split(':');
  if (`${command}:${action}` !== prefix || !conversationId || !messageId) return undefined;
  return { conversationId, messageId };
}

/** One row holding the 🔄 button. */
export function regenerateRow(button: RegenerateButton): APIActionRowComponent<APIButtonComponent> {
  return {
    type: ComponentType.ActionRow,
    components: [{ type: ComponentType.Button, style: ButtonStyle.Secondary, emoji: { name: '🔄' }, custom_id: regenerateButtonId(button) }],
  };
}

/**
 * ◀ or ▶ under the newest reply: shows alternative `index` of the reply
 * (`chat:swipe:<conversationId>:<replyId>:<index>`, under 100 characters with two UUIDs).
 */
export interface SwipeButton {
  conversationId: string;
  /** The reply whose alternatives are swiped (the core message, not the Discord one). */
  replyId: string;
  index: number;
}

const swipePrefix = 'chat:swipe';

export function swipeButtonId(button: SwipeButton): string {
  return `${swipePrefix}:${button.conversationId}:${button.replyId}:${button.index}`;
}

export function parseSwipeButton(customId: string): SwipeButton | undefined {
  const [command, action, conversationId, replyId, index] = customId.split(':');
  if (`${command}:${action}` !== swipePrefix || !conversationId || !replyId || !index || !/^\d+$/.test(index)) return undefined;
  return { conversationId, replyId, index: Number(index) };
}

/** The stored reply a message shows: which alternative of how many. */
export interface ShownReply {
  id: string;
  conversationId: string;
  chosenIndex: number;
  count: number;
}

/** What the buttons show of a stored reply. */
export function shownReply(message: Pick<StoredMessage, 'id' | 'conversationId' | 'chosenIndex' | 'alternatives'>): ShownReply {
  return { id: message.id, conversationId: message.conversationId, chosenIndex: message.chosenIndex, count: message.alternatives.length };
}

/**
 * The buttons under a reply: with the stored reply, ◀ and ▶ to the other alternatives, its
 * place among them ("2/3", a disabled button, so the stored text never carries it), ▶ past the
 * last writing a new one (as 🔄 does), and 🔄; without one (the reply failed), 🔄 alone.
 * A greeting (`button` undefined: it answers no message) has its alternatives to swipe between
 * and nothing to write anew; with a single one, no buttons.
 */
export function replyRows(button: RegenerateButton | undefined, reply: ShownReply | undefined): APIActionRowComponent<APIButtonComponent>[] {
  const again = button && regenerateRow(button);
  if (!reply) return again ? [again] : [];
  if (!again && reply.count < 2) return [];
  const conversationId = button?.conversationId ?? reply.conversationId;
  const swipe = (index: number) => swipeButtonId({ conversationId, replyId: reply.id, index });
  const last = reply.chosenIndex >= reply.count - 1;
  const style = ButtonStyle.Secondary;
  // Past the last, ▶ asks for a new alternative: 🔄's action under an id of its own. A greeting's
  // ▶ stops at its last; its custom id names an index no other button does.
  const next: APIButtonComponent = button
    ? { type: ComponentType.Button, style, emoji: { name: '▶' }, custom_id: last ? `${regenerateButtonId(button)}:${nextSuffix}` : swipe(reply.chosenIndex + 1) }
    : { type: ComponentType.Button, style, emoji: { name: '▶' }, custom_id: swipe(last ? reply.count + 1 : reply.chosenIndex + 1), disabled: last };
  // Custom ids must differ within a message: ◀, disabled at the first, names an index no other button does.
  const components: APIButtonComponent[] = [
    { type: ComponentType.Button, style, emoji: { name: '◀' }, custom_id: swipe(reply.chosenIndex === 0 ? reply.count : reply.chosenIndex - 1), disabled: reply.chosenIndex === 0 },
    { type: ComponentType.Button, style, label: `${reply.chosenIndex + 1}/${reply.count}`, custom_id: swipe(reply.chosenIndex), disabled: true },
    next,
    ...(again ? again.components : []),
  ];
  return [{ type: ComponentType.ActionRow, components }];
}

/** Marks ▶ past the last alternative, which `parseRegenerateButton` reads as 🔄. */
const nextSuffix = 'next';

/** What a person reads at the end of a reply that did not end on its own. */
export function finishNote(finishReason: string | undefined): string {
  if (finishReason === 'length') return ' … *(cut off: reply limit)*';
  if (finishReason === 'content_filter') return ' … *(cut off by the engine’s content filter)*';
  return '';
}
