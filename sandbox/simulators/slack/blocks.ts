/** Block Kit validation (pure): the limits and rules Slack enforces on blocks and views. */
import { isObject } from "./support.js";
import { type JsonObject } from "./types.js";

export type BlockSurface = "message" | "modal" | "home";

/** One reason Slack would refuse a payload, located by JSON pointer. */
export interface BlockProblem {
  pointer: string;
  message: string;
}

/** Limits from Slack's Block Kit and view references. */
export const SLACK_LIMITS = {
  messageBlocks: 50,
  modalBlocks: 100,
  /** A Home tab holds as many blocks as a modal. */
  homeBlocks: 100,
  blockId: 255,
  actionId: 255,
  sectionText: 3000,
  sectionFields: 10,
  sectionFieldText: 2000,
  headerText: 150,
  buttonText: 75,
  buttonValue: 2000,
  buttonUrl: 3000,
  actionsElements: 25,
  contextElements: 10,
  inputLabel: 2000,
  inputHint: 2000,
  imageAltText: 2000,
  viewTitle: 24,
  viewButton: 24,
  privateMetadata: 3000,
  callbackId: 255,
  externalId: 255,
  viewBytes: 250_000,
  attachments: 100,
} as const;

/** Slack's wording: `[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]`. */
export function formatProblem(problem: BlockProblem): string {
  return `[ERROR] ${problem.message} [json-pointer:${problem.pointer}]`;
}

/** Checks blocks against Slack's structure and limits for a surface; an empty list means Slack accepts them. */
export function validateBlocks(
  blocks: unknown,
  options: { surface: BlockSurface; pointer?: string },
): BlockProblem[] {
  const at = options.pointer ?? "/blocks";
  const max =
    options.surface === "message"
      ? SLACK_LIMITS.messageBlocks
      : options.surface === "home"
        ? SLACK_LIMITS.homeBlocks
        : SLACK_LIMITS.modalBlocks;
  if (!Array.isArray(blocks)) return [problem(at, "must be an array")];
  const problems = checkItemCount(blocks, at, max);
  blocks.forEach((block, index) => problems.push(...checkBlock(block, `${at}/${index}`)));
  problems.push(...duplicates(blocks, "block_id", at));
  return problems;
}

/** Checks a modal view object (title, buttons, metadata, blocks) as views.open/update/push do. */
export function validateModalView(view: unknown, pointer = "/view"): BlockProblem[] {
  if (!isObject(view)) return [problem(pointer, "must be an object")];
  const problems: BlockProblem[] = [];
  if (view.type !== "modal")
    problems.push(problem(`${pointer}/type`, "must be a valid enum value"));
  const buttonRule = { max: SLACK_LIMITS.viewButton, plainOnly: true };
  problems.push(
    ...requiredText(view, "title", pointer, { max: SLACK_LIMITS.viewTitle, plainOnly: true }),
    ...optionalText(view.close, `${pointer}/close`, buttonRule),
    ...optionalText(view.submit, `${pointer}/submit`, buttonRule),
  );
  if (view.blocks === undefined) problems.push(missingField(pointer, "blocks"));
  else
    problems.push(
      ...validateBlocks(view.blocks, { surface: "modal", pointer: `${pointer}/blocks` }),
    );
  if (hasInputBlock(view.blocks) && (view.submit === undefined || view.submit === null)) {
    problems.push(problem(pointer, "must provide a submit property when using input blocks"));
  }
  problems.push(
    ...optionalString(
      view.private_metadata,
      `${pointer}/private_metadata`,
      SLACK_LIMITS.privateMetadata,
    ),
    ...optionalString(view.callback_id, `${pointer}/callback_id`, SLACK_LIMITS.callbackId),
    ...optionalString(view.external_id, `${pointer}/external_id`, SLACK_LIMITS.externalId),
  );
  return problems;
}

/**
 * Checks a Home tab view as views.publish does: type `home`, its blocks (100 at most), and the
 * same metadata limits as a modal. A Home has no title, submit or close button.
 */
export function validateHomeView(view: unknown, pointer = "/view"): BlockProblem[] {
  if (!isObject(view)) return [problem(pointer, "must be an object")];
  const problems: BlockProblem[] = [];
  if (view.type !== "home") problems.push(problem(`${pointer}/type`, "must be a valid enum value"));
  if (view.blocks === undefined) problems.push(missingField(pointer, "blocks"));
  else
    problems.push(
      ...validateBlocks(view.blocks, { surface: "home", pointer: `${pointer}/blocks` }),
    );
  for (const field of ["submit", "close"]) {
    if (view[field] !== undefined && view[field] !== null) {
      problems.push(problem(`${pointer}/${field}`, "is not allowed for a home view"));
    }
  }
  problems.push(
    ...optionalString(
      view.private_metadata,
      `${pointer}/private_metadata`,
      SLACK_LIMITS.privateMetadata,
    ),
    ...optionalString(view.callback_id, `${pointer}/callback_id`, SLACK_LIMITS.callbackId),
    ...optionalString(view.external_id, `${pointer}/external_id`, SLACK_LIMITS.externalId),
  );
  return problems;
}

type BlockCheck = (block: JsonObject, at: string) => BlockProblem[];

const BLOCK_CHECKS: Record<string, BlockCheck | undefined> = {
  section: checkSection,
  header: checkHeader,
  divider: () => [],
  context: checkContext,
  actions: checkActions,
  input: checkInput,
  image: checkImage,
  rich_text: checkRichText,
  file: checkFile,
};

interface TextRule {
  max: number;
  min?: number;
  plainOnly?: boolean;
}

export function problem(pointer: string, message: string): BlockProblem {
  return { pointer, message };
}

export function missingField(at: string, field: string): BlockProblem {
  return problem(at, `missing required field: ${field}`);
}

function checkBlock(block: unknown, at: string): BlockProblem[] {
  if (!isObject(block)) return [problem(at, "must be an object")];
  const check = typeof block.type === "string" ? BLOCK_CHECKS[block.type] : undefined;
  if (check === undefined) return [problem(at, "failed to match all allowed schemas")];
  return [
    ...optionalString(block.block_id, `${at}/block_id`, SLACK_LIMITS.blockId),
    ...check(block, at),
  ];
}

function checkSection(block: JsonObject, at: string): BlockProblem[] {
  if (block.text === undefined && block.fields === undefined) return [missingField(at, "text")];
  const problems = optionalText(block.text, `${at}/text`, { max: SLACK_LIMITS.sectionText });
  if (block.fields !== undefined) {
    problems.push(
      ...checkItems(block.fields, `${at}/fields`, SLACK_LIMITS.sectionFields, (field, fieldAt) =>
        checkText(field, fieldAt, { max: SLACK_LIMITS.sectionFieldText }),
      ),
    );
  }
  if (block.accessory !== undefined)
    problems.push(...checkElement(block.accessory, `${at}/accessory`));
  return problems;
}

function checkHeader(block: JsonObject, at: string): BlockProblem[] {
  return requiredText(block, "text", at, { max: SLACK_LIMITS.headerText, plainOnly: true });
}

function checkContext(block: JsonObject, at: string): BlockProblem[] {
  if (block.elements === undefined) return [missingField(at, "elements")];
  return checkItems(block.elements, `${at}/elements`, SLACK_LIMITS.contextElements);
}

function checkActions(block: JsonObject, at: string): BlockProblem[] {
  if (block.elements === undefined) return [missingField(at, "elements")];
  const problems = checkItems(
    block.elements,
    `${at}/elements`,
    SLACK_LIMITS.actionsElements,
    checkElement,
  );
  if (Array.isArray(block.elements)) {
    problems.push(...duplicates(block.elements, "action_id", `${at}/elements`));
  }
  return problems;
}

function checkInput(block: JsonObject, at: string): BlockProblem[] {
  const problems = requiredText(block, "label", at, {
    max: SLACK_LIMITS.inputLabel,
    plainOnly: true,
  });
  if (block.element === undefined) problems.push(missingField(at, "element"));
  else problems.push(...checkElement(block.element, `${at}/element`));
  problems.push(
    ...optionalText(block.hint, `${at}/hint`, { max: SLACK_LIMITS.inputHint, plainOnly: true }),
  );
  return problems;
}

function checkImage(block: JsonObject, at: string): BlockProblem[] {
  const problems =
    block.image_url === undefined && block.slack_file === undefined
      ? [missingField(at, "image_url")]
      : [];
  if (block.alt_text === undefined) problems.push(missingField(at, "alt_text"));
  else
    problems.push(...optionalString(block.alt_text, `${at}/alt_text`, SLACK_LIMITS.imageAltText));
  return problems;
}

function checkRichText(block: JsonObject, at: string): BlockProblem[] {
  return Array.isArray(block.elements) ? [] : [missingField(at, "elements")];
}

function checkFile(block: JsonObject, at: string): BlockProblem[] {
  return ["external_id", "source"]
    .filter((field) => typeof block[field] !== "string")
    .map((field) => missingField(at, field));
}

function checkElement(element: unknown, at: string): BlockProblem[] {
  if (!isObject(element) || typeof element.type !== "string") {
    return [problem(at, "failed to match all allowed schemas")];
  }
  const problems = optionalString(element.action_id, `${at}/action_id`, SLACK_LIMITS.actionId);
  if (element.type === "button") problems.push(...checkButton(element, at));
  return problems;
}

function checkButton(button: JsonObject, at: string): BlockProblem[] {
  return [
    ...requiredText(button, "text", at, { max: SLACK_LIMITS.buttonText, plainOnly: true }),
    ...optionalString(button.value, `${at}/value`, SLACK_LIMITS.buttonValue),
    ...optionalString(button.url, `${at}/url`, SLACK_LIMITS.buttonUrl),
  ];
}

function requiredText(
  parent: JsonObject,
  field: string,
  at: string,
  rule: TextRule,
): BlockProblem[] {
  if (parent[field] === undefined || parent[field] === null) return [missingField(at, field)];
  return checkText(parent[field], `${at}/${field}`, rule);
}

function optionalText(value: unknown, at: string, rule: TextRule): BlockProblem[] {
  return value === undefined || value === null ? [] : checkText(value, at, rule);
}

function checkText(value: unknown, at: string, rule: TextRule): BlockProblem[] {
  if (!isObject(value)) return [problem(at, "must be a text object")];
  const types = rule.plainOnly === true ? ["plain_text"] : ["plain_text", "mrkdwn"];
  const problems =
    typeof value.type === "string" && types.includes(value.type)
      ? []
      : [problem(`${at}/type`, "must be a valid enum value")];
  if (typeof value.text !== "string")
    return [...problems, problem(`${at}/text`, "must be a string")];
  return [...problems, ...checkLength(value.text, `${at}/text`, rule.max, rule.min ?? 1)];
}

function optionalString(value: unknown, at: string, max: number): BlockProblem[] {
  if (value === undefined) return [];
  if (typeof value !== "string") return [problem(at, "must be a string")];
  return checkLength(value, at, max, 0);
}

function checkLength(text: string, at: string, max: number, min: number): BlockProblem[] {
  if (text.length > max) return [problem(at, `must be less than ${max + 1} characters`)];
  if (text.length < min) return [problem(at, `must be more than ${min - 1} characters`)];
  return [];
}

function checkItems(
  value: unknown,
  at: string,
  max: number,
  checkItem?: (item: unknown, itemAt: string) => BlockProblem[],
): BlockProblem[] {
  if (!Array.isArray(value)) return [problem(at, "must be an array")];
  const problems = checkItemCount(value, at, max);
  if (checkItem !== undefined) {
    value.forEach((item, index) => problems.push(...checkItem(item, `${at}/${index}`)));
  }
  return problems;
}

function checkItemCount(items: readonly unknown[], at: string, max: number): BlockProblem[] {
  return items.length > max ? [problem(at, `no more than ${max} items allowed`)] : [];
}

function duplicates(items: readonly unknown[], key: string, at: string): BlockProblem[] {
  const seen = new Set<string>();
  const problems: BlockProblem[] = [];
  items.forEach((item, index) => {
    const value = isObject(item) ? item[key] : undefined;
    if (typeof value !== "string") return;
    if (seen.has(value))
      problems.push(problem(`${at}/${index}/${key}`, `duplicate ${key} "${value}"`));
    seen.add(value);
  });
  return problems;
}

function hasInputBlock(blocks: unknown): boolean {
  return Array.isArray(blocks) && blocks.some((block) => isObject(block) && block.type === "input");
}
