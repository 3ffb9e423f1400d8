import {
  ApplicationCommandOptionType,
  type ButtonInteraction,
  ChannelType,
  type ChatInputCommandInteraction,
  MessageFlags,
  PermissionFlagsBits,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
  ThreadAutoArchiveDuration,
} from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';
import { characterCard, resolveCharacter, suggestCharacters } from '../src/bot/characters.js';
import { explainError } from '../src/bot/explain-error.js';
import { followSpeaker } from '../src/bot/voice/follow-speaker.js';
import { type ReplyMessages, inPlaceChannel, labelOf, shownAlternative } from '../src/bot/replies/in-place-reply.js';
import { discordMessageLimit } from '../src/bot/replies/split-message.js';
import { type SwipeButton, parseRegenerateButton, parseSwipeButton } from '../src/bot/replies/reply-buttons.js';
import { replyChannelOf } from '../src/bot/replies/reply-channel.js';
import { AppError } from '../src/core/errors.js';

const data = {
  name: 'chat',
  description: 'Start a conversation with a character (in a new thread, or in DMs)',
  options: [
    { type: ApplicationCommandOptionType.String, name: 'character', description: 'Who to talk to', required: true, autocomplete: true },
    { type: ApplicationCommandOptionType.String, name: 'message', description: 'Your first message', max_length: 4000 },
    { type: ApplicationCommandOptionType.Boolean, name: 'private', description: 'Open a private thread only you (and who you add) can see' },
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

const threadPermissions = {
  ViewChannel: PermissionFlagsBits.ViewChannel,
  SendMessagesInThreads: PermissionFlagsBits.SendMessagesInThreads,
  EmbedLinks: PermissionFlagsBits.EmbedLinks,
  AttachFiles: PermissionFlagsBits.AttachFiles,
};

export default {
  data,
  ephemeral: true,
  // Opening a thread and sending the first message take longer than Discord waits.
  defer: 'at-once',
  autocomplete: suggestCharacters,
  async execute(interaction, context) {
    const { actor, account } = await context.accountOf(interaction.user);
    const character = await resolveCharacter(context.core, actor, interaction.options.getString('character', true));
    const first = interaction.options.getString('message');
    if (!interaction.inGuild()) {
      await context.links.chooseDmCharacter(interaction.user.id, character.id);
      await answer(interaction, `You are now talking with **${character.name}** here. Just write.`);
      if (first && interaction.channel) {
        await sendFirst(context, interaction, account.id, character.id, first);
      }
      return;
    }
    const channel = interaction.channel;
    if (!channel || channel.type !== ChannelType.GuildText) {
      throw new AppError('VALIDATION_FAILED', 'Use /chat in a text channel; I open a thread there for the conversation.');
    }
    const isPrivate = interaction.options.getBoolean('private') ?? false;
    const needed = { ...threadPermissions, [isPrivate ? 'CreatePrivateThreads' : 'CreatePublicThreads']: isPrivate ? PermissionFlagsBits.CreatePrivateThreads : PermissionFlagsBits.CreatePublicThreads };
    const missing = Object.entries(needed).filter(([, bit]) => !interaction.appPermissions.has(bit)).map(([name]) => name);
    if (missing.length > 0) {
      throw new AppError('FORBIDDEN', `I need the ${missing.join(', ')} permission${missing.length > 1 ? 's' : ''} in <#${channel.id}> to start a conversation there.`);
    }
    const conversation = await context.core.conversations.create(actor, account.id, character.id);
    const thread = await channel.threads.create({
      name: `${character.name} · ${interaction.user.displayName}`.slice(0, 100),
      type: isPrivate ? ChannelType.PrivateThread : ChannelType.PublicThread,
      autoArchiveDuration: ThreadAutoArchiveDuration.OneWeek,
      reason: `Conversation ${conversation.id}`,
    });
    await context.links.link({ conversationId: conversation.id, channelId: thread.id, guildId: interaction.guildId });
    if (isPrivate) await thread.members.add(interaction.user.id);
    await thread.send({ ...(await characterCard(context.core, character)), allowedMentions: { parse: [] } });
    // The character opens the thread with its greeting, as itself, before anyone writes.
    if (conversation.greeting) await context.runner.greet(conversation.id, conversation.greeting, context.replies.channelFor(thread, character));
    await answer(interaction, `Your conversation with **${character.name}** is in <#${thread.id}>.`);
    if (first) {
      await context.runner.answer(actor, conversation.id, [{ text: first }], context.replies.channelFor(thread, character));
    }
  },
  /**
   * Under the newest reply: ◀ ▶ show another of its alternatives; 🔄, and ▶ past the last, write
   * a new one into the same messages (a failed reply's 🔄 too), all of those the reply took. No
   * new message is posted.
   */
  async button(interaction, context) {
    const swipe = parseSwipeButton(interaction.customId);
    const button = swipe ?? parseRegenerateButton(interaction.customId);
    if (!button) throw new AppError('NOT_FOUND', 'This button comes from an older version of the bot and no longer works.');
    const { actor } = await context.accountOf(interaction.user);
    try {
      await context.core.conversations.get(actor, button.conversationId);
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') {
        throw new AppError('FORBIDDEN', 'Only people taking part in this conversation can ask for a new reply.');
      }
      throw error;
    }
    if (!interaction.channel) throw new AppError('NOT_FOUND', 'This conversation’s channel is gone.');
    const messages = await replyMessages(interaction, context);
    if (swipe) return showAlternative(interaction, context, swipe, messages);
    const regenerate = parseRegenerateButton(interaction.customId)!;
    // The new reply comes from the character who wrote the one under the button (its persona in a
    // server), as the core decides: the writer of the reply it rewrites.
    const target = { messageId: regenerate.messageId, characterId: await context.channels.characterOfMessage(interaction.message.id) };
    const writer = await context.core.chat.regenerationWriter(actor, regenerate.conversationId, target);
    const channel = inPlaceChannel(interaction, await context.replies.channelForConversation(interaction.channel, regenerate.conversationId, writer.id), messages);
    const onSentence = interaction.inGuild() && interaction.guild ? await followSpeaker(context, interaction.guild, interaction.channelId, writer) : undefined;
    await interaction.deferUpdate();
    // The reply under the button is being written again: its buttons go until the new one ends.
    await interaction.editReply({ components: [] });
    try {
      await context.runner.regenerate(actor, regenerate.conversationId, target, channel, { onSentence });
    } catch (error) {
      // Acknowledged as an update already: a failure is told privately, not written over the reply.
      await interaction.followUp({ content: explainError(error), flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
    }
  },
} satisfies Command;

/** The Discord messages of the reply under the button, in order, and how to edit those before it. */
async function replyMessages(interaction: ButtonInteraction, context: Parameters<Command['execute']>[1]): Promise<ReplyMessages> {
  const channel = interaction.channel!;
  return {
    ids: await context.channels.replyMessages(interaction.message.id),
    edit: (messageId, content) => context.replies.editPosted(channel, messageId, content),
  };
}

/**
 * ◀ or ▶ to an alternative the reply already has: the core chooses it (only on the newest reply;
 * a refusal is answered privately by the router), then the reply's messages show it: the one
 * under the buttons in the interaction's update, the others edited after it.
 */
async function showAlternative(interaction: ButtonInteraction, context: Parameters<Command['execute']>[1], button: SwipeButton, messages: ReplyMessages): Promise<void> {
  const { actor } = await context.accountOf(interaction.user);
  const chosen = await context.core.conversations.chooseAlternative(actor, button.conversationId, button.replyId, button.index);
  // 🔄 names the message the reply answers: the one just before it, as when it was written; a
  // greeting that opened the conversation answers none.
  const [answered] = await context.core.conversations.messages(button.conversationId, { beforePosition: chosen.position, newest: true, limit: 1 });
  const label = labelOf(interaction.message);
  const { parts, components } = shownAlternative(chosen, answered?.id, discordMessageLimit - label.length, messages.ids.length);
  await interaction.update({ content: label + parts.at(-1)!, components, allowedMentions: { parse: [] } });
  for (const [index, messageId] of messages.ids.slice(0, -1).entries()) {
    await messages.edit(messageId, parts[index]!).catch((error: unknown) => context.logger.warn({ err: error, messageId }, 'could not show a swiped alternative in a part of its reply'));
  }
}

/** Answers the first message given with /chat in a DM, where the character writes back. */
async function sendFirst(
  context: Parameters<Command['execute']>[1],
  interaction: ChatInputCommandInteraction,
  accountId: string,
  characterId: string,
  text: string,
): Promise<void> {
  const { actor } = await context.accountOf(interaction.user);
  const channel = interaction.channel ?? (await interaction.user.createDM());
  let conversationId = await context.links.dmConversation(interaction.user.id, characterId);
  if (!conversationId) {
    const conversation = await context.core.conversations.create(actor, accountId, characterId);
    conversationId = conversation.id;
    await context.links.setDmConversation(interaction.user.id, characterId, conversationId);
    if (conversation.greeting) await context.runner.greet(conversationId, conversation.greeting, replyChannelOf(channel));
  }
  await context.runner.answer(actor, conversationId, [{ text }], replyChannelOf(channel));
}
