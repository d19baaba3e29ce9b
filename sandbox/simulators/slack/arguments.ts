/** Reading a Web API method's arguments: message content, blocks, views. */
import {
  formatProblem,
  problem,
  SLACK_LIMITS,
  validateBlocks,
  validateHomeView,
  validateModalView,
} from "./blocks.js";
import {
  invalidArguments,
  isObject,
  missingArgument,
  randomToken,
  SlackApiError,
  stringArg,
} from "./support.js";
import { type JsonObject, type ModalInput, type TextObject } from "./types.js";

interface MessageContent {
  text: string | undefined;
  blocks: JsonObject[] | undefined;
  attachments: JsonObject[] | undefined;
  metadata: JsonObject | undefined;
}

export function readMessageContent(args: JsonObject): MessageContent {
  return {
    text: typeof args.text === "string" ? args.text : undefined,
    blocks: readMessageBlocks(args.blocks),
    attachments: readAttachments(args.attachments),
    metadata: readMetadata(args.metadata),
  };
}

export function hasContent(content: MessageContent, args: JsonObject): boolean {
  return (
    (content.text ?? "") !== "" ||
    (content.blocks?.length ?? 0) > 0 ||
    (content.attachments?.length ?? 0) > 0 ||
    stringArg(args, "markdown_text") !== undefined
  );
}

function readMessageBlocks(raw: unknown): JsonObject[] | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (!Array.isArray(raw)) throw new SlackApiError("invalid_blocks_format");
  const problems = validateBlocks(raw, { surface: "message" });
  if (problems.length > 0) throw new SlackApiError("invalid_blocks", problems.map(formatProblem));
  return withGeneratedIds(raw.filter(isObject));
}

function readAttachments(raw: unknown): JsonObject[] | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (!Array.isArray(raw) || !raw.every(isObject)) throw new SlackApiError("invalid_attachments");
  if (raw.length > SLACK_LIMITS.attachments) throw new SlackApiError("too_many_attachments");
  return raw;
}

function readMetadata(raw: unknown): JsonObject | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (!isObject(raw)) throw new SlackApiError("invalid_metadata_format");
  if (Object.keys(raw).length === 0) return raw;
  if (typeof raw.event_type !== "string" || !isObject(raw.event_payload)) {
    throw new SlackApiError("invalid_metadata_schema");
  }
  return raw;
}

export function readModalView(raw: unknown): ModalInput {
  if (raw === undefined || raw === "") throw missingArgument("view");
  if (!isObject(raw)) throw invalidArguments([problem("/view", "must be a valid JSON object")]);
  if (JSON.stringify(raw).length > SLACK_LIMITS.viewBytes)
    throw new SlackApiError("view_too_large");
  const problems = validateModalView(raw);
  if (problems.length > 0) throw invalidArguments(problems);
  return toModalInput(raw);
}

/** A Home tab view as views.publish takes it; kept as a modal's fields, without buttons. */
export function readHomeView(raw: unknown): ModalInput {
  if (raw === undefined || raw === "") throw missingArgument("view");
  if (!isObject(raw)) throw invalidArguments([problem("/view", "must be a valid JSON object")]);
  if (JSON.stringify(raw).length > SLACK_LIMITS.viewBytes)
    throw new SlackApiError("view_too_large");
  const problems = validateHomeView(raw);
  if (problems.length > 0) throw invalidArguments(problems);
  return toModalInput(raw);
}

function toModalInput(view: JsonObject): ModalInput {
  const blocks = Array.isArray(view.blocks) ? view.blocks.filter(isObject) : [];
  return {
    title: toTextObject(view.title) ?? { type: "plain_text", text: "" },
    submit: toTextObject(view.submit),
    close: toTextObject(view.close),
    blocks: withGeneratedIds(blocks),
    private_metadata: typeof view.private_metadata === "string" ? view.private_metadata : "",
    callback_id: typeof view.callback_id === "string" ? view.callback_id : "",
    external_id: typeof view.external_id === "string" ? view.external_id : "",
    clear_on_close: view.clear_on_close === true,
    notify_on_close: view.notify_on_close === true,
    submit_disabled: view.submit_disabled === true,
  };
}

function toTextObject(value: unknown): TextObject | null {
  if (!isObject(value) || typeof value.text !== "string") return null;
  const text: TextObject = {
    type: value.type === "mrkdwn" ? "mrkdwn" : "plain_text",
    text: value.text,
  };
  if (typeof value.emoji === "boolean") text.emoji = value.emoji;
  return text;
}

/** Slack fills in a block_id (and action_id) for blocks and elements that have none. */
function withGeneratedIds(blocks: readonly JsonObject[]): JsonObject[] {
  return blocks.map((block) => {
    const copy = structuredClone(block);
    if (typeof copy.block_id !== "string") copy.block_id = randomToken(3);
    for (const element of interactiveElements(copy)) {
      if (typeof element.action_id !== "string") element.action_id = randomToken(3);
    }
    return copy;
  });
}

/** The elements of a block a user can fill in or click. */
export function interactiveElements(block: JsonObject): JsonObject[] {
  const elements: unknown[] =
    block.type === "actions" && Array.isArray(block.elements) ? block.elements : [];
  return [block.accessory, block.element, ...elements].filter(isObject);
}
