/**
 * Block Kit to HTML for the sandbox's channel page: the exact JSON the bot sends Slack (message
 * blocks, modal views, mrkdwn text) shown the way Slack shows it, for the subset of Block Kit that
 * vmbot uses. Pure string functions without imports, so the same module runs in Node and, as
 * compiled, in the page.
 *
 * Everything read from the JSON is HTML-escaped: the only markup in the output is the markup
 * written here. Anything this renderer does not know comes out as a labelled placeholder, never
 * as nothing. Buttons and inputs carry their Slack identifiers as data attributes (`data-block-id`,
 * `data-action-id`, `data-value`, `data-confirm`, `data-option`) from which the page builds
 * `block_actions` and `view_submission` payloads.
 */

/** What a person typed or chose so far, shaped as Slack's `view.state.values`. */
export type StateValues = Readonly<Record<string, Readonly<Record<string, StateValue>>>>;

export interface StateValue {
  type?: string;
  value?: string | null;
  selected_option?: { value: string } | null;
}

export interface RenderOptions {
  /** A user's display name for `<@U…>`, without the `@`; the user ID is shown when undefined. */
  userName?: (id: string) => string | undefined;
  /** A channel's name for `<#C…>`, without the `#`; the channel ID is shown when undefined. */
  channelName?: (id: string) => string | undefined;
  /** Errors keyed by block_id, as a `response_action: "errors"` answer carries them. */
  errors?: Readonly<Record<string, string>>;
  /** Values that replace the inputs' initial ones, e.g. to re-render a form the bot refused. */
  values?: StateValues;
  /** Lets `{date_pretty}` say "today" and `{ago}` count; without it dates are shown in full. */
  now?: Date;
}

export interface MessageOptions extends RenderOptions {
  /** Marks a message only its recipient sees (a `response_type: "ephemeral"` answer). */
  ephemeral?: boolean;
  /** Where an uploaded file can be opened, by file ID; the file is shown unlinked otherwise. */
  fileUrl?: (id: string) => string | undefined;
}

type Json = Readonly<Record<string, unknown>>;

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const stringOf = (value: unknown): string | undefined =>
  typeof value === "string" ? value : undefined;
const listOf = (value: unknown): readonly unknown[] =>
  Array.isArray(value) ? (value as readonly unknown[]) : [];
const textOf = (object: unknown): string | undefined =>
  isObject(object) ? stringOf(object.text) : undefined;

// --- HTML ---------------------------------------------------------------------------------------

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text as HTML that shows it and never parses it, in element content and quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char);
}

type AttributeValue = string | number | boolean | undefined;

/** ` name="value"` pairs, values escaped; `true` writes the bare name, `false` and undefined nothing. */
function attributes(pairs: Readonly<Record<string, AttributeValue>>): string {
  return Object.entries(pairs)
    .map(([name, value]) => {
      if (value === undefined || value === false) return "";
      if (value === true) return ` ${name}`;
      return ` ${name}="${escapeHtml(String(value))}"`;
    })
    .join("");
}

/** An http(s) or mailto URL, the only kind a Slack link opens; undefined for anything else. */
function safeHref(url: string): string | undefined {
  const trimmed = url.trim();
  return /^(https?:\/\/|mailto:)[^\s]/i.test(trimmed) ? trimmed : undefined;
}

const link = (href: string, inner: string) =>
  `<a class="bk-link"${attributes({ href, target: "_blank", rel: "noopener noreferrer" })}>${inner}</a>`;

// --- emoji --------------------------------------------------------------------------------------

/** The shortcodes vmbot writes, as Slack draws them. Others are shown as typed. */
export const EMOJI: Readonly<Record<string, string>> = {
  alarm_clock: "\u23f0",
  busts_in_silhouette: "\u{1f465}",
  robot_face: "\u{1f916}",
  eyes: "\u{1f440}",
  fire: "\u{1f525}",
  gear: "\u2699\ufe0f",
  heavy_multiplication_x: "\u2716\ufe0f",
  hourglass: "\u231b",
  hourglass_flowing_sand: "\u23f3",
  large_green_circle: "\u{1f7e2}",
  leftwards_arrow_with_hook: "\u21a9\ufe0f",
  lock: "\u{1f512}",
  mag: "\u{1f50d}",
  no_entry_sign: "\u{1f6ab}",
  red_circle: "\u{1f534}",
  rotating_light: "\u{1f6a8}",
  unlock: "\u{1f513}",
  warning: "\u26a0\ufe0f",
  wastebasket: "\u{1f5d1}\ufe0f",
  white_check_mark: "\u2705",
  white_circle: "\u26aa",
  wrench: "\u{1f527}",
  x: "\u274c",
};

const SHORTCODE = /:([a-z0-9_+'-]+):/g;

/** Known shortcodes replaced by their emoji; the text stays raw (not yet escaped). */
function emojify(text: string): string {
  return text.replace(SHORTCODE, (whole, name: string) => EMOJI[name] ?? whole);
}

// --- dates --------------------------------------------------------------------------------------

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const DAY_MS = 86_400_000;

const two = (n: number) => String(n).padStart(2, "0");

function ordinal(n: number): string {
  const teen = n % 100 >= 11 && n % 100 <= 13;
  const suffix = teen ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

function relativeDay(at: Date, now: Date | undefined): string | undefined {
  if (now === undefined) return undefined;
  const days = Math.floor(at.getTime() / DAY_MS) - Math.floor(now.getTime() / DAY_MS);
  return days === 0 ? "today" : days === -1 ? "yesterday" : days === 1 ? "tomorrow" : undefined;
}

function ago(at: Date, now: Date): string {
  const seconds = Math.round((now.getTime() - at.getTime()) / 1000);
  const span = Math.abs(seconds);
  const [count, unit] =
    span < 60
      ? [span, "second"]
      : span < 3600
        ? [Math.floor(span / 60), "minute"]
        : span < DAY_MS / 1000
          ? [Math.floor(span / 3600), "hour"]
          : [Math.floor(span / (DAY_MS / 1000)), "day"];
  const amount = `${count} ${unit}${count === 1 ? "" : "s"}`;
  return seconds >= 0 ? `${amount} ago` : `in ${amount}`;
}

/**
 * A `<!date^…>` format with its tokens filled in, in UTC: `{date_num}` 2026-12-02, `{date}`
 * December 2nd, 2026, `{date_short}` Dec 2, 2026, `{date_long}` Wednesday, December 2nd, 2026,
 * their `_pretty` forms (today / yesterday / tomorrow when `now` is given), `{time}` 10:00 UTC,
 * `{time_secs}` 10:00:05 UTC and `{ago}`. Unknown tokens are left as written.
 */
export function formatSlackDate(unixSeconds: number, format: string, now?: Date): string {
  const at = new Date(unixSeconds * 1000);
  const month = MONTHS[at.getUTCMonth()] ?? "";
  const day = at.getUTCDate();
  const year = at.getUTCFullYear();
  const forms: Readonly<Record<string, string>> = {
    date_num: `${year}-${two(at.getUTCMonth() + 1)}-${two(day)}`,
    date: `${month} ${ordinal(day)}, ${year}`,
    date_short: `${month.slice(0, 3)} ${day}, ${year}`,
    date_long: `${WEEKDAYS[at.getUTCDay()] ?? ""}, ${month} ${ordinal(day)}, ${year}`,
    time: `${two(at.getUTCHours())}:${two(at.getUTCMinutes())} UTC`,
    time_secs: `${two(at.getUTCHours())}:${two(at.getUTCMinutes())}:${two(at.getUTCSeconds())} UTC`,
  };
  return format.replace(/\{([a-z_]+)\}/g, (token, name: string) => {
    const pretty = /^(date(?:_short|_long)?)_pretty$/.exec(name);
    if (pretty?.[1] !== undefined) return relativeDay(at, now) ?? forms[pretty[1]] ?? token;
    if (name === "ago") {
      return now === undefined ? `${forms.date_short ?? ""} ${forms.time ?? ""}` : ago(at, now);
    }
    return forms[name] ?? token;
  });
}

// --- mrkdwn -------------------------------------------------------------------------------------

/** One unit of a line: a character, or markup already rendered (code, link, mention, emoji). */
type Atom = { kind: "char"; char: string } | { kind: "html"; html: string };

const EMPHASIS: Readonly<Record<string, string>> = { "*": "strong", _: "em", "~": "del" };
const WORD = /[\p{L}\p{N}]/u;
const SPACE = /\s/u;

const ENTITY = /&(amp|lt|gt);/y;
const CODE = /`([^`]+)`/y;
const CONTROL = /<([^<>]*)>/y;
const EMOJI_CODE = /:([a-z0-9_+'-]+):/y;
const BARE_URL = /https?:\/\/(?:(?!&lt;|&gt;)[^\s<>`|])+/y;

/** Slack's three entities back to characters; any other `&…;` is text as typed. */
export function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt);/g, (_whole, name: string) =>
    name === "lt" ? "<" : name === "gt" ? ">" : "&",
  );
}

const escapeText = (raw: string) => escapeHtml(decodeEntities(raw));

function mention(
  kind: "user" | "channel",
  id: string,
  label: string | undefined,
  options: RenderOptions,
) {
  const name =
    (kind === "user" ? options.userName?.(id) : options.channelName?.(id)) ??
    (label === undefined || label === "" ? undefined : label.replace(/^[@#]/, "")) ??
    id;
  const sign = kind === "user" ? "@" : "#";
  const data = kind === "user" ? { "data-user-id": id } : { "data-channel-id": id };
  return `<span class="bk-mention"${attributes(data)}>${sign}${escapeText(name)}</span>`;
}

/** `<!date^unix^format[^link]|fallback>`; the fallback when the time cannot be read. */
function dateHtml(inner: string, fallback: string | undefined, options: RenderOptions) {
  const [, unix, format, url] = inner.split("|")[0]?.split("^") ?? [];
  const seconds = Number(unix);
  if (unix === undefined || format === undefined || !/^-?\d{1,12}$/.test(unix)) {
    return escapeText(fallback ?? `<${inner}>`);
  }
  const at = new Date(seconds * 1000);
  const text = escapeHtml(formatSlackDate(seconds, decodeEntities(format), options.now));
  const time = `<time class="bk-date"${attributes({
    datetime: at.toISOString(),
    title: fallback === undefined ? undefined : decodeEntities(fallback),
  })}>${text}</time>`;
  const href = url === undefined ? undefined : safeHref(decodeEntities(url));
  return href === undefined ? time : link(href, time);
}

/** One `<…>` control sequence: a link, a mention, a broadcast or a date. */
function controlHtml(inner: string, options: RenderOptions): string {
  const bar = inner.indexOf("|");
  const target = bar === -1 ? inner : inner.slice(0, bar);
  const label = bar === -1 ? undefined : inner.slice(bar + 1);
  if (target.startsWith("@")) return mention("user", target.slice(1), label, options);
  if (target.startsWith("#")) return mention("channel", target.slice(1), label, options);
  if (target.startsWith("!")) {
    const parts = target.slice(1).split("^");
    const command = parts[0] ?? "";
    if (command === "here" || command === "channel" || command === "everyone") {
      return `<span class="bk-mention bk-broadcast">@${command}</span>`;
    }
    if (command === "subteam") {
      const name = label ?? `@${parts[1] ?? ""}`;
      return `<span class="bk-mention"${attributes({ "data-usergroup-id": parts[1] })}>${escapeText(name)}</span>`;
    }
    if (command === "date") return dateHtml(inner, label, options);
    return escapeText(label ?? `<${inner}>`);
  }
  const href = safeHref(decodeEntities(target));
  const shown = escapeText(label === undefined || label === "" ? target : label);
  return href === undefined ? shown : link(href, shown);
}

/** The atom a line starts with at `i`, and how many of the line's code units it spans. */
function atomAt(
  line: string,
  i: number,
  verbatim: boolean,
  options: RenderOptions,
): { atom: Atom; length: number } {
  const char = String.fromCodePoint(line.codePointAt(i) ?? 0);
  const match = (pattern: RegExp) => {
    pattern.lastIndex = i;
    return pattern.exec(line);
  };
  const html = (markup: string, length: number) => ({
    atom: { kind: "html" as const, html: markup },
    length,
  });
  if (char === "`") {
    const code = match(CODE);
    if (code !== null) {
      return html(`<code class="bk-code">${escapeText(code[1] ?? "")}</code>`, code[0].length);
    }
  } else if (char === "<") {
    const control = match(CONTROL);
    if (control !== null) return html(controlHtml(control[1] ?? "", options), control[0].length);
  } else if (char === "&") {
    const entity = match(ENTITY);
    if (entity !== null) {
      return { atom: { kind: "char", char: decodeEntities(entity[0]) }, length: entity[0].length };
    }
  } else if (char === ":") {
    const code = match(EMOJI_CODE);
    if (code !== null) {
      const emoji = EMOJI[code[1] ?? ""];
      return html(
        emoji === undefined
          ? escapeHtml(code[0])
          : `<span class="bk-emoji"${attributes({ title: code[0] })}>${emoji}</span>`,
        code[0].length,
      );
    }
  } else if (char === "h" && !verbatim && !WORD.test(line[i - 1] ?? " ")) {
    const bare = match(BARE_URL);
    if (bare !== null) {
      // Punctuation after a URL ends the sentence (or the emphasis) it stands in.
      const url = bare[0].replace(/[.,;:!?)\]}'"*_~]+$/, "");
      return html(link(decodeEntities(url), escapeText(url)), url.length);
    }
  }
  return { atom: { kind: "char", char }, length: char.length };
}

/** A line of mrkdwn as atoms: code spans, control sequences, emoji and bare URLs are whole. */
function atomsOf(line: string, verbatim: boolean, options: RenderOptions): Atom[] {
  const atoms: Atom[] = [];
  for (let i = 0; i < line.length;) {
    const { atom, length } = atomAt(line, i, verbatim, options);
    atoms.push(atom);
    i += length;
  }
  return atoms;
}

const charAt = (atoms: readonly Atom[], index: number): string | undefined => {
  const atom = atoms[index];
  return atom === undefined ? undefined : atom.kind === "char" ? atom.char : "";
};

/** Slack opens `*`, `_` and `~` only after a non-word character and before a non-space. */
function opens(atoms: readonly Atom[], index: number, marker: string): boolean {
  const before = charAt(atoms, index - 1);
  const after = charAt(atoms, index + 1);
  return (
    (before === undefined || (!WORD.test(before) && before !== marker)) &&
    after !== undefined &&
    !SPACE.test(after) &&
    after !== marker
  );
}

/** The marker that closes one opened at `index`: after a non-space, before a non-word character. */
function closer(atoms: readonly Atom[], index: number, end: number, marker: string): number {
  for (let j = index + 2; j < end; j += 1) {
    if (charAt(atoms, j) !== marker) continue;
    const before = charAt(atoms, j - 1) ?? " ";
    const after = charAt(atoms, j + 1);
    if (!SPACE.test(before) && (after === undefined || !WORD.test(after))) return j;
  }
  return -1;
}

function emphasise(atoms: readonly Atom[], start: number, end: number): string {
  let html = "";
  let i = start;
  while (i < end) {
    const atom = atoms[i];
    if (atom === undefined) break;
    if (atom.kind === "html") {
      html += atom.html;
      i += 1;
      continue;
    }
    const tag = EMPHASIS[atom.char];
    const close =
      tag !== undefined && opens(atoms, i, atom.char) ? closer(atoms, i, end, atom.char) : -1;
    if (tag !== undefined && close !== -1) {
      html += `<${tag}>${emphasise(atoms, i + 1, close)}</${tag}>`;
      i = close + 1;
    } else {
      html += escapeHtml(atom.char);
      i += 1;
    }
  }
  return html;
}

/**
 * mrkdwn as Slack renders it: `*bold*`, `_italic_`, `~strike~`, `` `code` ``, ```` ```pre``` ````,
 * `<url|label>` links, `<@U…>` and `<#C…>` mentions, `<!here>`, `<!channel>`, `<!everyone>`,
 * `<!subteam^S…>`, `<!date^…|fallback>`, the entities `&amp;` `&lt;` `&gt;`, emoji shortcodes and
 * (unless `verbatim`) bare URLs. Returns an HTML fragment.
 */
export function renderMrkdwn(text: string, options: RenderOptions = {}, verbatim = false): string {
  const parts = text.split(/```([\s\S]*?)```/);
  return parts
    .map((part, index) => {
      if (index % 2 === 1) {
        const body = part.replace(/^\n/, "").replace(/\n$/, "");
        return `<pre class="bk-pre">${escapeText(body)}</pre>`;
      }
      // A newline next to a preformatted block belongs to the block, as in Slack.
      let lines = part;
      if (index > 0) lines = lines.replace(/^\n/, "");
      if (index < parts.length - 1) lines = lines.replace(/\n$/, "");
      return lines
        .split("\n")
        .map((line) => {
          const atoms = atomsOf(line, verbatim, options);
          return emphasise(atoms, 0, atoms.length);
        })
        .join("<br>");
    })
    .join("");
}

/** plain_text as Slack shows it: as typed, with shortcodes drawn unless `emoji` is false. */
export function renderPlainText(text: string, emoji = true): string {
  return escapeHtml(emoji ? emojify(text) : text);
}

const unknown = (what: string, type: string, tag = "div", blockId?: string) =>
  `<${tag} class="bk-unknown"${attributes({ "data-block-id": blockId })}>Unsupported ${what}: ${escapeHtml(type)}</${tag}>`;

const typeOf = (value: unknown) =>
  isObject(value) ? (stringOf(value.type) ?? "(no type)") : "(not an object)";

/** A text object (`plain_text` or `mrkdwn`) as an HTML fragment. */
export function renderText(object: unknown, options: RenderOptions = {}): string {
  if (isObject(object) && typeof object.text === "string") {
    if (object.type === "plain_text") return renderPlainText(object.text, object.emoji !== false);
    if (object.type === "mrkdwn")
      return renderMrkdwn(object.text, options, object.verbatim === true);
  }
  return unknown("text", typeOf(object), "span");
}

/** A plain_text object's raw text (shortcodes drawn), for attributes and `<option>`s. */
function plainString(object: unknown): string | undefined {
  const text = textOf(object);
  return text === undefined
    ? undefined
    : isObject(object) && object.emoji === false
      ? text
      : emojify(text);
}

// --- elements -----------------------------------------------------------------------------------

const domId = (blockId: string | undefined, actionId: string | undefined) =>
  `bk-${blockId ?? "block"}-${actionId ?? "action"}`.replace(/[^A-Za-z0-9_-]/g, "_");

function current(
  options: RenderOptions,
  blockId: string | undefined,
  actionId: string | undefined,
) {
  if (blockId === undefined || actionId === undefined) return undefined;
  return options.values?.[blockId]?.[actionId];
}

function button(element: Json, blockId: string | undefined, options: RenderOptions): string {
  const style = stringOf(element.style);
  const url = stringOf(element.url);
  const classes = `bk-button${style === "primary" || style === "danger" ? ` bk-button-${style}` : ""}`;
  return `<button${attributes({
    type: "button",
    class: classes,
    "data-element": "button",
    "data-block-id": blockId,
    "data-action-id": stringOf(element.action_id),
    "data-value": stringOf(element.value),
    "data-url": url === undefined ? undefined : safeHref(url),
    "data-confirm": isObject(element.confirm) ? JSON.stringify(element.confirm) : undefined,
  })}>${renderText(element.text, options)}</button>`;
}

interface Field {
  id: string;
  blockId: string | undefined;
  actionId: string | undefined;
  required: boolean;
  invalid: boolean;
}

const fieldAttributes = (field: Field, type: string) => ({
  id: field.id,
  "data-element": type,
  "data-block-id": field.blockId,
  "data-action-id": field.actionId,
  required: field.required,
  "aria-invalid": field.invalid ? "true" : undefined,
});

function textInput(element: Json, field: Field, options: RenderOptions): string {
  const typed = current(options, field.blockId, field.actionId)?.value;
  const value = typed ?? stringOf(element.initial_value) ?? "";
  const common = {
    ...fieldAttributes(field, "plain_text_input"),
    class: "bk-text-input",
    placeholder: plainString(element.placeholder),
    maxlength: typeof element.max_length === "number" ? element.max_length : undefined,
    minlength: typeof element.min_length === "number" ? element.min_length : undefined,
  };
  return element.multiline === true
    ? `<textarea${attributes({ ...common, rows: 4 })}>${escapeHtml(value)}</textarea>`
    : `<input${attributes({ type: "text", ...common, value })}>`;
}

function numberInput(element: Json, field: Field, options: RenderOptions): string {
  const typed = current(options, field.blockId, field.actionId)?.value;
  const decimal = element.is_decimal_allowed === true;
  return `<input${attributes({
    type: "number",
    ...fieldAttributes(field, "number_input"),
    class: "bk-text-input bk-number-input",
    inputmode: decimal ? "decimal" : "numeric",
    step: decimal ? "any" : "1",
    min: stringOf(element.min_value),
    max: stringOf(element.max_value),
    placeholder: plainString(element.placeholder),
    value: typed ?? stringOf(element.initial_value) ?? "",
  })}>`;
}

function staticSelect(element: Json, field: Field, options: RenderOptions): string {
  const chosen =
    current(options, field.blockId, field.actionId)?.selected_option?.value ??
    (isObject(element.initial_option) ? stringOf(element.initial_option.value) : undefined);
  const groups = listOf(element.option_groups).map((group) => ({
    label: isObject(group) ? (plainString(group.label) ?? "") : "",
    options: isObject(group) ? listOf(group.options) : [],
  }));
  const all =
    groups.length > 0 ? groups.flatMap((group) => group.options) : listOf(element.options);
  const selected =
    chosen === undefined ? undefined : all.find((o) => isObject(o) && o.value === chosen);
  const option = (value: unknown) => {
    if (!isObject(value)) return unknown("option", typeOf(value), "option");
    const optionValue = stringOf(value.value) ?? "";
    return `<option${attributes({
      value: optionValue,
      selected: value === selected,
      "data-option": JSON.stringify(value),
    })}>${escapeHtml(plainString(value.text) ?? optionValue)}</option>`;
  };
  const body =
    groups.length > 0
      ? groups
          .map(
            (group) =>
              `<optgroup${attributes({ label: group.label })}>${group.options.map(option).join("")}</optgroup>`,
          )
          .join("")
      : all.map(option).join("");
  const placeholder =
    selected === undefined
      ? `<option value="" disabled selected>${escapeHtml(plainString(element.placeholder) ?? "Select an option")}</option>`
      : "";
  return `<select${attributes({ ...fieldAttributes(field, "static_select"), class: "bk-select" })}>${placeholder}${body}</select>`;
}

/**
 * One interactive element: a button anywhere, or an input block's text, number or select input.
 * `blockId` is the enclosing block's, which a payload for the element names.
 */
export function renderElement(
  element: unknown,
  blockId?: string,
  options: RenderOptions = {},
): string {
  if (!isObject(element)) return unknown("element", typeOf(element), "span");
  const type = stringOf(element.type) ?? "(no type)";
  if (type === "button") return button(element, blockId, options);
  const actionId = stringOf(element.action_id);
  const field: Field = {
    id: domId(blockId, actionId),
    blockId,
    actionId,
    required: false,
    invalid: false,
  };
  return inputElement(type, element, field, options);
}

function inputElement(type: string, element: Json, field: Field, options: RenderOptions): string {
  switch (type) {
    case "plain_text_input":
      return textInput(element, field, options);
    case "number_input":
      return numberInput(element, field, options);
    case "static_select":
      return staticSelect(element, field, options);
    default:
      return unknown("element", type, "span");
  }
}

// --- blocks -------------------------------------------------------------------------------------

const blockOpen = (type: string, blockId: string | undefined, extra = "") =>
  `<div${attributes({ class: `bk-block bk-${type}${extra}`, "data-block-id": blockId })}>`;

function section(block: Json, blockId: string | undefined, options: RenderOptions): string {
  const text =
    block.text === undefined
      ? ""
      : `<div class="bk-section-text">${renderText(block.text, options)}</div>`;
  const fields = listOf(block.fields);
  const fieldHtml =
    fields.length === 0
      ? ""
      : `<div class="bk-fields">${fields.map((field) => `<div class="bk-field">${renderText(field, options)}</div>`).join("")}</div>`;
  const accessory =
    block.accessory === undefined
      ? ""
      : `<div class="bk-accessory">${renderElement(block.accessory, blockId, options)}</div>`;
  return `${blockOpen("section", blockId)}<div class="bk-section-body">${text}${fieldHtml}</div>${accessory}</div>`;
}

function context(block: Json, blockId: string | undefined, options: RenderOptions): string {
  const elements = listOf(block.elements).map((element) => {
    const type = typeOf(element);
    return type === "mrkdwn" || type === "plain_text"
      ? `<div class="bk-context-item">${renderText(element, options)}</div>`
      : unknown("element", type, "span");
  });
  return `${blockOpen("context", blockId)}${elements.join("")}</div>`;
}

function actions(block: Json, blockId: string | undefined, options: RenderOptions): string {
  const elements = listOf(block.elements).map((element) =>
    renderElement(element, blockId, options),
  );
  return `${blockOpen("actions", blockId)}${elements.join("")}</div>`;
}

function input(block: Json, blockId: string | undefined, options: RenderOptions): string {
  const element = isObject(block.element) ? block.element : {};
  const actionId = stringOf(element.action_id);
  const error = blockId === undefined ? undefined : options.errors?.[blockId];
  const optional = block.optional === true;
  const field: Field = {
    id: domId(blockId, actionId),
    blockId,
    actionId,
    required: !optional,
    invalid: error !== undefined,
  };
  const label = `<label${attributes({ class: "bk-label", for: field.id })}>${renderText(block.label, options)}${
    optional ? ' <span class="bk-optional">(optional)</span>' : ""
  }</label>`;
  const control = isObject(block.element)
    ? inputElement(stringOf(element.type) ?? "(no type)", element, field, options)
    : unknown("element", typeOf(block.element), "span");
  const errorHtml =
    error === undefined ? "" : `<div class="bk-error" role="alert">${escapeHtml(error)}</div>`;
  const hint =
    block.hint === undefined ? "" : `<div class="bk-hint">${renderText(block.hint, options)}</div>`;
  return `${blockOpen("input", blockId, error === undefined ? "" : " bk-invalid")}${label}${control}${errorHtml}${hint}</div>`;
}

/** One block; a type this renderer does not know becomes a labelled placeholder. */
export function renderBlock(block: unknown, options: RenderOptions = {}): string {
  if (!isObject(block)) return unknown("block", typeOf(block));
  const type = stringOf(block.type) ?? "(no type)";
  const blockId = stringOf(block.block_id);
  switch (type) {
    case "header":
      return `${blockOpen("header", blockId)}${renderText(block.text, options)}</div>`;
    case "section":
      return section(block, blockId, options);
    case "context":
      return context(block, blockId, options);
    case "divider":
      return `<hr${attributes({ class: "bk-block bk-divider", "data-block-id": blockId })}>`;
    case "actions":
      return actions(block, blockId, options);
    case "input":
      return input(block, blockId, options);
    default:
      return unknown("block", type, "div", blockId);
  }
}

export function renderBlocks(blocks: unknown, options: RenderOptions = {}): string {
  return listOf(blocks)
    .map((block) => renderBlock(block, options))
    .join("");
}

// --- surfaces -----------------------------------------------------------------------------------

/**
 * The dialog a button's `confirm` object opens, with the page's answer on `data-confirm-answer`
 * (`confirm` or `deny`). Slack's defaults fill in anything left out.
 */
export function renderConfirm(confirm: unknown, options: RenderOptions = {}): string {
  const object = isObject(confirm) ? confirm : {};
  const part = (value: unknown, fallback: string) =>
    value === undefined ? escapeHtml(fallback) : renderText(value, options);
  const style = object.style === "danger" ? "danger" : "primary";
  return (
    `<div class="bk-overlay bk-confirm-overlay">` +
    `<div class="bk-dialog bk-confirm" role="alertdialog" aria-modal="true">` +
    `<h2 class="bk-dialog-title">${part(object.title, "Are you sure?")}</h2>` +
    `<div class="bk-dialog-text">${part(object.text, "")}</div>` +
    `<footer class="bk-dialog-actions">` +
    `<button type="button" class="bk-button" data-confirm-answer="deny">${part(object.deny, "Cancel")}</button>` +
    `<button type="button" class="bk-button bk-button-${style}" data-confirm-answer="confirm">${part(object.confirm, "Yes")}</button>` +
    `</footer></div></div>`
  );
}

function inputBlockIds(blocks: unknown): Set<string> {
  return new Set(
    listOf(blocks)
      .filter((block) => isObject(block) && block.type === "input")
      .map((block) => (isObject(block) ? stringOf(block.block_id) : undefined))
      .filter((id) => id !== undefined),
  );
}

/**
 * A modal view (`views.open`, `views.update`, `views.push`) as a form over an overlay. Submitting
 * it is the page's `view_submission`; `data-modal-close` marks the ways out. Errors for blocks the
 * view does not have are listed at the top, so a mistyped block_id shows instead of vanishing.
 */
export function renderModal(view: unknown, options: RenderOptions = {}): string {
  if (!isObject(view) || view.type !== "modal") return unknown("view", typeOf(view));
  const known = inputBlockIds(view.blocks);
  const stray = Object.entries(options.errors ?? {}).filter(([blockId]) => !known.has(blockId));
  const strayHtml = stray
    .map(
      ([blockId, message]) =>
        `<div class="bk-error" role="alert">Error for ${escapeHtml(blockId)}, which is not an input of this view: ${escapeHtml(message)}</div>`,
    )
    .join("");
  const close = view.close ?? undefined;
  const submit =
    view.submit === undefined || view.submit === null
      ? ""
      : `<button type="submit" class="bk-button bk-button-primary">${renderText(view.submit, options)}</button>`;
  return (
    `<div class="bk-overlay">` +
    `<form${attributes({
      class: "bk-modal",
      role: "dialog",
      "aria-modal": "true",
      "data-view-id": stringOf(view.id),
      "data-callback-id": stringOf(view.callback_id),
    })}>` +
    `<header class="bk-modal-header"><h2 class="bk-modal-title">${renderText(view.title, options)}</h2>` +
    `<button type="button" class="bk-modal-dismiss" data-modal-close aria-label="Close">\u00d7</button></header>` +
    `<div class="bk-modal-body">${strayHtml}${renderBlocks(view.blocks, options)}</div>` +
    `<footer class="bk-modal-footer">` +
    `<button type="button" class="bk-button" data-modal-close>${close === undefined ? "Cancel" : renderText(close, options)}</button>` +
    `${submit}</footer></form></div>`
  );
}

function fileHtml(file: unknown, options: MessageOptions): string {
  if (!isObject(file)) return unknown("file", typeOf(file));
  const id = stringOf(file.id);
  const name = stringOf(file.name) ?? "file";
  const title = stringOf(file.title) ?? name;
  const url = id === undefined ? undefined : options.fileUrl?.(id);
  // The page's own path for the file, or an http(s) address.
  const href = url === undefined || /^\/(?!\/)/.test(url) ? url : safeHref(url);
  const titleHtml = `<span class="bk-file-title">${escapeHtml(title)}</span>`;
  return (
    `<div${attributes({ class: "bk-file", "data-file-id": id })}>` +
    `<span class="bk-file-icon" aria-hidden="true">\u{1f4c4}</span>` +
    (href === undefined ? titleHtml : link(href, titleHtml)) +
    `<span class="bk-file-name">${escapeHtml(name)}</span></div>`
  );
}

/**
 * One message as Slack shows it in a channel: author, time, then its blocks (or its `text` when it
 * has none), its uploaded files, and "(edited)" once it has been updated. A thread reply (a
 * `thread_ts` other than its own `ts`) is marked `bk-reply`.
 */
export function renderMessage(message: unknown, options: MessageOptions = {}): string {
  if (!isObject(message)) return unknown("message", typeOf(message));
  const ts = stringOf(message.ts);
  const threadTs = stringOf(message.thread_ts);
  const user = stringOf(message.user);
  const author =
    (user === undefined ? undefined : options.userName?.(user)) ??
    stringOf(message.username) ??
    user ??
    "Slack";
  const seconds = ts === undefined ? Number.NaN : Math.floor(Number(ts));
  // Within the range a Date can hold (±8.64e12 s), so a garbled ts cannot throw.
  const time =
    Math.abs(seconds) < 8.64e12
      ? `<time${attributes({ class: "bk-time", datetime: new Date(seconds * 1000).toISOString() })}>${escapeHtml(formatSlackDate(seconds, "{time}"))}</time>`
      : "";
  const blocks = listOf(message.blocks);
  const text = stringOf(message.text) ?? "";
  const body =
    blocks.length > 0
      ? renderBlocks(blocks, options)
      : text === ""
        ? ""
        : `<div class="bk-block bk-text">${renderMrkdwn(text, options)}</div>`;
  const files = listOf(message.files);
  const attachments = listOf(message.attachments);
  const reply = threadTs !== undefined && threadTs !== ts;
  return (
    `<article${attributes({
      class: `bk-message${reply ? " bk-reply" : ""}${options.ephemeral === true ? " bk-ephemeral" : ""}`,
      "data-ts": ts,
      "data-thread-ts": threadTs,
    })}>` +
    `<div class="bk-avatar" aria-hidden="true">${escapeHtml(String.fromCodePoint(author.codePointAt(0) ?? 63).toUpperCase())}</div>` +
    `<div class="bk-message-main"><div class="bk-message-meta">` +
    `<span class="bk-author">${escapeHtml(author)}</span>` +
    `${message.bot_id === undefined ? "" : '<span class="bk-badge">APP</span>'}${time}` +
    `${message.edited === undefined ? "" : '<span class="bk-edited">(edited)</span>'}</div>` +
    (options.ephemeral === true ? '<div class="bk-ephemeral-note">Only visible to you</div>' : "") +
    `<div class="bk-message-body">${body}</div>` +
    (files.length === 0
      ? ""
      : `<div class="bk-files">${files.map((file) => fileHtml(file, options)).join("")}</div>`) +
    (attachments.length === 0
      ? ""
      : unknown(
          "content",
          `${attachments.length} legacy attachment${attachments.length === 1 ? "" : "s"}`,
        )) +
    `</div></article>`
  );
}

/**
 * A channel's messages in order, each thread's replies indented under the message that started
 * it. A reply whose parent is not among the messages stays where it is.
 */
export function renderConversation(
  messages: readonly unknown[],
  options: MessageOptions = {},
): string {
  const parents = new Set(
    messages
      .filter(isObject)
      .filter((m) => m.thread_ts === undefined || m.thread_ts === m.ts)
      .map((m) => stringOf(m.ts))
      .filter((ts) => ts !== undefined),
  );
  const replies = new Map<string, unknown[]>();
  const top: unknown[] = [];
  for (const message of messages) {
    const threadTs = isObject(message) ? stringOf(message.thread_ts) : undefined;
    const ts = isObject(message) ? stringOf(message.ts) : undefined;
    if (threadTs !== undefined && threadTs !== ts && parents.has(threadTs)) {
      replies.set(threadTs, [...(replies.get(threadTs) ?? []), message]);
    } else {
      top.push(message);
    }
  }
  return top
    .map((message) => {
      const ts = isObject(message) ? stringOf(message.ts) : undefined;
      const thread = ts === undefined ? [] : (replies.get(ts) ?? []);
      const threadHtml =
        thread.length === 0
          ? ""
          : `<div${attributes({ class: "bk-thread", "data-thread-ts": ts })}>${thread.map((reply) => renderMessage(reply, options)).join("")}</div>`;
      return `${renderMessage(message, options)}${threadHtml}`;
    })
    .join("");
}
