/**
 * The parts of the fake Discord that /imagine leans on, checked against the real discord.js
 * client: component validation as Discord does it, buttons that must exist to be pressed, and
 * interaction tokens that a test can expire early.
 */
import { ButtonStyle, ComponentType, DiscordAPIError, Events, type Client, type Interaction, type SendableChannels } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWithClient } from '../fake-discord/harness.js';

function handleNext<T>(client: Client, handler: (interaction: Interaction) => Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    client.once(Events.InteractionCreate, (interaction) => {
      handler(interaction).then(resolve, reject);
    });
  });
}

const button = (customId: string, extra: Record<string, unknown> = {}) => ({ type: ComponentType.Button, style: ButtonStyle.Secondary, custom_id: customId, label: 'Go', ...extra });
const row = (...components: unknown[]) => ({ type: ComponentType.ActionRow, components });

/** Discord's answer to a refused request, or undefined when it was accepted. */
async function refusal(send: () => Promise<unknown>): Promise<DiscordAPIError | undefined> {
  try {
    await send();
    return undefined;
  } catch (error) {
    if (error instanceof DiscordAPIError) return error;
    throw error;
  }
}

describe('fake Discord: components, buttons and token lifetime', () => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;
  let channel: SendableChannels;

  beforeAll(async () => {
    // Many sends to one channel: a roomier bucket than Discord's 5 per 5 s keeps the test quick.
    setup = await startWithClient({ rateLimits: { buckets: { 'message-create': { limit: 50, windowMs: 1000 } } } });
    const found = setup.client.channels.cache.get(setup.fake.guild.textChannelId);
    if (!found?.isSendable()) throw new Error('general is not sendable');
    channel = found;
  });
  afterAll(() => setup.stop());

  it('accepts five rows of five buttons and refuses what Discord refuses', async () => {
    const grid = Array.from({ length: 5 }, (_, rowIndex) => row(...Array.from({ length: 5 }, (_, index) => button(`b${rowIndex}-${index}`))));
    expect(await refusal(() => channel.send({ content: 'grid', components: grid as never }))).toBeUndefined();

    const sixRows = await refusal(() => channel.send({ components: [...grid, row(button('extra'))] as never }));
    expect(sixRows?.code).toBe(50035);
    expect(JSON.stringify(sixRows?.rawError)).toContain('Must be 5 or fewer in length.');

    const longId = await refusal(() => channel.send({ components: [row(button('x'.repeat(101)))] as never }));
    expect(longId?.code).toBe(50035);
    expect(JSON.stringify(longId?.rawError)).toContain('"custom_id":{"_errors":[{"code":"BASE_TYPE_BAD_LENGTH"');

    const sixButtons = await refusal(() => channel.send({ components: [row(...Array.from({ length: 6 }, (_, index) => button(`c${index}`)))] as never }));
    expect(JSON.stringify(sixButtons?.rawError)).toContain('Must be between 1 and 5 in length.');

    const duplicate = await refusal(() => channel.send({ components: [row(button('same'), button('same'))] as never }));
    expect(JSON.stringify(duplicate?.rawError)).toContain('COMPONENT_CUSTOM_ID_DUPLICATED');

    const linkWithId = await refusal(() => channel.send({ components: [row(button('x', { style: ButtonStyle.Link, url: 'https://example.com' }))] as never }));
    expect(JSON.stringify(linkWithId?.rawError)).toContain('BUTTON_COMPONENT_CUSTOM_ID_NOT_ALLOWED');
  });

  it('lets users press only buttons a message shows and that are enabled', async () => {
    const { fake, user } = setup;
    const posted = await channel.send({ content: 'Pick', components: [row(button('yes'), button('no', { disabled: true }))] as never });
    expect(() => fake.sendButton({ user, message: posted.id, customId: 'maybe' })).toThrow('has no component with custom id "maybe"');
    expect(() => fake.sendButton({ user, message: posted.id, customId: 'no' })).toThrow('is disabled');
    const handled = handleNext(setup.client, async (interaction) => {
      if (!interaction.isButton()) throw new Error('expected a button');
      await interaction.update({ content: 'Picked yes.' });
    });
    fake.sendButton({ user, message: posted.id, customId: 'yes' });
    await handled;
    expect(fake.message(posted.id)?.content).toBe('Picked yes.');
  });

  it('refuses a token a test expired early with 401 Invalid Webhook Token', async () => {
    const { fake, user, client } = setup;
    const handled = handleNext(client, async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('expected a chat-input command');
      await interaction.deferReply();
      return interaction;
    });
    const sent = fake.sendSlashCommand({ user, channelId: fake.guild.textChannelId, name: 'draw' });
    const interaction = await handled;
    await interaction.editReply('Working…');
    fake.expireInteractionToken(sent.interactionId);
    const refused = await refusal(() => interaction.editReply('Done.'));
    expect(refused?.status).toBe(401);
    expect(refused?.code).toBe(50027);
    expect(refused?.message).toBe('Invalid Webhook Token');
  });
});
