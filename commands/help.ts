import type { RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';

const data = {
  name: 'help',
  description: 'What this bot can do',
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

const text = [
  '**Likeness**: characters with a memory and a personality.',
  '• `/chat character:<name> [message] [private]`: opens a thread for a conversation (in DMs, switches your DM character). Everyone who writes in the thread talks with the character.',
  '• `/clear`: forgets the messages of this thread or DM conversation.',
  '• `/conversations`: your conversations, with links.',
  '• `/character show|edit|avatar|remember|memories|forget`: see and shape your character.',
  '• `/account`, `/balance`: your account and credits.',
  'Images you attach are shown to the character.',
].join('\n');

export default {
  data,
  ephemeral: true,
  async execute(interaction) {
    await answer(interaction, text);
  },
} satisfies Command;
