import { Hono } from 'hono';
import type { HttpEnv, RouteDependencies } from '../context.js';
import {
  lorebookEntryFields,
  lorebookEntryInput,
  lorebookEntrySchema,
  lorebookSettingsChange,
  lorebookSettingsFields,
  lorebookSettingsSchema,
} from '../character-fields.js';
import { readJson, uuidParam } from '../validation.js';

export const entryBody = lorebookEntrySchema;
export const settingsBody = lorebookSettingsSchema;

/** A character's lorebook: read by whoever may see the character, changed by its owner. */
export function lorebookRoutes({ core }: RouteDependencies) {
  const app = new Hono<HttpEnv>();

  app.get('/:characterId/lorebook', async (context) => {
    const lorebook = await core.lorebooks.get(context.get('actor'), uuidParam(context, 'characterId'));
    return context.json({ success: true, settings: lorebookSettingsFields(lorebook.settings), entries: lorebook.entries.map(lorebookEntryFields) });
  });

  app.patch('/:characterId/lorebook', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const body = await readJson(context, settingsBody);
    const settings = await core.lorebooks.setSettings(context.get('actor'), characterId, lorebookSettingsChange(body));
    return context.json({ success: true, settings: lorebookSettingsFields(settings) });
  });

  app.post('/:characterId/lorebook/entries', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const body = await readJson(context, entryBody);
    const entry = await core.lorebooks.addEntry(context.get('actor'), characterId, lorebookEntryInput(body));
    return context.json({ success: true, entry: lorebookEntryFields(entry) }, 201);
  });

  app.patch('/:characterId/lorebook/entries/:entryId', async (context) => {
    const characterId = uuidParam(context, 'characterId');
    const body = await readJson(context, entryBody);
    const entry = await core.lorebooks.updateEntry(context.get('actor'), characterId, uuidParam(context, 'entryId'), lorebookEntryInput(body));
    return context.json({ success: true, entry: lorebookEntryFields(entry) });
  });

  app.delete('/:characterId/lorebook/entries/:entryId', async (context) => {
    await core.lorebooks.removeEntry(context.get('actor'), uuidParam(context, 'characterId'), uuidParam(context, 'entryId'));
    return context.json({ success: true });
  });

  return app;
}
