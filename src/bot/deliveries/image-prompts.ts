import type { Actor } from '../../core/actor.js';
import type { Core } from '../../core/core.js';
import type { ImagePayload } from '../../core/ports.js';
import type { JobRecord } from '../../core/records.js';

function escapeRegExp(text: string): string {
  return text.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Puts `insert` (the core's `<character-id>` reference, or the name for display) where the
 * prompt names the character, so "Alice riding a horse" draws Alice's face on the rider; a
 * prompt that does not name the character gets it in front.
 */
export function promptWithCharacter(prompt: string, characterName: string, insert: string): string {
  const trimmed = prompt.trim();
  const name = characterName.trim();
  if (name) {
    const named = new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(name)}(?![\\p{L}\\p{N}])`, 'iu');
    if (named.test(trimmed)) return trimmed.replace(named, () => insert);
  }
  return `${insert}, ${trimmed}`;
}

/**
 * A job's prompt as people read it: the face model's trigger token (e.g. `<s0><s1>`) shown as
 * the character's name. Falls back to the prompt as the engine got it.
 */
export async function describeImageJob(core: Core, actor: Actor, job: JobRecord): Promise<string> {
  const prompt = (job.payload as ImagePayload).prompt;
  if (!job.faceModel) return prompt;
  try {
    const { characterId, id } = job.faceModel;
    const [character, models] = await Promise.all([core.characters.get(actor, characterId), core.characters.faceModels(actor, characterId)]);
    const token = models.find((model) => model.id === id)?.triggerToken;
    return token ? prompt.split(token).join(character.name) : prompt;
  } catch {
    return prompt;
  }
}
