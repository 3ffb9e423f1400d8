/**
 * `/memories`: what characters learned about you (with a delete button each, and one for
 * all), learning on or off for yourself, and for a character's owner, the review of the
 * memories proposed from their own conversations. Every answer is ephemeral: it is yours.
 */
import {
  type APIActionRowComponent,
  type APIButtonComponent,
  ApplicationCommandOptionType,
  ButtonStyle,
  ComponentType,
  type RESTPostAPIChatInputApplicationCommandsJSONBody,
} from 'discord.js';
import { type BotContext, type Command, answer } from '../src/bot/command.js';
import { resolveCharacter, suggestCharacters } from '../src/bot/characters.js';
import type { Actor } from '../src/core/actor.js';
import { AppError } from '../src/core/errors.js';
import type { LearnedMemoryRecord } from '../src/core/records.js';
import type { ReviewedMemory } from '../src/core/learning/learned-memories.js';

const { String: text, Subcommand: subcommand } = ApplicationCommandOptionType;

const data = {
  name: 'memories',
  description: 'What characters learned about you, and what your character learned from you',
  options: [
    {
      type: subcommand,
      name: 'about-me',
      description: 'What characters remember about you (only you see this)',
      options: [{ type: text, name: 'character', description: 'Only this character', autocomplete: true }],
    },
    {
      type: subcommand,
      name: 'learning',
      description: 'Let characters learn from what you tell them, or not',
      options: [
        { type: text, name: 'state', description: 'on or off', required: true, choices: [{ name: 'on', value: 'on' }, { name: 'off', value: 'off' }] },
        { type: text, name: 'character', description: 'Only for this character (all by default)', autocomplete: true },
      ],
    },
    {
      type: subcommand,
      name: 'review',
      description: 'Memories your character learned from you, waiting for your approval',
      options: [{ type: text, name: 'character', description: 'Which of your characters (yours by default)', autocomplete: true }],
    },
    {
      type: subcommand,
      name: 'used',
      description: "What the last reply here was written with, of what you may see",
    },
    {
      type: subcommand,
      name: 'approve',
      description: 'Approve a proposed memory in your own words',
      options: [
        { type: text, name: 'id', description: 'The memory (from /memories review)', required: true, min_length: 36, max_length: 36 },
        { type: text, name: 'text', description: 'What your character should remember instead', required: true, max_length: 300 },
      ],
    },
  ],
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

/** Discord allows five rows of five buttons; a list shows as many memories as it can give a button. */
const shownWithButtons = 20;

export default {
  data,
  ephemeral: true,
  async execute(interaction, context) {
    const { actor, account } = await context.accountOf(interaction.user);
    const characterOption = interaction.options.getString('character') ?? undefined;
    switch (interaction.options.getSubcommand()) {
      case 'about-me': {
        const character = characterOption === undefined ? undefined : await resolveCharacter(context.core, actor, characterOption);
        await answer(interaction, await aboutMe(context, actor, character?.id));
        return;
      }
      case 'learning': {
        const on = interaction.options.getString('state', true) === 'on';
        const learned = context.core.learnedMemories;
        const choice = await learned.learningChoice(actor);
        if (characterOption === undefined) {
          await learned.setLearningChoice(actor, { off: !on, offForCharacterIds: on ? [] : choice.offForCharacterIds });
          await answer(interaction, on ? '🧠 Characters learn what you tell them about yourself again.' : '🙈 Characters learn nothing more from your messages. What they learned stays until you delete it (/memories about-me).');
          return;
        }
        const character = await resolveCharacter(context.core, actor, characterOption);
        const others = choice.offForCharacterIds.filter((id) => id !== character.id);
        await learned.setLearningChoice(actor, { off: choice.off, offForCharacterIds: on ? others : [...others, character.id] });
        await answer(interaction, on ? `🧠 ${character.name} learns what you tell it again.` : `🙈 ${character.name} learns nothing more from your messages.`);
        return;
      }
      case 'review': {
        const character = await resolveCharacter(context.core, actor, characterOption ?? account.characterId);
        const proposed = await context.core.learnedMemories.proposed(actor, character.id);
        if (proposed.length === 0) {
          await answer(interaction, `Nothing from your conversations is waiting for ${character.name}'s memory.`);
          return;
        }
        const shown = proposed.slice(0, 10);
        const lines = shown.map(reviewLine);
        await answer(interaction, {
          content: [
            `**${character.name} learned this from you.** Approve what it may tell anyone, reject the rest; to change the words, \`/memories approve id text\`.`,
            ...lines,
            ...(proposed.length > shown.length ? [`…and ${proposed.length - shown.length} more after these.`] : []),
          ].join('\n'),
          components: reviewRows(character.id, shown),
        });
        return;
      }
      case 'used': {
        await answer(interaction, await usedHere(context, actor, account.characterId, interaction));
        return;
      }
      case 'approve': {
        const memoryId = interaction.options.getString('id', true);
        const memory = await proposal(context, memoryId);
        const approved = await context.core.learnedMemories.approve(actor, memory.characterId, memoryId, interaction.options.getString('text', true));
        await answer(interaction, `✅ Approved: ${approved.text}`);
        return;
      }
      default:
        throw new AppError('VALIDATION_FAILED', 'Unknown subcommand.');
    }
  },
  autocomplete: suggestCharacters,
  async button(interaction, context) {
    const { actor } = await context.accountOf(interaction.user);
    const [, action, first, second] = interaction.customId.split(':');
    const learned = context.core.learnedMemories;
    if (action === 'forget' && first) {
      await learned.forget(actor, { memoryId: first });
      await interaction.update(await aboutMe(context, actor, undefined, '🗑️ Deleted for good.'));
    } else if (action === 'forget-all') {
      const deleted = await learned.forget(actor, {});
      await interaction.update({ content: `🗑️ Deleted ${deleted} memor${deleted === 1 ? 'y' : 'ies'} about you, for good.`, components: [] });
    } else if ((action === 'approve' || action === 'reject') && first && second) {
      if (action === 'approve') await learned.approve(actor, first, second);
      else await learned.reject(actor, first, second);
      const rest = await learned.proposed(actor, first);
      const shown = rest.slice(0, 10);
      await interaction.update({
        content: [action === 'approve' ? '✅ Approved.' : '❌ Rejected: it will not be proposed again.', ...shown.map(reviewLine)].join('\n'),
        components: reviewRows(first, shown),
      });
    }
  },
} satisfies Command;

/** The list of what characters learned about the caller, with a delete button for each shown. */
async function aboutMe(context: BotContext, actor: Actor, characterId: string | undefined, heading?: string) {
  const memories = (await context.core.learnedMemories.aboutMe(actor, { characterId })).filter((memory) => memory.status === 'active');
  const choice = await context.core.learnedMemories.learningChoice(actor);
  const learning = choice.off ? 'Learning is **off** for you: `/memories learning on` to turn it on.' : 'Characters learn what you tell them about yourself: `/memories learning off` to stop it.';
  if (memories.length === 0) return { content: [heading, 'No character remembers anything about you.', learning].filter(Boolean).join('\n'), components: [] };
  const names = new Map<string, string>();
  for (const memory of memories) {
    if (!names.has(memory.characterId)) names.set(memory.characterId, (await context.core.characters.get(actor, memory.characterId).catch(() => undefined))?.name ?? 'a character');
  }
  const shown = memories.slice(0, shownWithButtons);
  const lines = shown.map((memory, index) => `${index + 1}. ${memory.text} — *${names.get(memory.characterId)}*`);
  return {
    content: [heading, '**What characters remember about you** (only you see this):', ...lines, ...(memories.length > shown.length ? [`…and ${memories.length - shown.length} more.`] : []), learning]
      .filter(Boolean)
      .join('\n'),
    // Four rows of delete buttons at most, and the fifth for deleting everything.
    components: [
      ...buttonRows(shown.map((memory, index) => ({ label: `🗑️ ${index + 1}`, customId: `memories:forget:${memory.id}`, style: ButtonStyle.Secondary }))),
      ...buttonRows([{ label: 'Delete all', customId: 'memories:forget-all', style: ButtonStyle.Danger }]),
    ],
  };
}

/** A proposal as the owner reviews it: a contradiction says what it replaces once approved. */
function reviewLine(memory: ReviewedMemory, index: number): string {
  const replacing = memory.replacing ? ` — *replaces “${memory.replacing.text}”*` : '';
  return `${index + 1}. ${memory.text}${replacing} \`${memory.id}\``;
}

function reviewRows(characterId: string, memories: readonly LearnedMemoryRecord[]) {
  return buttonRows(
    memories.slice(0, 10).flatMap((memory, index) => [
      { label: `✅ ${index + 1}`, customId: `memories:approve:${characterId}:${memory.id}`, style: ButtonStyle.Success },
      { label: `❌ ${index + 1}`, customId: `memories:reject:${characterId}:${memory.id}`, style: ButtonStyle.Secondary },
    ]),
  ).slice(0, 5);
}

/** Buttons five to a row, as Discord takes them. */
function buttonRows(buttons: Array<{ label: string; customId: string; style: ButtonStyle }>): APIActionRowComponent<APIButtonComponent>[] {
  const rows: APIActionRowComponent<APIButtonComponent>[] = [];
  for (let start = 0; start < buttons.length; start += 5) {
    rows.push({
      type: ComponentType.ActionRow,
      components: buttons.slice(start, start + 5).map((button) => ({ type: ComponentType.Button, style: button.style, label: button.label, custom_id: button.customId }) as APIButtonComponent),
    });
  }
  return rows;
}

/** The memories the newest reply of this channel's conversation (a thread, or your DMs) used, as far as the caller may read them. */
async function usedHere(context: BotContext, actor: Actor, ownCharacterId: string, interaction: { inGuild(): boolean; channelId: string; user: { id: string } }): Promise<string> {
  let conversationId: string | undefined;
  if (interaction.inGuild()) conversationId = (await context.places.of(interaction.channelId))?.conversationId;
  else conversationId = await context.links.dmConversation(interaction.user.id, (await context.links.dmCharacter(interaction.user.id)) ?? ownCharacterId);
  if (!conversationId) throw new AppError('VALIDATION_FAILED', 'Use /memories used in a conversation: a thread started with /chat, a character channel, or your DMs with a character.');
  const recent = await context.core.conversations.messages(conversationId, { newest: true, limit: 20 });
  const reply = [...recent].reverse().find((message) => message.participantType === 'character');
  if (!reply) return 'No reply here yet.';
  const used = await context.core.learnedMemories.usedBy(actor, conversationId, reply.id);
  if (used.length === 0) return 'The last reply here used no memory you may see.';
  const kinds = { person: 'about you', own: 'its own', written: 'written by its owner' } as const;
  return ['**The last reply here was written with:**', ...used.map((memory) => `- ${memory.text} *(${kinds[memory.kind]})*`)].join('\n');
}

/** The proposal a memory id names, for `/memories approve`. */
async function proposal(context: BotContext, memoryId: string): Promise<LearnedMemoryRecord> {
  const memory = await context.core.learnedMemories.proposal(memoryId);
  if (!memory) throw new AppError('NOT_FOUND', 'No proposed memory has that id: copy it from /memories review.');
  return memory;
}
