/**
 * Message components as Discord checks them when a message is sent or edited: action rows at
 * the top level (at most 5), each holding 1 to 5 buttons or exactly one select menu; custom ids
 * of 1 to 100 characters, unique within the message; link buttons with a `url` and no custom
 * id; labels of at most 80 characters. A bot whose buttons production would refuse (a custom id
 * that grew past 100 characters, a sixth row) is refused here too, with Discord's 50035 body.
 * Components V2 layouts (flag IS_COMPONENTS_V2) are not modelled.
 */
import { ButtonStyle, ComponentType } from 'discord-api-types/v10';
import { tooLong, type FieldProblem } from './errors.js';

export const COMPONENT_LIMITS = { rows: 5, buttonsPerRow: 5, customIdLength: 100, labelLength: 80 } as const;

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

const selectTypes: ReadonlySet<number> = new Set([
  ComponentType.StringSelect,
  ComponentType.UserSelect,
  ComponentType.RoleSelect,
  ComponentType.MentionableSelect,
  ComponentType.ChannelSelect,
]);

const badLength = (path: Array<string | number>, minimum: number, maximum: number): FieldProblem => ({
  path,
  code: 'BASE_TYPE_BAD_LENGTH',
  message: `Must be between ${minimum} and ${maximum} in length.`,
});

/** Everything wrong with a message's `components`, as Discord's field errors. */
export function componentProblems(components: unknown[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (components.length > COMPONENT_LIMITS.rows) problems.push(tooLong(['components'], COMPONENT_LIMITS.rows));
  const seen = new Set<string>();
  components.forEach((row, rowIndex) => {
    const rowPath = ['components', rowIndex];
    if (!isObject(row) || row['type'] !== ComponentType.ActionRow) {
      problems.push({ path: [...rowPath, 'type'], code: 'UNION_TYPE_CHOICES', message: 'Value of field "type" must be one of (1,).' });
      return;
    }
    const children = Array.isArray(row['components']) ? row['components'] : [];
    if (children.length < 1 || children.length > COMPONENT_LIMITS.buttonsPerRow) {
      problems.push(badLength([...rowPath, 'components'], 1, COMPONENT_LIMITS.buttonsPerRow));
    }
    const hasSelect = children.some((child) => isObject(child) && selectTypes.has(Number(child['type'])));
    if (hasSelect && children.length > 1) {
      problems.push({ path: [...rowPath, 'components'], code: 'COMPONENT_LAYOUT_WIDTH_EXCEEDED', message: 'The specified component exceeds the maximum width' });
    }
    children.forEach((child, childIndex) => {
      const path = [...rowPath, 'components', childIndex];
      if (!isObject(child)) return;
      if (child['type'] === ComponentType.Button) problems.push(...buttonProblems(child, path));
      else if (!selectTypes.has(Number(child['type']))) {
        problems.push({ path: [...path, 'type'], code: 'UNION_TYPE_CHOICES', message: 'Value of field "type" must be one of (2, 3, 5, 6, 7, 8).' });
      }
      const customId = child['custom_id'];
      if (typeof customId === 'string') {
        if (customId.length < 1 || customId.length > COMPONENT_LIMITS.customIdLength) {
          problems.push(badLength([...path, 'custom_id'], 1, COMPONENT_LIMITS.customIdLength));
        }
        if (seen.has(customId)) {
          problems.push({ path: [...path, 'custom_id'], code: 'COMPONENT_CUSTOM_ID_DUPLICATED', message: 'Component custom id cannot be duplicated' });
        }
        seen.add(customId);
      } else if (child['type'] !== ComponentType.Button) {
        problems.push({ path: [...path, 'custom_id'], code: 'BASE_TYPE_REQUIRED', message: 'This field is required' });
      }
    });
  });
  return problems;
}

function buttonProblems(button: JsonObject, path: Array<string | number>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const style = button['style'];
  if (typeof style !== 'number' || style < ButtonStyle.Primary || style > ButtonStyle.Premium) {
    problems.push({ path: [...path, 'style'], code: 'BASE_TYPE_CHOICES', message: 'Value must be one of {1, 2, 3, 4, 5, 6}.' });
  }
  const isLink = style === ButtonStyle.Link;
  if (isLink && typeof button['url'] !== 'string') problems.push({ path: [...path, 'url'], code: 'BUTTON_COMPONENT_URL_REQUIRED', message: 'A url is required' });
  if (isLink && button['custom_id'] !== undefined) {
    problems.push({ path: [...path, 'custom_id'], code: 'BUTTON_COMPONENT_CUSTOM_ID_NOT_ALLOWED', message: 'A custom id cannot be specified' });
  }
  if (!isLink && style !== ButtonStyle.Premium && typeof button['custom_id'] !== 'string') {
    problems.push({ path: [...path, 'custom_id'], code: 'BUTTON_COMPONENT_CUSTOM_ID_REQUIRED', message: 'A custom id is required' });
  }
  const label = button['label'];
  if (typeof label === 'string' && label.length > COMPONENT_LIMITS.labelLength) problems.push(tooLong([...path, 'label'], COMPONENT_LIMITS.labelLength));
  if (style !== ButtonStyle.Premium && (typeof label !== 'string' || label === '') && button['emoji'] === undefined) {
    problems.push({ path: [...path, 'label'], code: 'BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED', message: 'A label or emoji is required' });
  }
  return problems;
}

/** The interactive component with `customId` on a message (buttons and selects inside action rows). */
export function findComponent(components: readonly unknown[], customId: string): JsonObject | undefined {
  for (const row of components) {
    if (!isObject(row) || !Array.isArray(row['components'])) continue;
    for (const child of row['components']) {
      if (isObject(child) && child['custom_id'] === customId) return child;
    }
  }
  return undefined;
}
