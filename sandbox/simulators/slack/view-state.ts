/** View state: `view.state.values` as Slack fills it in from what a person entered. */
import { interactiveElements } from "./arguments.js";
import { isObject } from "./support.js";
import { type JsonObject } from "./types.js";
import {
  type ElementState,
  type InputValue,
  MULTI_SELECT_TYPES,
  PICKER_FIELDS,
  type PickerType,
  SINGLE_SELECT_TYPES,
  type SlackOption,
  TEXT_INPUT_TYPES,
  type ViewStateValues,
} from "./signer-types.js";

/** Types a `view.state.values` map written out by hand: block_id → action_id → element state. */
export function stateValues(values: ViewStateValues): ViewStateValues {
  return values;
}

/**
 * The `state.values` Slack would send when a user fills `view` in: `entries` maps
 * action_id → what the user entered or picked. Elements not mentioned keep their
 * initial value (or stay empty), as in Slack. Picking a value that is not among
 * an element's options, or naming an action_id the view lacks, throws.
 */
export function stateValuesFor(
  view: { blocks: readonly unknown[] },
  entries: Readonly<Record<string, InputValue>>,
): ViewStateValues {
  const values: ViewStateValues = {};
  const filled = new Set<string>();
  for (const block of view.blocks.filter(isObject)) {
    for (const element of interactiveElements(block)) {
      const actionId = typeof element.action_id === "string" ? element.action_id : undefined;
      if (actionId === undefined || !isStateful(element)) continue;
      const blockId = requireBlockId(block, actionId);
      const entry = Object.hasOwn(entries, actionId) ? entries[actionId] : undefined;
      (values[blockId] ??= {})[actionId] = elementState(element, entry, `action_id "${actionId}"`);
      if (entry !== undefined) filled.add(actionId);
    }
  }
  const unknown = Object.keys(entries).filter((actionId) => !filled.has(actionId));
  if (unknown.length > 0) {
    throw new Error(
      `The view has no input with action_id ${unknown.map((id) => `"${id}"`).join(", ")}`,
    );
  }
  return values;
}

const STATEFUL_TYPES = new Set<string>([
  ...TEXT_INPUT_TYPES,
  ...SINGLE_SELECT_TYPES,
  ...MULTI_SELECT_TYPES,
  ...Object.keys(PICKER_FIELDS),
]);

function isStateful(element: JsonObject): boolean {
  return typeof element.type === "string" && STATEFUL_TYPES.has(element.type);
}

function requireBlockId(block: JsonObject, actionId: string): string {
  if (typeof block.block_id === "string") return block.block_id;
  throw new Error(
    `The block holding action_id "${actionId}" has no block_id; use the view from the fake`,
  );
}

function elementState(
  element: JsonObject,
  entry: InputValue | undefined,
  where: string,
): ElementState {
  const one = (initial: unknown): string | null =>
    entry === undefined
      ? typeof initial === "string"
        ? initial
        : null
      : singleValue(entry, where);
  const many = (initial: unknown): string[] =>
    entry === undefined ? stringList(initial) : listValue(entry);
  const type = typeof element.type === "string" ? element.type : "";
  if (isOneOf(TEXT_INPUT_TYPES, type)) return { type, value: one(element.initial_value) };
  if (isOneOf(SINGLE_SELECT_TYPES, type)) {
    const value = one(isObject(element.initial_option) ? element.initial_option.value : undefined);
    return { type, selected_option: value === null ? null : findOption(element, value, where) };
  }
  if (isOneOf(MULTI_SELECT_TYPES, type)) {
    const initial = Array.isArray(element.initial_options)
      ? element.initial_options.filter(isObject).map((option) => option.value)
      : [];
    return {
      type,
      selected_options: many(initial).map((value) => findOption(element, value, where)),
    };
  }
  if (isOneOf(Object.keys(PICKER_FIELDS) as PickerType[], type)) {
    const field = PICKER_FIELDS[type];
    const initial = element[field.replace("selected_", "initial_")];
    const state = type.startsWith("multi_") ? many(initial) : one(initial);
    return { type, [field]: state } as ElementState;
  }
  throw new Error(`${where}: cannot fill a ${type} element`);
}

function isOneOf<T extends string>(types: readonly T[], value: string): value is T {
  return (types as readonly string[]).includes(value);
}

function singleValue(entry: InputValue, where: string): string | null {
  if (entry === null || typeof entry === "string") return entry;
  throw new Error(`${where} takes one value, got ${String(entry.length)}`);
}

function listValue(entry: InputValue): string[] {
  if (entry === null) return [];
  return typeof entry === "string" ? [entry] : [...entry];
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item) => typeof item === "string") : [];
}

/** The option object Slack reports for a picked value; external selects echo the value. */
export function findOption(element: JsonObject, value: string, where: string): SlackOption {
  if (typeof element.type === "string" && element.type.includes("external_select")) {
    return { text: { type: "plain_text", text: value }, value };
  }
  const options = elementOptions(element);
  const option = options.find((candidate) => candidate.value === value);
  if (option !== undefined) return option;
  const known = options.map((candidate) => `"${candidate.value}"`).join(", ");
  throw new Error(`${where}: "${value}" is not one of its options (${known})`);
}

function elementOptions(element: JsonObject): SlackOption[] {
  const groups = asList(element.option_groups).filter(isObject);
  const raw = [...asList(element.options), ...groups.flatMap((group) => asList(group.options))];
  return raw.filter(isObject).flatMap((option) => {
    const text = option.text;
    if (typeof option.value !== "string" || !isObject(text) || typeof text.text !== "string") {
      return [];
    }
    const type = text.type === "mrkdwn" ? "mrkdwn" : "plain_text";
    return [{ text: { type, text: text.text }, value: option.value }];
  });
}

function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? (value as unknown[]) : [];
}
