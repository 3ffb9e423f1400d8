import { Hono } from 'hono';
import { z } from 'zod';
import { accountInScope } from '../account-scope.js';
import { lorebookEntryFields } from '../character-fields.js';
import { rateLimit } from '../auth.js';
import type { HttpEnv, RouteDependencies } from '../context.js';
import { callerLeaving, streamReply } from '../stream-reply.js';
import type { ChatInput } from '../../core/chat.js';
import { ValidationError } from '../../core/errors.js';
import { decodeBase64, pageQuery, readJson, readQuery, refuseLongerThan, uuid, uuidParam } from '../validation.js';

export const createBody = z.object({
  characterId: uuid,
  /** Only for the admin key: the account the conversation is for. */
  accountId: uuid.optional(),
});

export const chatBody = z.object({
  data: z.string(),
  mimeType: z.string().max(100).optional(),
  allow: z.array(z.string().max(100)).max(20).optional(),
  characterId: uuid.optional().describe("Who answers: one of the conversation's characters; default the one it is with"),
});

export const listQuery = pageQuery.extend({ accountId: uuid.optional() });

export const invitationsQuery = z.object({ accountId: uuid.optional() });

export const regenerateBody = z.object({ allow: chatBody.shape.allow });

export const swipeBody = z.object({
  index: z.number().int().min(0).describe("Which of the message's `swipes` the conversation goes on from, from 0"),
});

export const speakerBody = z.union([
  z.object({ accountId: uuid }).strict().describe('Yourself, accepting an invitation; another account, invited (it joins once it accepts)'),
  z.object({ characterId: uuid }).strict().describe('A character (own or public) joining the scene'),
]);

/**
 * The spec's chat body as the core takes it: text as is, an image or a recording (`audio/…`,
 * a voice message) decoded from base64, but only after its length shows it within the core's
 * limit, so an oversized body is never decoded.
 */
export function chatInput(body: z.output<typeof chatBody>, limits: { maxImageBytes: number; maxAudioBytes: number }): ChatInput {
  const allow = body.allow === undefined ? {} : { allow: body.allow };
  const mimeType = body.mimeType ?? 'text/plain';
  if (mimeType === 'text/plain') return { text: body.data, ...allow };
  if (mimeType.startsWith('audio/')) {
    refuseLongerThan(body.data, limits.maxAudioBytes, 'recording');
    return { audio: decodeBase64('data', body.data, `a ${mimeType} recording`), mimeType, ...allow };
  }
  if (mimeType.startsWith('image/')) {
    refuseLongerThan(body.data, limits.maxImageBytes, 'image');
    return { image: decodeBase64('data', body.data, `a ${mimeType} image`), mimeType, ...allow };
  }
  throw ValidationError.field('mimeType', 'must be text/plain, an image type (image/png, image/jpeg, image/webp) or an audio type (audio/ogg, audio/mpeg, …)');
}


/** The spec's section 4.1. */
export function conversationRoutes(dependencies: RouteDependencies) {
  const { core, serializers } = dependencies;
  const app = new Hono<HttpEnv>();
  const limit = rateLimit(dependencies.rateLimits.limiter('api-chat', dependencies.rateLimitPerMinute), dependencies.rateLimitPerMinute);

  app.post('/', async (context) => {
    const body = await readJson(context, createBody);
    const actor = context.get('actor');
    const accountId = accountInScope(actor, body.accountId, 'accountId');
    const conversation = await core.conversations.create(actor, accountId, body.characterId);
    return context.json({ success: true, id: conversation.id }, 201);
  });

  app.get('/', async (context) => {
    const actor = context.get('actor');
    const query = readQuery(context, listQuery);
    const accountId = accountInScope(actor, query.accountId, 'query.accountId');
    const page = await core.conversations.listFor(actor, accountId, { limit: query.limit, cursor: query.cursor });
    const views = await Promise.all(page.conversations.map((conversation) => core.conversations.view(conversation)));
    return context.json({ success: true, conversations: views.map((view) => serializers.conversation(view)), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
  });

  // Before `/:conversationId`: the invitations waiting for the caller (the admin names whose).
  app.get('/invitations', async (context) => {
    const actor = context.get('actor');
    const accountId = accountInScope(actor, readQuery(context, invitationsQuery).accountId, 'query.accountId');
    const invitations = await core.speakers.invitations(actor, accountId);
    return context.json({ success: true, invitations: invitations.map((invitation) => serializers.invitation(invitation)) });
  });

  app.get('/:conversationId', async (context) => {
    const read = await core.conversations.read(context.get('actor'), uuidParam(context, 'conversationId'));
    const body = serializers.conversationReadBody(read);
    return context.body(body, 200, { 'Content-Type': 'application/json' });
  });

  app.post('/:conversationId/chat', limit, async (context) => {
    const conversationId = uuidParam(context, 'conversationId');
    const body = await readJson(context, chatBody);
    const answer = await core.answers.answer(context.get('actor'), conversationId, chatInput(body, core.chat.inputLimits), { characterId: body.characterId, signal: callerLeaving(context) });
    return context.json(serializers.syncAnswer(answer));
  });

  app.post('/:conversationId/chat/stream', limit, async (context) => {
    const conversationId = uuidParam(context, 'conversationId');
    const body = await readJson(context, chatBody);
    const reply = await core.answers.stream(context.get('actor'), conversationId, chatInput(body, core.chat.inputLimits), { characterId: body.characterId, signal: callerLeaving(context) });
    return streamReply(context, reply, dependencies.logger);
  });

  // Answers the last message again: a new alternative of the newest reply, the message not stored twice.
  app.post('/:conversationId/regenerate', limit, async (context) => {
    const conversationId = uuidParam(context, 'conversationId');
    const body = await readJson(context, regenerateBody);
    return context.json(serializers.syncAnswer(await core.answers.regenerate(context.get('actor'), conversationId, body.allow, callerLeaving(context))));
  });

  app.post('/:conversationId/regenerate/stream', limit, async (context) => {
    const conversationId = uuidParam(context, 'conversationId');
    const body = await readJson(context, regenerateBody);
    const reply = await core.answers.regenerateStream(context.get('actor'), conversationId, body.allow, callerLeaving(context));
    return streamReply(context, reply, dependencies.logger);
  });

  // Chooses which alternative of the newest reply the conversation goes on from.
  app.post('/:conversationId/messages/:messageId/swipe', async (context) => {
    const body = await readJson(context, swipeBody);
    const message = await core.conversations.chooseAlternative(context.get('actor'), uuidParam(context, 'conversationId'), uuidParam(context, 'messageId'), body.index);
    return context.json({ success: true, message: serializers.message(message) });
  });

  // The memories a reply was written with, as far as the caller may read them.
  app.get('/:conversationId/messages/:messageId/memories', async (context) => {
    const memories = await core.learnedMemories.usedBy(context.get('actor'), uuidParam(context, 'conversationId'), uuidParam(context, 'messageId'));
    return context.json({ success: true, memories });
  });

  // The lorebook entries a reply was written with: for the character's owner.
  app.get('/:conversationId/messages/:messageId/lorebook', async (context) => {
    const entries = await core.lorebookUse.usedBy(context.get('actor'), uuidParam(context, 'conversationId'), uuidParam(context, 'messageId'));
    return context.json({ success: true, entries: entries.map(lorebookEntryFields) });
  });

  app.post('/:conversationId/speakers', async (context) => {
    const conversationId = uuidParam(context, 'conversationId');
    const body = await readJson(context, speakerBody);
    const actor = context.get('actor');
    if ('characterId' in body) {
      const conversation = await core.conversations.addCharacter(actor, conversationId, body.characterId);
      return context.json({ success: true, conversation: serializers.conversation(await core.conversations.view(conversation)) });
    }
    // Nobody is added by another: another account is invited, and joins once it accepts.
    const added = await core.speakers.add(actor, conversationId, body.accountId);
    if ('invited' in added) return context.json({ success: true, invitation: serializers.invitation(added.invited) }, 202);
    return context.json({ success: true, conversation: serializers.conversation(await core.conversations.view(added.joined)) });
  });

  // A person leaving (or taken out by the opener), or a character taken out of the scene; their lines stay.
  app.delete('/:conversationId/speakers/:speakerId', async (context) => {
    const conversationId = uuidParam(context, 'conversationId');
    const conversation = await core.speakers.removeParticipant(context.get('actor'), conversationId, uuidParam(context, 'speakerId'));
    return context.json({ success: true, conversation: serializers.conversation(await core.conversations.view(conversation)) });
  });

  // The invited person declines, or a speaker withdraws the invitation.
  app.delete('/:conversationId/invitations/:accountId', async (context) => {
    await core.speakers.uninvite(context.get('actor'), uuidParam(context, 'conversationId'), uuidParam(context, 'accountId'));
    return context.json({ success: true });
  });

  app.post('/:conversationId/clear', async (context) => {
    await core.conversations.clear(context.get('actor'), uuidParam(context, 'conversationId'));
    return context.json({ success: 'true' });
  });

  return app;
}
