/**
 * The buttons under /imagine results. Each carries everything it needs in its custom id
 * (`imagine:<action>:<jobId>[:<output name>]`), so buttons on old messages keep working after
 * a restart without anything kept in memory. Job ids are UUIDs and output names are the
 * core's `image-N.png`, so an id stays far below Discord's 100 characters.
 */
export type ImageButton =
  | { action: 'reroll'; jobId: string }
  | { action: 'cancel'; jobId: string }
  | { action: 'like' | 'dislike'; jobId: string; output: string };

const prefix = 'imagine';
/** Discord's limit on a component's custom id. */
export const customIdLimit = 100;

export function imageButtonId(button: ImageButton): string {
  const parts = [prefix, button.action, button.jobId];
  if (button.action === 'like' || button.action === 'dislike') parts.push(button.output);
  return parts.join(':');
}

/** The button a custom id names, or undefined for one this version does not know. */
export function parseImageButton(customId: string): ImageButton | undefined {
  const [command, action, jobId, ...rest] = customId.split(':');
  if (command !== prefix || !jobId) return undefined;
  if (action === 'reroll' || action === 'cancel') return { action, jobId };
  const output = rest.join(':');
  if ((action === 'like' || action === 'dislike') && output) return { action, jobId, output };
  return undefined;
}
