import { type APIActionRowComponent, type APIButtonComponent, ButtonStyle, ComponentType } from 'discord.js';

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

/** What a person reads at the end of a reply that did not end on its own. */
export function finishNote(finishReason: string | undefined): string {
  if (finishReason === 'length') return ' … *(cut off: reply limit)*';
  if (finishReason === 'content_filter') return ' … *(cut off by the engine’s content filter)*';
  return '';
}
