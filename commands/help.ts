import type { RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord.js';
import { type Command, answer } from '../src/bot/command.js';

const data = {
  name: 'help',
  description: 'What this bot can do',
} as const satisfies RESTPostAPIChatInputApplicationCommandsJSONBody;

const text = [
  '**Likeness**: characters with a memory and a personality.',
  '• `/chat character:<name> [message] [private]`: opens a thread for a conversation (in DMs, switches your DM character). Everyone who writes in the thread talks with the character.',
  '• `/scene add|remove|next character`: in a conversation thread, brings in more characters, lets one leave, or has one answer now. Start a message with a character’s name, or reply to its message, to talk to it.',
  '• `/channel characters add|remove|list`, `/channel listen on`: (server managers) characters that answer in a channel when called by name, mentioned with me, or replied to; listening keeps the other messages as context.',
  '• `/voice replies [on]`: the character answers your voice messages here with voice messages.',
  '• `/clear`: forgets the messages of this thread or DM conversation.',
  '• `/conversations`: your conversations, with links.',
  '• `/character show|edit|avatar|remember|memories|forget|voice`: see and shape your character.',
  '• `/imagine prompt [character] [negative] [width] [height] [samples] [seed] [guidance] [lora_scale]`: draws images; with a character, its trained face. Buttons re-roll with a new seed and rate each image.',
  '• `/character train-face photos [character] [photo2…photo10]`: trains a face model of your character from 5 to 30 photos (or a zip of them); I tell you here when it is ready, in about 10 minutes.',
  '• `/account`, `/balance`: your account and credits.',
  'Images you attach are shown to the character; voice messages and audio files are transcribed (when the server has a speech-to-text engine).',
].join('\n');

export default {
  data,
  ephemeral: true,
  async execute(interaction) {
    await answer(interaction, text);
  },
} satisfies Command;
