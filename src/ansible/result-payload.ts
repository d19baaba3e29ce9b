/**
 * The message of a failed task's result, as the default stdout callback prints it after
 * `FAILED! =>`: JSON on the same line (perhaps pretty-printed over several), or, with
 * `ANSIBLE_CALLBACK_RESULT_FORMAT=yaml` or the `yaml` callback, YAML on the indented lines below.
 */

/** Longest message kept for a failure. */
export const MAX_MESSAGE_LENGTH = 500;

/** Keys of a failed result, in the order they are tried for its message. */
const MESSAGE_KEYS = ["msg", "reason", "stderr", "module_stderr"] as const;
const MESSAGE_KEY_PATTERNS = MESSAGE_KEYS.map(
  (key) => new RegExp(`"${key}"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)"`),
);
const UNREACHABLE_FLAG = /"unreachable"\s*:\s*true/;
const YAML_PAIR = /^([A-Za-z_][\w-]*):(?:\s+(.*))?$/;

export interface ResultMessage {
  message: string;
  unreachable: boolean;
}

/** The message and unreachable flag of a result payload: JSON if it parses, else by pattern. */
export function readJsonPayload(payload: string): ResultMessage {
  const text = payload.trim();
  if (text === "") return { message: "", unreachable: false };
  const parsed = parseJsonObject(text);
  if (parsed !== undefined) {
    for (const key of MESSAGE_KEYS) {
      const message = messageText(parsed[key]);
      if (message !== "")
        return {
          message: shorten(withCause(message, messageText(parsed.stderr))),
          unreachable: parsed.unreachable === true,
        };
    }
    return { message: "", unreachable: parsed.unreachable === true };
  }
  const unreachable = UNREACHABLE_FLAG.test(text);
  if (!text.startsWith("{")) return { message: shorten(text), unreachable };
  for (const pattern of MESSAGE_KEY_PATTERNS) {
    const found = pattern.exec(text)?.[1];
    if (found !== undefined && found.trim() !== "") {
      return { message: shorten(decodeJsonString(found)), unreachable };
    }
  }
  return { message: "", unreachable };
}

/**
 * The message and unreachable flag of a result in the YAML result format: the top-level keys are
 * the least indented lines; a value is a plain or quoted scalar, possibly folded over more
 * indented lines, or a `|`/`>` block scalar below its key.
 */
export function readYamlPayload(payload: string): ResultMessage {
  const lines = payload.split("\n").filter((line) => line.trim() !== "");
  const indentOf = (line: string) => line.length - line.trimStart().length;
  const top = Math.min(...lines.map(indentOf));
  const values = new Map<string, string>();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (indentOf(line) !== top) continue;
    const pair = YAML_PAIR.exec(line.trim());
    if (pair?.[1] === undefined) continue;
    const below: string[] = [];
    for (let j = i + 1; j < lines.length && indentOf(lines[j] ?? "") > top; j++) {
      below.push((lines[j] ?? "").trim());
    }
    values.set(pair[1], yamlScalar(pair[2] ?? "", below));
  }
  const unreachable = values.get("unreachable") === "true";
  for (const key of MESSAGE_KEYS) {
    const message = values.get(key)?.trim() ?? "";
    if (message !== "") {
      return {
        message: shorten(withCause(message, values.get("stderr")?.trim() ?? "")),
        unreachable,
      };
    }
  }
  return { message: "", unreachable };
}

/** A YAML scalar from the text after `key:` and the more indented lines below it. */
function yamlScalar(head: string, below: string[]): string {
  const value = head.trim();
  if (/^[|>][-+]?$/.test(value)) return below.join(value.startsWith("|") ? "\n" : " ");
  const text = [value, ...below].join(" ");
  if (text.startsWith("'") && text.endsWith("'") && text.length > 1) {
    return text.slice(1, -1).replace(/''/g, "'");
  }
  if (text.startsWith('"') && text.endsWith('"') && text.length > 1) {
    return decodeJsonString(text.slice(1, -1));
  }
  return text;
}

function parseJsonObject(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function messageText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value.trim();
  return JSON.stringify(value);
}

function decodeJsonString(escaped: string): string {
  try {
    const value: unknown = JSON.parse(`"${escaped}"`);
    return typeof value === "string" ? value.trim() : escaped;
  } catch {
    return escaped;
  }
}

/** The first MAX_MESSAGE_LENGTH characters, never ending inside a surrogate pair. */
function shorten(text: string): string {
  if (text.length <= MAX_MESSAGE_LENGTH) return text;
  const cut = text.slice(0, MAX_MESSAGE_LENGTH);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}

/**
 * A command's failure says only "non-zero return code"; what went wrong is on its standard error,
 * so that follows it when there is one.
 */
function withCause(message: string, stderr: string): string {
  return message === "non-zero return code" && stderr !== "" ? `${message}: ${stderr}` : message;
}
