import { Hono } from 'hono';
import { z } from 'zod';
import type { HttpEnv, RouteDependencies } from '../context.js';
import { readJson, readQuery, uuidParam } from '../validation.js';

export const correctionBody = z.object({ text: z.string().trim().min(1).max(300) }).strict();
export const aboutMeQuery = z.object({ characterId: z.uuid().optional() });
export const learningBody = z
  .object({
    enabled: z.boolean().describe('false: nothing is learned from your messages, anywhere'),
    disabledCharacterIds: z.array(z.uuid()).max(1000).default([]).describe('Characters that learn nothing from you while enabled'),
  })
  .strict();
export const approvalBody = z.object({ text: z.string().trim().min(1).max(300).optional().describe('Your words instead of the proposal') }).strict();
export const proposedQuery = z.object({ all: z.enum(['true', 'false']).optional().describe('true: approved and rejected ones too') });
export const ownerLearningBody = z.object({ fromOwner: z.boolean().describe("Propose the owner's facts from their own conversations as the character's memories") }).strict();

/** What characters learned about the caller: theirs to see, correct, delete; learning on or off. */
export function memoryRoutes({ core, serializers }: RouteDependencies) {
  const app = new Hono<HttpEnv>();

  app.get('/about-me', async (context) => {
    const { characterId } = readQuery(context, aboutMeQuery);
    const memories = await core.learnedMemories.aboutMe(context.get('actor'), { characterId });
    return context.json({ success: true, memories: memories.map((memory) => serializers.learnedMemory(memory)) });
  });

  app.patch('/about-me/:memoryId', async (context) => {
    const body = await readJson(context, correctionBody);
    const memory = await core.learnedMemories.correct(context.get('actor'), uuidParam(context, 'memoryId'), body.text);
    return context.json({ success: true, memory: serializers.learnedMemory(memory) });
  });

  app.delete('/about-me/:memoryId', async (context) => {
    const deleted = await core.learnedMemories.forget(context.get('actor'), { memoryId: uuidParam(context, 'memoryId') });
    return context.json({ success: true, deleted });
  });

  app.delete('/about-me', async (context) => {
    const { characterId } = readQuery(context, aboutMeQuery);
    const deleted = await core.learnedMemories.forget(context.get('actor'), { characterId });
    return context.json({ success: true, deleted });
  });

  app.get('/learning', async (context) => {
    const choice = await core.learnedMemories.learningChoice(context.get('actor'));
    return context.json({ success: true, learning: { enabled: !choice.off, disabledCharacterIds: choice.offForCharacterIds } });
  });

  app.put('/learning', async (context) => {
    const body = await readJson(context, learningBody);
    const choice = await core.learnedMemories.setLearningChoice(context.get('actor'), { off: !body.enabled, offForCharacterIds: body.disabledCharacterIds });
    return context.json({ success: true, learning: { enabled: !choice.off, disabledCharacterIds: choice.offForCharacterIds } });
  });

  return app;
}

/** A character's own memories proposed from its owner's conversations, for the owner to review. */
export function proposedMemoryRoutes({ core, serializers }: RouteDependencies) {
  const app = new Hono<HttpEnv>();

  app.get('/:characterId/memories/proposed', async (context) => {
    const { all } = readQuery(context, proposedQuery);
    const memories = await core.learnedMemories.proposed(context.get('actor'), uuidParam(context, 'characterId'), all === 'true');
    return context.json({ success: true, memories: memories.map((memory) => serializers.learnedMemory(memory)) });
  });

  app.post('/:characterId/memories/proposed/:memoryId/approve', async (context) => {
    const body = await readJson(context, approvalBody);
    const memory = await core.learnedMemories.approve(context.get('actor'), uuidParam(context, 'characterId'), uuidParam(context, 'memoryId'), body.text);
    return context.json({ success: true, memory: serializers.learnedMemory(memory) });
  });

  app.post('/:characterId/memories/proposed/:memoryId/reject', async (context) => {
    await core.learnedMemories.reject(context.get('actor'), uuidParam(context, 'characterId'), uuidParam(context, 'memoryId'));
    return context.json({ success: true });
  });

  app.get('/:characterId/learning', async (context) => {
    const fromOwner = await core.learnedMemories.learnsFromOwner(context.get('actor'), uuidParam(context, 'characterId'));
    return context.json({ success: true, learning: { fromOwner } });
  });

  app.put('/:characterId/learning', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const body = await readJson(context, ownerLearningBody);
    await core.learnedMemories.setLearnsFromOwner(context.get('actor'), characterId, body.fromOwner);
    return context.json({ success: true, learning: { fromOwner: body.fromOwner } });
  });

  return app;
}
