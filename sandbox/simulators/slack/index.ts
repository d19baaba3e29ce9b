/**
 * A wire-level fake of the Slack Web API for integration tests.
 *
 * The real `@slack/web-api` client (and Bolt's client) talks to it over HTTP with
 * `slackApiUrl: fake.apiUrl`. It answers like Slack does: HTTP 200 with
 * `{ ok: false, error }` for every platform error, HTTP 429 with `Retry-After`
 * when rate limited, and Slack-shaped success bodies. It keeps the state a test
 * asserts on (messages, ephemeral messages, views, uploads, response_url posts)
 * and enforces the rules that bite in production: trigger_id lifetime and single
 * use, Block Kit limits, view hashes.
 *
 * Where Slack's documentation lists the error for a situation, that error is used.
 * Views with invalid blocks are refused with `invalid_arguments` (the views.*
 * methods do not document `invalid_blocks`); messages with `invalid_blocks`.
 */
import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";

import { FaultQueue } from "../faults.js";
import { sendJson, startFakeServer, type RecordedRequest } from "../http.js";

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

export type JsonObject = Record<string, unknown>;

/** One Web API call as the fake received and answered it. */
export interface SlackCall {
  /** Method name, e.g. `"views.open"`. */
  method: string;
  /** Parsed arguments (without the token); JSON-encoded fields such as `blocks` and `view` are objects again. */
  args: Record<string, unknown>;
  at: number;
  ok: boolean;
  error?: string;
}

/** A Slack error code for `{ ok: false, error }`, or an HTTP status (429 carries `Retry-After`). */
export type SlackFailure = string | { status: number; retryAfter?: number };

export interface SlackIdentity {
  teamId: string;
  teamName: string;
  teamDomain: string;
  botUserId: string;
  botUserName: string;
  botId: string;
  appId: string;
}

export interface TextObject {
  type: "plain_text" | "mrkdwn";
  text: string;
  emoji?: boolean;
}

/** A message in a channel, as posted by the bot and then updated. */
export interface FakeMessage {
  channel: string;
  ts: string;
  text: string;
  blocks: JsonObject[];
  attachments?: JsonObject[];
  thread_ts?: string;
  metadata?: JsonObject;
  /** Files shared by this message (a completed upload into a channel or thread). */
  files?: JsonObject[];
  user: string;
  bot_id: string;
  app_id: string;
  edited?: { user: string; ts: string };
}

export interface FakeEphemeral {
  channel: string;
  user: string;
  message_ts: string;
  text: string;
  blocks: JsonObject[];
  thread_ts?: string;
}

/** The fields of a modal the app sets through views.open, views.push and views.update. */
export interface ModalInput {
  title: TextObject;
  submit: TextObject | null;
  close: TextObject | null;
  blocks: JsonObject[];
  private_metadata: string;
  callback_id: string;
  external_id: string;
  clear_on_close: boolean;
  notify_on_close: boolean;
  submit_disabled: boolean;
}

/** A modal view exactly as the views.* methods return it. */
export interface FakeView extends ModalInput {
  id: string;
  team_id: string;
  type: "modal";
  state: { values: Record<string, Record<string, unknown>> };
  hash: string;
  root_view_id: string;
  previous_view_id: string | null;
  app_id: string;
  app_installed_team_id: string;
  bot_id: string;
}

export interface FakeUser {
  id: string;
  team_id: string;
  name: string;
  real_name: string;
  deleted: boolean;
  tz: string;
  tz_offset: number;
  is_admin: boolean;
  is_bot: boolean;
  profile: { real_name: string; display_name: string; email?: string };
}

export interface FakeChannel {
  id: string;
  name: string;
  is_channel: boolean;
  is_group: boolean;
  is_im: boolean;
  is_private: boolean;
  is_member: boolean;
  is_archived: boolean;
  created: number;
}

/** A file uploaded through files.getUploadURLExternal → upload URL → files.completeUploadExternal. */
export interface FakeUpload {
  id: string;
  filename: string;
  title: string;
  length: number;
  content?: string;
  completed: boolean;
  channel?: string;
  initial_comment?: string;
  thread_ts?: string;
}

/** What the app posted to a response_url (Bolt's `respond()`). */
export interface ResponseUrlPost {
  url: string;
  body: JsonObject;
  at: number;
}

export interface FakeSlackOptions {
  botToken: string;
  /** How long an issued trigger_id stays usable; Slack's is 3 seconds. */
  triggerTtlMs?: number;
  teamId?: string;
  teamDomain?: string;
}

export interface FakeSlack {
  /** Base URL of the fake server, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** Give this to WebClient / Bolt as `slackApiUrl`; ends with `/api/`. */
  readonly apiUrl: string;
  readonly identity: SlackIdentity;
  /** Every Web API call, in order. */
  readonly calls: readonly SlackCall[];
  callsTo(method: string): SlackCall[];
  /** The first call to `method` matching `predicate`, already made or still to come. */
  waitFor(
    method: string,
    predicate?: (call: SlackCall) => boolean,
    timeoutMs?: number,
  ): Promise<SlackCall>;
  /** A fresh trigger_id, as Slack puts in a slash command or interaction; `viewId` for one from inside a modal. */
  issueTriggerId(options?: { viewId?: string }): string;
  /** A fresh response_url served by this fake. */
  issueResponseUrl(): string;
  readonly messages: readonly FakeMessage[];
  message(channel: string, ts: string): FakeMessage | undefined;
  readonly ephemerals: readonly FakeEphemeral[];
  readonly views: readonly FakeView[];
  /** A view by id or external_id. */
  view(idOrExternalId: string): FakeView | undefined;
  readonly uploads: readonly FakeUpload[];
  readonly responses: readonly ResponseUrlPost[];
  waitForResponse(
    predicate?: (post: ResponseUrlPost) => boolean,
    timeoutMs?: number,
  ): Promise<ResponseUrlPost>;
  /** Makes the next call to `method` fail; queued failures apply one call each, in order. */
  failNext(method: string, failure: SlackFailure): void;
  addUsergroup(id: string, userIds: readonly string[]): void;
  addUser(user: NewUser): void;
  /** The registered user, or the profile Slack would show for an unregistered well-formed user ID. */
  user(id: string): FakeUser;
  addChannel(channel: NewChannel): void;
  /**
   * Serves another Web API method, e.g. `apps.connections.open` for the Socket Mode fake. The
   * handler authenticates the caller itself (not every method takes the bot token) and returns
   * the whole response body, `{ ok: false, error }` included. Calls are recorded and `failNext`
   * applies as for the built-in methods.
   */
  addMethod(method: string, handler: ExtraMethod): void;
  /**
   * Calls `listener` after every Web API call and every response_url post (anything that may
   * have changed what a user sees); returns the function that stops it.
   */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

/** A Web API method added with `addMethod`: the caller's token and arguments in, the body out. */
export type ExtraMethod = (call: { token: string | undefined; args: JsonObject }) => JsonObject;

export interface NewUser {
  id: string;
  name?: string;
  realName?: string;
  email?: string;
  tz?: string;
  isAdmin?: boolean;
  isBot?: boolean;
  deleted?: boolean;
}

export interface NewChannel {
  id: string;
  name: string;
  isPrivate?: boolean;
  /** false makes chat.postMessage answer `not_in_channel`. */
  isMember?: boolean;
}

// ---------------------------------------------------------------------------
// Block Kit validation (pure)
// ---------------------------------------------------------------------------

export type BlockSurface = "message" | "modal";

/** One reason Slack would refuse a payload, located by JSON pointer. */
export interface BlockProblem {
  pointer: string;
  message: string;
}

/** Limits from Slack's Block Kit and view references. */
export const SLACK_LIMITS = {
  messageBlocks: 50,
  modalBlocks: 100,
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
  const max = options.surface === "modal" ? SLACK_LIMITS.modalBlocks : SLACK_LIMITS.messageBlocks;
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

function problem(pointer: string, message: string): BlockProblem {
  return { pointer, message };
}

function missingField(at: string, field: string): BlockProblem {
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

// ---------------------------------------------------------------------------
// Small shared helpers (the exported ones serve the request signer too)
// ---------------------------------------------------------------------------

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A platform error: the fake answers `{ ok: false, error: code, response_metadata? }`. */
class SlackApiError extends Error {
  constructor(
    readonly code: string,
    readonly messages: readonly string[] = [],
  ) {
    super(code);
  }
}

function invalidArguments(problems: readonly BlockProblem[]): SlackApiError {
  return new SlackApiError("invalid_arguments", problems.map(formatProblem));
}

function missingArgument(name: string): SlackApiError {
  return invalidArguments([missingField(`/${name}`, name)]);
}

function stringArg(args: JsonObject, name: string): string | undefined {
  const value = args[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

function numberArg(args: JsonObject, name: string): number | undefined {
  const value = args[name];
  const parsed = typeof value === "string" && value !== "" ? Number(value) : value;
  return typeof parsed === "number" && Number.isFinite(parsed) ? parsed : undefined;
}

function randomToken(bytes: number): string {
  return randomBytes(bytes).toString("base64url");
}

/** Sequential Slack-style IDs: `V0000000001`, `F0000000002`, … */
class IdSequence {
  private next = 0;
  constructor(private readonly prefix: string) {}
  take(): string {
    this.next += 1;
    return `${this.prefix}${this.next.toString(36).toUpperCase().padStart(10, "0")}`;
  }
}

/** A Slack timestamp (`"1700000000.000100"`) for a time in microseconds since the epoch. */
export function slackTs(micros: number): string {
  return `${String(Math.floor(micros / 1_000_000))}.${String(micros % 1_000_000).padStart(6, "0")}`;
}

/** Message timestamps: `"1700000000.000100"`, strictly increasing. */
class TimestampClock {
  private lastMicros = 0;
  next(): string {
    const micros = Math.max(Date.now() * 1000, this.lastMicros + 100);
    this.lastMicros = micros;
    return slackTs(micros);
  }
}

/** A view's `hash`: changes with every update, as views.update's `hash` check needs. */
export function viewHash(): string {
  return `${Math.floor(Date.now() / 1000)}.${randomBytes(4).toString("hex")}`;
}

/** A list that can be awaited for an item that matches. */
class ObservableList<T> {
  readonly items: T[] = [];
  private readonly listeners = new Set<() => void>();

  push(item: T): void {
    this.items.push(item);
    for (const listener of [...this.listeners]) listener();
  }

  /** Calls `listener` after every push, until the returned function is called. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  waitFor(match: (item: T) => boolean, timeoutMs: number, explain: () => string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const existing = this.items.find(match);
      if (existing !== undefined) {
        resolve(existing);
        return;
      }
      const stop = (): void => {
        clearTimeout(timer);
        this.listeners.delete(listener);
      };
      const listener = (): void => {
        const found = this.items.find(match);
        if (found === undefined) return;
        stop();
        resolve(found);
      };
      const timer = setTimeout(() => {
        stop();
        reject(new Error(explain()));
      }, timeoutMs);
      this.listeners.add(listener);
    });
  }
}

// ---------------------------------------------------------------------------
// Triggers
// ---------------------------------------------------------------------------

interface IssuedTrigger {
  issuedAt: number;
  exchanged: boolean;
  viewId?: string;
}

/** trigger_ids: issued by interactions, usable once, within a short lifetime. */
class TriggerRegistry {
  private readonly issued = new Map<string, IssuedTrigger>();
  private sequence = 0;

  constructor(private readonly ttlMs: number) {}

  issue(viewId?: string): string {
    this.sequence += 1;
    const first = `${String(Date.now()).slice(-10)}${String(this.sequence % 1000).padStart(3, "0")}`;
    const id = `${first}.${String(4_000_000_000_000 + this.sequence)}.${randomBytes(16).toString("hex")}`;
    this.issued.set(id, { issuedAt: Date.now(), exchanged: false, viewId });
    return id;
  }

  /** Uses up a trigger_id, or throws the error Slack gives for it. */
  exchange(triggerId: string): IssuedTrigger {
    const trigger = this.issued.get(triggerId);
    if (trigger === undefined) throw new SlackApiError("invalid_trigger_id");
    if (trigger.exchanged) throw new SlackApiError("exchanged_trigger_id");
    if (Date.now() - trigger.issuedAt > this.ttlMs) throw new SlackApiError("expired_trigger_id");
    trigger.exchanged = true;
    return trigger;
  }
}

// ---------------------------------------------------------------------------
// Reading arguments
// ---------------------------------------------------------------------------

interface MessageContent {
  text: string | undefined;
  blocks: JsonObject[] | undefined;
  attachments: JsonObject[] | undefined;
  metadata: JsonObject | undefined;
}

function readMessageContent(args: JsonObject): MessageContent {
  return {
    text: typeof args.text === "string" ? args.text : undefined,
    blocks: readMessageBlocks(args.blocks),
    attachments: readAttachments(args.attachments),
    metadata: readMetadata(args.metadata),
  };
}

function hasContent(content: MessageContent, args: JsonObject): boolean {
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

function readModalView(raw: unknown): ModalInput {
  if (raw === undefined || raw === "") throw missingArgument("view");
  if (!isObject(raw)) throw invalidArguments([problem("/view", "must be a valid JSON object")]);
  if (JSON.stringify(raw).length > SLACK_LIMITS.viewBytes)
    throw new SlackApiError("view_too_large");
  const problems = validateModalView(raw);
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

// ---------------------------------------------------------------------------
// The workspace: state and Web API methods
// ---------------------------------------------------------------------------

/** A message as interaction payloads carry it; Web API responses add a few fields. */
export function messageObject(message: FakeMessage, teamId: string): JsonObject {
  return {
    type: "message",
    text: message.text,
    user: message.user,
    bot_id: message.bot_id,
    app_id: message.app_id,
    team: teamId,
    ts: message.ts,
    thread_ts: message.thread_ts,
    blocks: structuredClone(message.blocks),
    metadata: message.metadata,
  };
}

type MethodHandler = (args: JsonObject) => JsonObject;

/** Orders message timestamps ("1700000000.000100") numerically. */
function compareTs(a: string, b: string): number {
  return Number(a) - Number(b);
}

/** `oldest` / `latest` / `inclusive` as conversations.history and .replies read them. */
function timeRange(args: JsonObject): (ts: string) => boolean {
  const oldest = Number(args.oldest ?? 0);
  const latest = args.latest === undefined ? Infinity : Number(args.latest);
  const inclusive = args.inclusive === true || args.inclusive === "true";
  return (ts) => {
    const at = Number(ts);
    return inclusive ? at >= oldest && at <= latest : at > oldest && at < latest;
  };
}

interface WorkspaceOptions {
  botToken: string;
  triggerTtlMs: number;
  identity: SlackIdentity;
  baseUrl: () => string;
}

const MAX_VIEW_STACK = 3;

class SlackWorkspace {
  readonly messages: FakeMessage[] = [];
  readonly ephemerals: FakeEphemeral[] = [];
  readonly views: FakeView[] = [];
  readonly uploads: FakeUpload[] = [];
  readonly triggers: TriggerRegistry;
  private readonly channels = new Map<string, FakeChannel>();
  private readonly users = new Map<string, FakeUser>();
  private readonly usergroups = new Map<string, string[]>();
  /** root view id → ids of the views stacked on it, root first. */
  private readonly viewStacks = new Map<string, string[]>();
  private readonly clock = new TimestampClock();
  private readonly viewIds = new IdSequence("V");
  private readonly fileIds = new IdSequence("F");
  private readonly identity: SlackIdentity;
  readonly extraMethods = new Map<string, ExtraMethod>();

  readonly methods: ReadonlyMap<string, MethodHandler> = new Map<string, MethodHandler>([
    ["auth.test", () => this.authTest()],
    ["chat.postMessage", (args) => this.postMessage(args)],
    ["chat.update", (args) => this.updateMessage(args)],
    ["chat.delete", (args) => this.deleteMessage(args)],
    ["chat.postEphemeral", (args) => this.postEphemeral(args)],
    ["chat.getPermalink", (args) => this.permalink(args)],
    ["views.open", (args) => this.openView(args)],
    ["views.push", (args) => this.pushView(args)],
    ["views.update", (args) => this.updateView(args)],
    ["conversations.info", (args) => this.conversationInfo(args)],
    ["conversations.history", (args) => this.history(args)],
    ["conversations.replies", (args) => this.replies(args)],
    ["users.info", (args) => this.userInfo(args)],
    ["usergroups.users.list", (args) => this.usergroupMembers(args)],
    ["files.getUploadURLExternal", (args) => this.startUpload(args)],
    ["files.completeUploadExternal", (args) => this.completeUploads(args)],
  ]);

  constructor(private readonly options: WorkspaceOptions) {
    this.identity = options.identity;
    this.triggers = new TriggerRegistry(options.triggerTtlMs);
  }

  /** Runs a method for a caller holding `token`; returns the response body. */
  call(method: string, args: JsonObject, token: string | undefined): JsonObject {
    const extra = this.extraMethods.get(method);
    if (extra !== undefined) return extra({ token, args });
    const handler = this.methods.get(method);
    if (handler === undefined) return { ok: false, error: "unknown_method", req_method: method };
    try {
      this.authenticate(token);
      return { ok: true, ...handler(args) };
    } catch (error) {
      if (!(error instanceof SlackApiError)) throw error;
      const body: JsonObject = { ok: false, error: error.code };
      if (error.messages.length > 0) body.response_metadata = { messages: [...error.messages] };
      return body;
    }
  }

  message(channel: string, ts: string): FakeMessage | undefined {
    return this.messages.find((message) => message.channel === channel && message.ts === ts);
  }

  view(idOrExternalId: string): FakeView | undefined {
    return this.views.find(
      (view) =>
        view.id === idOrExternalId ||
        (view.external_id !== "" && view.external_id === idOrExternalId),
    );
  }

  upload(id: string): FakeUpload | undefined {
    return this.uploads.find((upload) => upload.id === id);
  }

  addUsergroup(id: string, userIds: readonly string[]): void {
    this.usergroups.set(id, [...userIds]);
  }

  addUser(input: NewUser): void {
    const name = input.name ?? input.id.toLowerCase();
    const realName = input.realName ?? name;
    const profile: FakeUser["profile"] = { real_name: realName, display_name: name };
    if (input.email !== undefined) profile.email = input.email;
    this.users.set(input.id, {
      ...this.syntheticUser(input.id),
      name,
      real_name: realName,
      deleted: input.deleted ?? false,
      tz: input.tz ?? "UTC",
      is_admin: input.isAdmin ?? false,
      is_bot: input.isBot ?? false,
      profile,
    });
  }

  user(id: string): FakeUser {
    return this.users.get(id) ?? this.syntheticUser(id);
  }

  addChannel(input: NewChannel): void {
    this.channels.set(input.id, {
      ...this.syntheticChannel(input.id),
      name: input.name,
      is_private: input.isPrivate ?? false,
      is_group: input.isPrivate ?? false,
      is_member: input.isMember ?? true,
    });
  }

  private authenticate(token: string | undefined): void {
    if (token === undefined || token === "") throw new SlackApiError("not_authed");
    if (token !== this.options.botToken) throw new SlackApiError("invalid_auth");
  }

  // --- auth ---------------------------------------------------------------

  private authTest(): JsonObject {
    return {
      url: `https://${this.identity.teamDomain}.slack.com/`,
      team: this.identity.teamName,
      user: this.identity.botUserName,
      team_id: this.identity.teamId,
      user_id: this.identity.botUserId,
      bot_id: this.identity.botId,
      is_enterprise_install: false,
    };
  }

  // --- chat ---------------------------------------------------------------

  private postMessage(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const content = readMessageContent(args);
    if (!hasContent(content, args)) throw new SlackApiError("no_text");
    if (!channel.is_member) throw new SlackApiError("not_in_channel");
    const message: FakeMessage = {
      channel: channel.id,
      ts: this.clock.next(),
      text: content.text ?? "",
      blocks: content.blocks ?? [],
      user: this.identity.botUserId,
      bot_id: this.identity.botId,
      app_id: this.identity.appId,
    };
    if (content.attachments !== undefined) message.attachments = content.attachments;
    if (content.metadata !== undefined && Object.keys(content.metadata).length > 0) {
      message.metadata = content.metadata;
    }
    const threadTs = stringArg(args, "thread_ts");
    if (threadTs !== undefined) message.thread_ts = threadTs;
    this.messages.push(message);
    return { channel: message.channel, ts: message.ts, message: this.messageObject(message) };
  }

  private updateMessage(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const message = this.existingMessage(channel.id, args.ts);
    const content = readMessageContent(args);
    if (!hasContent(content, args)) throw new SlackApiError("no_text");
    if (content.text !== undefined) message.text = content.text;
    if (content.blocks !== undefined) message.blocks = content.blocks;
    if (content.attachments !== undefined) message.attachments = content.attachments;
    if (content.metadata !== undefined) this.replaceMetadata(message, content.metadata);
    message.edited = { user: this.identity.botUserId, ts: this.clock.next() };
    return {
      channel: message.channel,
      ts: message.ts,
      text: message.text,
      message: this.messageObject(message),
    };
  }

  private deleteMessage(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const message = this.existingMessage(channel.id, args.ts);
    this.messages.splice(this.messages.indexOf(message), 1);
    return { channel: message.channel, ts: message.ts };
  }

  private postEphemeral(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const user = stringArg(args, "user");
    if (user === undefined) throw new SlackApiError("user_not_in_channel");
    const content = readMessageContent(args);
    if (!hasContent(content, args)) throw new SlackApiError("no_text");
    const ephemeral: FakeEphemeral = {
      channel: channel.id,
      user,
      message_ts: this.clock.next(),
      text: content.text ?? "",
      blocks: content.blocks ?? [],
    };
    const threadTs = stringArg(args, "thread_ts");
    if (threadTs !== undefined) ephemeral.thread_ts = threadTs;
    this.ephemerals.push(ephemeral);
    return { message_ts: ephemeral.message_ts };
  }

  private permalink(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const message = this.existingMessage(channel.id, args.message_ts);
    const path = `archives/${message.channel}/p${message.ts.replace(".", "")}`;
    return {
      channel: message.channel,
      permalink: `https://${this.identity.teamDomain}.slack.com/${path}`,
    };
  }

  private existingMessage(channel: string, ts: unknown): FakeMessage {
    const message = typeof ts === "string" ? this.message(channel, ts) : undefined;
    if (message === undefined) throw new SlackApiError("message_not_found");
    return message;
  }

  private replaceMetadata(message: FakeMessage, metadata: JsonObject): void {
    if (Object.keys(metadata).length === 0) delete message.metadata;
    else message.metadata = metadata;
  }

  private messageObject(message: FakeMessage): JsonObject {
    return {
      ...messageObject(message, this.identity.teamId),
      blocks: message.blocks.length > 0 ? message.blocks : undefined,
      attachments: message.attachments,
      edited: message.edited,
      bot_profile: {
        id: this.identity.botId,
        app_id: this.identity.appId,
        name: this.identity.botUserName,
        team_id: this.identity.teamId,
      },
    };
  }

  // --- conversations: reading messages back ---------------------------------

  /**
   * conversations.history: the channel's top-level messages (thread replies are not listed),
   * newest first, between `oldest` and `latest` (exclusive unless `inclusive`), `limit` per page
   * with a cursor. Metadata only with `include_all_metadata`.
   */
  private history(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    if (!channel.is_member) throw new SlackApiError("not_in_channel");
    const inRange = timeRange(args);
    const listed = this.messages
      .filter(
        (m) => m.channel === channel.id && (m.thread_ts === undefined || m.thread_ts === m.ts),
      )
      .filter((m) => inRange(m.ts))
      .sort((a, b) => compareTs(b.ts, a.ts));
    return this.page(listed, args, 100);
  }

  /** conversations.replies: a thread's parent and its replies, oldest first. */
  private replies(args: JsonObject): JsonObject {
    const channel = this.resolveChannel(args.channel);
    const ts = stringArg(args, "ts");
    if (ts === undefined) throw missingArgument("ts");
    const parent = this.message(channel.id, ts);
    if (parent === undefined) throw new SlackApiError("thread_not_found");
    const root = parent.thread_ts ?? parent.ts;
    const inRange = timeRange(args);
    const thread = this.messages
      .filter((m) => m.channel === channel.id && (m.ts === root || m.thread_ts === root))
      .filter((m) => m.ts === root || inRange(m.ts))
      .sort((a, b) => compareTs(a.ts, b.ts));
    return this.page(thread, args, 1000);
  }

  private page(messages: FakeMessage[], args: JsonObject, defaultLimit: number): JsonObject {
    const limit = Math.min(Math.max(Number(args.limit ?? defaultLimit) || defaultLimit, 1), 999);
    const cursor = stringArg(args, "cursor");
    const offset = cursor === undefined ? 0 : Number(Buffer.from(cursor, "base64").toString());
    if (!Number.isInteger(offset) || offset < 0) throw new SlackApiError("invalid_cursor");
    const withMetadata = args.include_all_metadata === true || args.include_all_metadata === "true";
    const slice = messages.slice(offset, offset + limit).map((message) => {
      const object = this.messageObject(message);
      if (message.files !== undefined) object.files = structuredClone(message.files);
      if (!withMetadata) delete object.metadata;
      return object;
    });
    const more = offset + limit < messages.length;
    return {
      messages: slice,
      has_more: more,
      response_metadata: {
        next_cursor: more ? Buffer.from(String(offset + limit)).toString("base64") : "",
      },
    };
  }

  // --- views --------------------------------------------------------------

  private openView(args: JsonObject): JsonObject {
    const triggerId = this.requireTrigger(args);
    const input = readModalView(args.view);
    this.ensureExternalIdFree(input.external_id, undefined);
    this.triggers.exchange(triggerId);
    const view = this.createView(input, undefined);
    this.viewStacks.set(view.id, [view.id]);
    return { view: structuredClone(view) };
  }

  private pushView(args: JsonObject): JsonObject {
    const triggerId = this.requireTrigger(args);
    const input = readModalView(args.view);
    this.ensureExternalIdFree(input.external_id, undefined);
    const trigger = this.triggers.exchange(triggerId);
    const stack = this.stackFor(trigger.viewId);
    if (stack.length >= MAX_VIEW_STACK) throw new SlackApiError("push_limit_reached");
    const view = this.createView(input, stack);
    stack.push(view.id);
    return { view: structuredClone(view) };
  }

  private updateView(args: JsonObject): JsonObject {
    const input = readModalView(args.view);
    const view = this.targetView(args);
    const hash = stringArg(args, "hash");
    if (hash !== undefined && hash !== view.hash) throw new SlackApiError("hash_conflict");
    this.ensureExternalIdFree(input.external_id, view.id);
    Object.assign(view, input, { hash: viewHash() });
    return { view: structuredClone(view) };
  }

  private requireTrigger(args: JsonObject): string {
    const triggerId = stringArg(args, "trigger_id") ?? stringArg(args, "interactivity_pointer");
    if (triggerId === undefined) throw missingArgument("trigger_id");
    return triggerId;
  }

  private targetView(args: JsonObject): FakeView {
    const viewId = stringArg(args, "view_id");
    const externalId = stringArg(args, "external_id");
    if (viewId === undefined && externalId === undefined) throw missingArgument("view_id");
    const view = this.views.find((candidate) =>
      viewId !== undefined ? candidate.id === viewId : candidate.external_id === externalId,
    );
    if (view === undefined) throw new SlackApiError("not_found");
    return view;
  }

  private ensureExternalIdFree(externalId: string, ownerViewId: string | undefined): void {
    if (externalId === "") return;
    const owner = this.views.find((view) => view.external_id === externalId);
    if (owner !== undefined && owner.id !== ownerViewId) {
      throw new SlackApiError("duplicate_external_id");
    }
  }

  /** The stack a pushed view joins: the one holding the trigger's view, else the latest opened. */
  private stackFor(viewId: string | undefined): string[] {
    const stacks = [...this.viewStacks.values()];
    const stack =
      viewId === undefined ? stacks.at(-1) : stacks.find((candidate) => candidate.includes(viewId));
    if (stack === undefined) throw new SlackApiError("not_found");
    return stack;
  }

  private createView(input: ModalInput, stack: readonly string[] | undefined): FakeView {
    const id = this.viewIds.take();
    const view: FakeView = {
      id,
      team_id: this.identity.teamId,
      type: "modal",
      ...input,
      state: { values: {} },
      hash: viewHash(),
      root_view_id: stack?.[0] ?? id,
      previous_view_id: stack?.at(-1) ?? null,
      app_id: this.identity.appId,
      app_installed_team_id: this.identity.teamId,
      bot_id: this.identity.botId,
    };
    this.views.push(view);
    return view;
  }

  // --- conversations, users, user groups -----------------------------------

  private conversationInfo(args: JsonObject): JsonObject {
    return { channel: { ...this.resolveChannel(args.channel) } };
  }

  private userInfo(args: JsonObject): JsonObject {
    const id = stringArg(args, "user");
    if (id === undefined || (!this.users.has(id) && !/^[UW][A-Z0-9]+$/.test(id))) {
      throw new SlackApiError("user_not_found");
    }
    return { user: structuredClone(this.user(id)) };
  }

  private usergroupMembers(args: JsonObject): JsonObject {
    const id = stringArg(args, "usergroup");
    if (id === undefined) throw missingArgument("usergroup");
    const members = this.usergroups.get(id);
    if (members === undefined) throw new SlackApiError("no_such_subteam");
    return { users: [...members] };
  }

  /** Channel IDs are accepted as given; `#name` and names must be registered; user IDs open a DM. */
  private resolveChannel(raw: unknown): FakeChannel {
    if (typeof raw !== "string" || raw.trim() === "") throw new SlackApiError("channel_not_found");
    const name = raw.replace(/^#/, "");
    const known =
      this.channels.get(raw) ??
      [...this.channels.values()].find((channel) => channel.name === name);
    if (known !== undefined) return known;
    if (raw.startsWith("#")) throw new SlackApiError("channel_not_found");
    const channel = /^[UW][A-Z0-9]+$/.test(raw)
      ? { ...this.syntheticChannel(`D${raw.slice(1)}`), name: raw, is_channel: false, is_im: true }
      : this.syntheticChannel(raw);
    this.channels.set(channel.id, channel);
    return channel;
  }

  private syntheticChannel(id: string): FakeChannel {
    return {
      id,
      name: id.toLowerCase(),
      is_channel: true,
      is_group: id.startsWith("G"),
      is_im: id.startsWith("D"),
      is_private: id.startsWith("G"),
      is_member: true,
      is_archived: false,
      created: 1_700_000_000,
    };
  }

  private syntheticUser(id: string): FakeUser {
    const name = id.toLowerCase();
    return {
      id,
      team_id: this.identity.teamId,
      name,
      real_name: name,
      deleted: false,
      tz: "UTC",
      tz_offset: 0,
      is_admin: false,
      is_bot: false,
      profile: { real_name: name, display_name: name },
    };
  }

  // --- files --------------------------------------------------------------

  private startUpload(args: JsonObject): JsonObject {
    const filename = stringArg(args, "filename");
    if (filename === undefined) throw missingArgument("filename");
    const length = numberArg(args, "length");
    if (length === undefined || length < 1) throw missingArgument("length");
    const upload: FakeUpload = {
      id: this.fileIds.take(),
      filename,
      title: filename,
      length,
      completed: false,
    };
    this.uploads.push(upload);
    return {
      upload_url: `${this.options.baseUrl()}${UPLOAD_PREFIX}${upload.id}`,
      file_id: upload.id,
    };
  }

  private completeUploads(args: JsonObject): JsonObject {
    const files = args.files;
    if (!Array.isArray(files) || files.length === 0) throw missingArgument("files");
    const channelArg = stringArg(args, "channel_id") ?? stringArg(args, "channels")?.split(",")[0];
    const channel = channelArg === undefined ? undefined : this.resolveChannel(channelArg);
    const completed = files.map((file) => this.completeUpload(file, channel?.id, args));
    return { files: completed };
  }

  private completeUpload(file: unknown, channel: string | undefined, args: JsonObject): JsonObject {
    const upload = isObject(file) && typeof file.id === "string" ? this.upload(file.id) : undefined;
    if (upload?.content === undefined || upload.completed)
      throw new SlackApiError("file_not_found");
    upload.completed = true;
    if (isObject(file) && typeof file.title === "string") upload.title = file.title;
    if (channel !== undefined) upload.channel = channel;
    upload.initial_comment = stringArg(args, "initial_comment");
    upload.thread_ts = stringArg(args, "thread_ts");
    if (channel !== undefined) {
      // Sharing a file posts a message from the app that carries it, in the thread if given.
      const message: FakeMessage = {
        channel,
        ts: this.clock.next(),
        text: upload.initial_comment ?? "",
        blocks: [],
        files: [{ id: upload.id, name: upload.filename, title: upload.title }],
        user: this.identity.botUserId,
        bot_id: this.identity.botId,
        app_id: this.identity.appId,
      };
      if (upload.thread_ts !== undefined) message.thread_ts = upload.thread_ts;
      this.messages.push(message);
    }
    return {
      id: upload.id,
      name: upload.filename,
      title: upload.title,
      size: upload.content.length,
      channels: channel === undefined ? [] : [channel],
    };
  }
}

// ---------------------------------------------------------------------------
// HTTP: parsing requests and routing
// ---------------------------------------------------------------------------

const API_PREFIX = "/api/";
const UPLOAD_PREFIX = "/upload/v1/";
const RESPONSE_URL_PREFIX = "/commands/";
const DEFAULT_TRIGGER_TTL_MS = 3000;

/** Fields @slack/web-api JSON-encodes inside a form body. */
const JSON_ENCODED_FIELDS = new Set([
  "attachments",
  "blocks",
  "files",
  "metadata",
  "profile",
  "unfurls",
  "user_auth_blocks",
  "view",
]);

interface ApiRequest {
  method: string;
  args: JsonObject;
  token: string | undefined;
  /** A body Slack could not read, answered with this error. */
  bodyError?: string;
}

function parseApiRequest(req: RecordedRequest): ApiRequest {
  const method = decodeURIComponent(req.path.slice(API_PREFIX.length));
  const contentType = mediaType(req.headers["content-type"]);
  const bearer = bearerToken(req.headers.authorization);
  const queryArgs = decodeForm(req.query);
  try {
    const bodyArgs = parseBody(req.body, contentType, req.headers["content-type"]);
    const args = { ...queryArgs, ...bodyArgs };
    const bodyToken = contentType === "application/json" ? undefined : stringArg(args, "token");
    delete args.token;
    return { method, args, token: bearer ?? bodyToken };
  } catch (error) {
    if (!(error instanceof SlackApiError)) throw error;
    return { method, args: queryArgs, token: bearer, bodyError: error.code };
  }
}

function parseBody(
  body: string,
  contentType: string,
  rawContentType: string | undefined,
): JsonObject {
  if (body === "") return {};
  switch (contentType) {
    case "application/x-www-form-urlencoded":
      return decodeForm(new URLSearchParams(body));
    case "application/json":
      return parseJsonBody(body);
    case "multipart/form-data":
      return parseMultipart(body, rawContentType ?? contentType);
    case "":
      throw new SlackApiError("missing_post_type");
    default:
      throw new SlackApiError("invalid_post_type");
  }
}

function parseJsonBody(body: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new SlackApiError("invalid_json");
  }
  if (!isObject(parsed)) throw new SlackApiError("invalid_json");
  return parsed;
}

function parseMultipart(body: string, contentType: string): JsonObject {
  const args: JsonObject = {};
  for (const part of multipartParts(body, contentType))
    args[part.name] = decodeField(part.name, part.value);
  return args;
}

interface MultipartPart {
  name: string;
  value: string;
}

/** Splits a multipart/form-data body into its named parts (text content only). */
function multipartParts(body: string, contentType: string): MultipartPart[] {
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  if (boundary === undefined) throw new SlackApiError("invalid_form_data");
  return body
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((part) => {
      const separator = part.indexOf("\r\n\r\n");
      const head = part.slice(0, separator);
      const value = part.slice(separator + 4).replace(/\r\n$/, "");
      return { name: /name="([^"]*)"/.exec(head)?.[1] ?? "", value };
    });
}

function decodeForm(params: URLSearchParams): JsonObject {
  const args: JsonObject = {};
  for (const [name, value] of params) args[name] = decodeField(name, value);
  return args;
}

function decodeField(name: string, value: string): unknown {
  if (!JSON_ENCODED_FIELDS.has(name)) return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

function mediaType(header: string | undefined): string {
  return (header ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)$/i.exec(header ?? "");
  return match?.[1];
}

interface ApiOutcome {
  status: number;
  headers: Record<string, string>;
  body: JsonObject;
}

function failureOutcome(failure: SlackFailure): ApiOutcome {
  if (typeof failure === "string")
    return { status: 200, headers: {}, body: { ok: false, error: failure } };
  const headers: Record<string, string> =
    failure.status === 429 ? { "retry-after": String(failure.retryAfter ?? 1) } : {};
  return {
    status: failure.status,
    headers,
    body: { ok: false, error: httpErrorCode(failure.status) },
  };
}

function httpErrorCode(status: number): string {
  if (status === 429) return "ratelimited";
  if (status === 503) return "service_unavailable";
  return "fatal_error";
}

/** Failures queued by `failNext`, consumed one call at a time. */
/** response_urls handed out with slash commands and interactions, and what was posted to them. */
class ResponseUrlInbox {
  readonly posts = new ObservableList<ResponseUrlPost>();
  private readonly issued = new Set<string>();
  private sequence = 0;

  constructor(private readonly teamId: string) {}

  issue(baseUrl: string): string {
    this.sequence += 1;
    const path = `${RESPONSE_URL_PREFIX}${this.teamId}/${String(this.sequence)}/${randomBytes(12).toString("hex")}`;
    this.issued.add(path);
    return `${baseUrl}${path}`;
  }

  receive(req: RecordedRequest, baseUrl: string): boolean {
    if (!this.issued.has(req.path)) return false;
    const contentType = mediaType(req.headers["content-type"]);
    const body =
      contentType === "application/json"
        ? parseJsonBody(req.body)
        : parseJsonBody(new URLSearchParams(req.body).get("payload") ?? "{}");
    this.posts.push({ url: `${baseUrl}${req.path}`, body, at: req.at });
    return true;
  }
}

interface FakeSlackContext {
  workspace: SlackWorkspace;
  calls: ObservableList<SlackCall>;
  /** Failures queued for the next calls to a Web API method, one call each, in order. */
  failures: FaultQueue<string, SlackFailure, string>;
  responses: ResponseUrlInbox;
  baseUrl: () => string;
}

/** Serves one request; a fault in the fake itself answers 500 with its message. */
function route(req: RecordedRequest, res: ServerResponse, ctx: FakeSlackContext): void {
  try {
    if (req.path.startsWith(API_PREFIX)) handleApiCall(req, res, ctx);
    else if (req.path.startsWith(UPLOAD_PREFIX)) handleUpload(req, res, ctx.workspace);
    else if (req.path.startsWith(RESPONSE_URL_PREFIX)) handleResponseUrl(req, res, ctx);
    else sendJson(res, 404, { ok: false, error: "not_found" });
  } catch (error) {
    sendJson(res, 500, { ok: false, error: "fake_slack_fault", detail: String(error) });
  }
}

function handleApiCall(req: RecordedRequest, res: ServerResponse, ctx: FakeSlackContext): void {
  const request = parseApiRequest(req);
  const outcome = answer(request, ctx);
  const error = typeof outcome.body.error === "string" ? outcome.body.error : undefined;
  const call: SlackCall = {
    method: request.method,
    args: request.args,
    at: req.at,
    ok: outcome.body.ok === true,
  };
  if (error !== undefined) call.error = error;
  ctx.calls.push(call);
  sendJson(res, outcome.status, outcome.body, outcome.headers);
}

function answer(request: ApiRequest, ctx: FakeSlackContext): ApiOutcome {
  const failure = ctx.failures.take(request.method);
  if (failure !== undefined) return failureOutcome(failure);
  if (request.bodyError !== undefined) {
    return { status: 200, headers: {}, body: { ok: false, error: request.bodyError } };
  }
  return {
    status: 200,
    headers: {},
    body: ctx.workspace.call(request.method, request.args, request.token),
  };
}

/** The upload URL step of files.uploadV2: the client posts the bytes (multipart or raw). */
function handleUpload(req: RecordedRequest, res: ServerResponse, workspace: SlackWorkspace): void {
  const upload = workspace.upload(req.path.slice(UPLOAD_PREFIX.length));
  if (upload === undefined) {
    res.writeHead(404).end();
    return;
  }
  upload.content = uploadedContent(req);
  const text = `OK - ${String(Buffer.byteLength(upload.content))}`;
  res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end(text);
}

function uploadedContent(req: RecordedRequest): string {
  const contentType = req.headers["content-type"] ?? "";
  if (mediaType(contentType) !== "multipart/form-data") return req.body;
  return multipartParts(req.body, contentType)[0]?.value ?? "";
}

function handleResponseUrl(req: RecordedRequest, res: ServerResponse, ctx: FakeSlackContext): void {
  if (ctx.responses.receive(req, ctx.baseUrl())) sendJson(res, 200, { ok: true });
  else sendJson(res, 404, { ok: false, error: "expired_url" });
}

// ---------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------

function identityFor(options: FakeSlackOptions): SlackIdentity {
  return {
    teamId: options.teamId ?? "T0000VMBOT",
    teamName: "vmbot test workspace",
    teamDomain: options.teamDomain ?? "vmbot-test",
    botUserId: "U0000VMBOT",
    botUserName: "vmbot",
    botId: "B0000VMBOT",
    appId: "A0000VMBOT",
  };
}

function describeCalls(calls: readonly SlackCall[]): string {
  if (calls.length === 0) return "none";
  return calls
    .map((call) => (call.ok ? call.method : `${call.method} (${call.error ?? "failed"})`))
    .join(", ");
}

/** Starts the fake Slack Web API on a free loopback port. */
export async function startFakeSlack(options: FakeSlackOptions): Promise<FakeSlack> {
  let baseUrl = "";
  const identity = identityFor(options);
  const ctx: FakeSlackContext = {
    workspace: new SlackWorkspace({
      botToken: options.botToken,
      triggerTtlMs: options.triggerTtlMs ?? DEFAULT_TRIGGER_TTL_MS,
      identity,
      baseUrl: () => baseUrl,
    }),
    calls: new ObservableList<SlackCall>(),
    failures: new FaultQueue<string, SlackFailure, string>((queued, method) => queued === method),
    responses: new ResponseUrlInbox(identity.teamId),
    baseUrl: () => baseUrl,
  };
  const server = await startFakeServer((req, res) => {
    route(req, res, ctx);
  });
  baseUrl = server.url;
  const { workspace, calls, responses } = ctx;

  return {
    url: server.url,
    apiUrl: `${server.url}${API_PREFIX}`,
    identity,
    calls: calls.items,
    callsTo: (method) => calls.items.filter((call) => call.method === method),
    waitFor: (method, predicate, timeoutMs = 5000) =>
      calls.waitFor(
        (call) => call.method === method && (predicate?.(call) ?? true),
        timeoutMs,
        () =>
          `No ${method} call${predicate === undefined ? "" : " matching the predicate"} within ${String(timeoutMs)} ms; calls so far: ${describeCalls(calls.items)}`,
      ),
    issueTriggerId: (issue) => workspace.triggers.issue(issue?.viewId),
    issueResponseUrl: () => responses.issue(baseUrl),
    messages: workspace.messages,
    message: (channel, ts) => workspace.message(channel, ts),
    ephemerals: workspace.ephemerals,
    views: workspace.views,
    view: (idOrExternalId) => workspace.view(idOrExternalId),
    uploads: workspace.uploads,
    responses: responses.posts.items,
    waitForResponse: (predicate = () => true, timeoutMs = 5000) =>
      responses.posts.waitFor(
        predicate,
        timeoutMs,
        () =>
          `No response_url post within ${String(timeoutMs)} ms; ${String(responses.posts.items.length)} received`,
      ),
    failNext: (method, failure) => {
      ctx.failures.add(method, failure);
    },
    addUsergroup: (id, userIds) => {
      workspace.addUsergroup(id, userIds);
    },
    addUser: (user) => {
      workspace.addUser(user);
    },
    user: (id) => workspace.user(id),
    addChannel: (channel) => {
      workspace.addChannel(channel);
    },
    addMethod: (method, handler) => {
      workspace.extraMethods.set(method, handler);
    },
    onChange: (listener) => {
      const stops = [calls.subscribe(listener), responses.posts.subscribe(listener)];
      return () => {
        for (const stop of stops) stop();
      };
    },
    close: () => server.close(),
  };
}
