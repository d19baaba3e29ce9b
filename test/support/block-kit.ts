import { expect } from "vitest";

/**
 * Slack's documented Block Kit limits (api.slack.com/reference/block-kit): what Slack answers
 * `invalid_blocks` to. Checked over a whole message or view, so every view test can assert that
 * Slack would accept what the bot sends.
 */
const LIMITS = {
  messageBlocks: 50,
  viewBlocks: 100,
  sectionText: 3000,
  sectionFields: 10,
  fieldText: 2000,
  headerText: 150,
  contextElements: 10,
  actionsElements: 25,
  buttonText: 75,
  buttonValue: 2000,
  actionId: 255,
  blockId: 255,
  confirmTitle: 100,
  confirmText: 300,
  confirmButton: 30,
  optionText: 75,
  optionValue: 150,
  inputLabel: 2000,
  hint: 2000,
  messageText: 40_000,
} as const;

type Json = Record<string, unknown>;

const textOf = (value: unknown): string =>
  typeof value === "object" && value !== null && typeof (value as Json).text === "string"
    ? ((value as Json).text as string)
    : "";

function problemsIn(block: Json, where: string): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) problems.push(`${where}: ${what}`);
  };
  if (typeof block.block_id === "string") {
    check(block.block_id.length <= LIMITS.blockId, "block_id too long");
  }
  switch (block.type) {
    case "section": {
      check(textOf(block.text).length <= LIMITS.sectionText, "section text over 3000");
      const fields = (block.fields ?? []) as unknown[];
      check(fields.length <= LIMITS.sectionFields, "more than 10 fields");
      for (const field of fields)
        check(textOf(field).length <= LIMITS.fieldText, "field over 2000");
      check(block.text !== undefined || fields.length > 0, "section without text or fields");
      if (block.accessory !== undefined)
        problems.push(...elementProblems(block.accessory as Json, `${where}.accessory`));
      break;
    }
    case "header":
      check(textOf(block.text).length <= LIMITS.headerText, "header over 150");
      check((block.text as Json | undefined)?.type === "plain_text", "header text not plain_text");
      break;
    case "context": {
      const elements = (block.elements ?? []) as Json[];
      check(
        elements.length > 0 && elements.length <= LIMITS.contextElements,
        "context elements not 1–10",
      );
      for (const element of elements)
        check(textOf(element).length <= LIMITS.sectionText, "context text over 3000");
      break;
    }
    case "actions": {
      const elements = (block.elements ?? []) as Json[];
      check(
        elements.length > 0 && elements.length <= LIMITS.actionsElements,
        "actions elements not 1–25",
      );
      elements.forEach((element, index) =>
        problems.push(...elementProblems(element, `${where}.elements[${index}]`)),
      );
      break;
    }
    case "input":
      check(textOf(block.label).length <= LIMITS.inputLabel, "input label over 2000");
      if (block.hint !== undefined)
        check(textOf(block.hint).length <= LIMITS.hint, "hint over 2000");
      problems.push(...elementProblems(block.element as Json, `${where}.element`));
      break;
    case "divider":
    case "rich_text":
    case "image":
      break;
    default:
      problems.push(`${where}: unexpected block type ${String(block.type)}`);
  }
  return problems;
}

function elementProblems(element: Json, where: string): string[] {
  const problems: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) problems.push(`${where}: ${what}`);
  };
  if (typeof element.action_id === "string") {
    check(element.action_id.length <= LIMITS.actionId, "action_id too long");
  }
  if (element.type === "button") {
    check(textOf(element.text).length <= LIMITS.buttonText, "button text over 75");
    if (typeof element.value === "string") {
      check(element.value.length <= LIMITS.buttonValue, "button value over 2000");
    }
  }
  if (element.type === "static_select") {
    const options = (element.options ?? []) as Json[];
    check(options.length > 0 && options.length <= 100, "select options not 1–100");
    for (const option of options) {
      check(textOf(option.text).length <= LIMITS.optionText, "option text over 75");
      check(String(option.value).length <= LIMITS.optionValue, "option value over 150");
    }
  }
  const confirm = element.confirm as Json | undefined;
  if (confirm !== undefined) {
    check(textOf(confirm.title).length <= LIMITS.confirmTitle, "confirm title over 100");
    check(textOf(confirm.text).length <= LIMITS.confirmText, "confirm text over 300");
    check(textOf(confirm.confirm).length <= LIMITS.confirmButton, "confirm button over 30");
    check(textOf(confirm.deny).length <= LIMITS.confirmButton, "deny button over 30");
  }
  return problems;
}

/** Fails with every limit a message (`{ text, blocks }`) or a modal view breaks. */
export function expectWithinSlackLimits(
  payload: { text?: string; blocks?: readonly unknown[] },
  kind: "message" | "view" = "message",
): void {
  const blocks = (payload.blocks ?? []) as Json[];
  const problems: string[] = [];
  const max = kind === "message" ? LIMITS.messageBlocks : LIMITS.viewBlocks;
  if (blocks.length > max) problems.push(`${blocks.length} blocks, over ${max}`);
  if ((payload.text ?? "").length > LIMITS.messageText) problems.push("text over 40000");
  blocks.forEach((block, index) => problems.push(...problemsIn(block, `blocks[${index}]`)));
  expect(problems).toEqual([]);
}
