import { Hono } from 'hono';
import { z } from 'zod';
import { characterLimits } from '../../core/characters.js';
import { AppError, ValidationError } from '../../core/errors.js';
import { memoryLimits } from '../../core/memories.js';
import type { UploadedFile } from '../../core/images/face-photos.js';
import type { HttpEnv, RouteDependencies } from '../context.js';
import { accountInScope } from '../account-scope.js';
import { definitionChange, definitionSchema } from '../character-fields.js';
import { attachmentDisposition, cardFormats, characterOfCard, exportCard, importCardLimits } from '../../cards/character-cards.js';
import { cardThread } from '../../cards/card-thread.js';
import { pageQuery, readJson, readQuery, uuidParam } from '../validation.js';

const characterFields = {
  name: z.string().trim().min(1).max(characterLimits.name),
  description: z.string().max(characterLimits.description),
  personality_summary: z.string().max(characterLimits.personalitySummary),
  is_public: z.boolean(),
  ...definitionSchema,
};

export const changeBody = z.object(characterFields).partial().strict();

export const createBody = z
  .object(characterFields)
  .partial()
  .required({ name: true })
  .extend({ accountId: z.uuid().optional().describe('With the admin key: whose character it is') })
  .strict();

export const listQuery = pageQuery.extend({
  query: z.string().trim().max(characterLimits.name).optional().describe('Also list public characters of others whose name starts with it'),
  cursor: z.string().max(1000).optional(),
  accountId: z.uuid().optional(),
});

export { importBody } from '../card-import-body.js';

export const cardQuery = z.object({ format: z.enum(cardFormats).default('png') });

/** What a request changes of a character, from the body's snake_case fields. */
function characterChange(body: z.infer<typeof changeBody>) {
  return {
    name: body.name,
    description: body.description,
    personalitySummary: body.personality_summary,
    isPublic: body.is_public,
    definition: definitionChange(body),
  };
}

export const memoryBody = z.object({ text: z.string().trim().min(1).max(memoryLimits.text) });

export const speakBody = z.object({ text: z.string() });
export const presetBody = z.object({ voiceId: z.string().trim().min(1).max(200) }).strict();

/** The spec's section 4.3 (speech comes with the speech engines), plus edits, avatar and memories. */
export function characterRoutes({ core, serializers, signer }: RouteDependencies) {
  const app = new Hono<HttpEnv>();

  app.post('/', async (context) => {
    const actor = context.get('actor');
    const body = await readJson(context, createBody);
    const accountId = accountInScope(actor, body.accountId, 'accountId');
    const character = await core.characters.create(actor, accountId, { ...characterChange(body), name: body.name });
    context.header('Location', `/api/v0/characters/${character.id}`);
    return context.json({ success: true, character: serializers.character(character) }, 201);
  });

  app.post('/import', async (context) => {
    const actor = context.get('actor');
    // The body (its JSON, its base64, the card it carries) is read in the card thread, off the event loop.
    const { fields, card } = await cardThread.readImportBody(new Uint8Array(await context.req.arrayBuffer()), importCardLimits);
    const accountId = accountInScope(actor, fields.accountId, 'accountId');
    const character = await characterOfCard(core, actor, accountId, card, { isPublic: fields.is_public });
    context.header('Location', `/api/v0/characters/${character.id}`);
    return context.json({ success: true, character: serializers.character(character) }, 201);
  });

  app.get('/:characterId/card', async (context) => {
    const { format } = readQuery(context, cardQuery);
    const card = await exportCard(core, context.get('actor'), uuidParam(context, 'characterId'), format);
    return context.body(new Uint8Array(card.bytes), 200, {
      'Content-Type': card.mimeType,
      'Content-Disposition': attachmentDisposition(card.filename),
    });
  });

  app.get('/', async (context) => {
    const actor = context.get('actor');
    const query = readQuery(context, listQuery);
    const accountId = accountInScope(actor, query.accountId, 'query.accountId');
    const page = await core.characters.list(actor, accountId, query);
    return context.json({
      success: true,
      characters: page.characters.map((character) => serializers.character(character)),
      ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
    });
  });

  app.delete('/:characterId', async (context) => {
    await core.characters.delete(context.get('actor'), uuidParam(context, 'characterId'));
    return context.json({ success: true });
  });

  app.get('/:characterId', async (context) => {
    const character = await core.characters.get(context.get('actor'), uuidParam(context, 'characterId'));
    return context.json(serializers.character(character));
  });

  app.patch('/:characterId', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const body = await readJson(context, changeBody);
    const character = await core.characters.update(context.get('actor'), characterId, characterChange(body));
    return context.json(serializers.character(character));
  });

  // The image is the raw body (Content-Type image/png, image/jpeg or image/webp) or the
  // `avatar` (or `file`) part of a multipart form.
  app.put('/:characterId/avatar', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const contentType = context.req.header('content-type') ?? '';
    let bytes: Uint8Array;
    if (contentType.startsWith('multipart/form-data')) {
      const form = await context.req.parseBody();
      const part = form.avatar ?? form.file;
      if (!(part instanceof File)) throw ValidationError.field('avatar', 'send the image as a form part named "avatar"');
      bytes = new Uint8Array(await part.arrayBuffer());
    } else {
      bytes = new Uint8Array(await context.req.arrayBuffer());
    }
    const character = await core.characters.setAvatar(context.get('actor'), characterId, bytes);
    return context.json(serializers.character(character));
  });

  app.post('/:characterId/speak', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const body = await readJson(context, speakBody);
    const file = await requireSpeech(core).speak(context.get('actor'), characterId, body.text);
    return context.json({ success: true, url: signer.sign(file.key) });
  });

  // A preset as JSON `{"voiceId"}`, or samples to clone as multipart parts `samples` (and `name`).
  app.post('/:characterId/voice', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const speech = requireSpeech(core);
    const contentType = context.req.header('content-type') ?? '';
    let character;
    if (contentType.startsWith('multipart/form-data')) {
      const form = await context.req.parseBody({ all: true });
      const parts = [form.samples ?? form['samples[]'] ?? []].flat().filter((part): part is File => part instanceof File);
      const samples = await Promise.all(
        parts.map(async (part) => ({ filename: part.name, mimeType: part.type || 'application/octet-stream', data: new Uint8Array(await part.arrayBuffer()) })),
      );
      const name = typeof form.name === 'string' ? form.name : undefined;
      character = await speech.train(context.get('actor'), characterId, { samples, ...(name ? { name } : {}) });
    } else {
      character = await speech.train(context.get('actor'), characterId, await readJson(context, presetBody));
    }
    return context.json(serializers.character(character));
  });

  // Face photos as multipart parts `photos` (repeated; each a PNG, JPEG, WebP or a zip of them),
  // or one zip as the raw body (Content-Type application/zip).
  app.post('/:characterId/images/models', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const contentType = context.req.header('content-type') ?? '';
    let uploads: UploadedFile[];
    if (contentType.startsWith('multipart/form-data')) {
      const form = await context.req.parseBody({ all: true });
      const parts = Object.values(form).flat().filter((part): part is File => part instanceof File);
      uploads = await Promise.all(parts.map(async (part) => ({ filename: part.name || 'photo', data: new Uint8Array(await part.arrayBuffer()) })));
    } else if (contentType.startsWith('application/zip')) {
      uploads = [{ filename: 'photos.zip', data: new Uint8Array(await context.req.arrayBuffer()) }];
    } else {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send the face photos as multipart/form-data parts named "photos", or one zip as application/zip.');
    }
    const { model, job, transaction } = await core.images.trainFace(context.get('actor'), characterId, uploads);
    return context.json({ success: true, model: serializers.faceModel(model), jobId: job.id, transactionId: transaction.id }, 201);
  });

  app.get('/:characterId/images/models', async (context) => {
    const models = await core.characters.faceModels(context.get('actor'), uuidParam(context, 'characterId'));
    return context.json({ success: true, models: models.map((model) => serializers.faceModel(model)) });
  });

  app.get('/:characterId/memories', async (context) => {
    const memories = await core.memories.list(context.get('actor'), uuidParam(context, 'characterId'));
    return context.json({ success: true, memories: memories.map((memory) => serializers.memory(memory)) });
  });

  app.post('/:characterId/memories', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const body = await readJson(context, memoryBody);
    const memory = await core.memories.add(context.get('actor'), characterId, body.text);
    return context.json({ success: true, memory: serializers.memory(memory) }, 201);
  });

  app.delete('/:characterId/memories/:memoryId', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    await core.memories.remove(context.get('actor'), characterId, uuidParam(context, 'memoryId'));
    return context.json({ success: true });
  });

  return app;
}

function requireSpeech(core: RouteDependencies['core']) {
  if (!core.speech) throw new AppError('NOT_CONFIGURED', 'No speech engine is configured; set TTS_ENGINE.');
  return core.speech;
}
