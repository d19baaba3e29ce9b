/**
 * Removes secrets from text by value (every secret the bot knows), by shape (tokens of the
 * systems it and its pipelines talk to) and by context (the value after a name such as
 * `password` or `..._SECRET`), so neither a log line nor a Slack message can carry one.
 *
 * The text may be plain (a job log, a Slack message) or JSON-escaped, once or more (a pino line
 * whose message holds a request body): a replacement never removes a quote or a backslash, so
 * JSON stays JSON, and an escape such as `\n` before a token counts as a boundary. Every pattern
 * is linear in the length of the text: the redactor runs over whole plan files.
 */

export const REDACTED = "[redacted]";

/**
 * Whether a token found at `at` starts there: not inside a word, or right after an escape such as
 * `\n` (so a token at the start of a line of JSON-escaped text is found). Checked on each match
 * rather than by a lookbehind at the front of the pattern, which would be tried at every position
 * of the text instead of only where the token's first letters are.
 */
function tokenStartsAt(text: string, at: number): boolean {
  const before = text[at - 1];
  if (before === undefined || !/[\w.+/-]/.test(before)) return true;
  return /[nrt]/.test(before) && text[at - 2] === "\\";
}

interface Shape {
  pattern: RegExp;
  /** The match must start a token (see `tokenStartsAt`). */
  bounded?: true;
  /** Group 1 is context before the secret (a name, a separator), kept as it is. */
  keepsPrefix?: true;
}

/**
 * Shapes of credentials, each with the systems it belongs to. Every pattern starts with literal
 * characters, so the engine skips ahead to the few places where one can match.
 */
const SHAPES: readonly Shape[] = [
  // GitLab, every documented prefix (doc/security/tokens: "Token prefixes"), including the
  // dotted form of newer tokens; and a runner registration token's legacy prefix.
  {
    pattern: /gl(?:pat|oas|dt|rtr?|cbt|ptt|ft|imt|agent|wt|soat|ffct)-[\w-]{8,}(?:\.[\w-]+)*/g,
    bounded: true,
  },
  { pattern: /GR1348941[\w-]{8,}/g, bounded: true },
  { pattern: /(_gitlab_session=)[\w-]{8,}/g, keepsPrefix: true },
  // Slack tokens and incoming webhooks.
  { pattern: /xox[abposre]-[\w-]{8,}/g, bounded: true },
  { pattern: /xapp-[\w-]{8,}/g, bounded: true },
  {
    pattern:
      /(?:https?:\/\/)?hooks\.slack(?:-gov)?\.com\/(?:services|workflows|triggers)\/[\w/-]+/g,
  },
  // Vault: current service, batch and recovery tokens, and the legacy `s.`/`b.`/`r.` forms.
  { pattern: /hv[sbr]\.[\w-]{16,}/g, bounded: true },
  { pattern: /[sbr]\.[A-Za-z0-9]{24,}(?!\w|\.\w)/g, bounded: true },
  // AWS access key IDs (long-term, temporary, and the other credential kinds).
  { pattern: /(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])/g, bounded: true },
  // An AWS secret access key after its name, also as `aws configure list` prints it.
  {
    pattern:
      /(aws_?secret(?:_?access)?_?key["'\\]{0,8}[ \t]{0,32}[:=]?[ \t]{0,32}["'\\]{0,8})[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])/gi,
    keepsPrefix: true,
  },
  // JWTs: a base64url JSON header (`{"` is `eyJ`), a payload and a signature that may be empty.
  { pattern: /eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]*/g, bounded: true },
  // The secret part of a PVE API token, `user@realm!tokenid=<uuid>`.
  {
    pattern: /(![\w.-]{1,64}=)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi,
    keepsPrefix: true,
  },
  // Basic or bearer credentials in a header, and a password in a URL (`scheme://user:pw@host`).
  { pattern: /((?:Bearer|Basic) )[\w.~+/-]{8,}=*/g, keepsPrefix: true },
  { pattern: /(:\/\/[^\s/:@"'\\]{1,256}:)[^\s/@"'\\]+(?=@)/g, keepsPrefix: true },
];

function redactShapes(text: string): string {
  let out = text;
  for (const { pattern, bounded, keepsPrefix } of SHAPES) {
    out = out.replace(pattern, (match: string, ...rest: unknown[]) => {
      // The replacer's last two arguments are the offset and the whole text.
      const offset = rest[rest.length - 2] as number;
      const whole = rest[rest.length - 1] as string;
      if (bounded === true && !tokenStartsAt(whole, offset)) return match;
      return keepsPrefix === true ? `${rest[0] as string}${REDACTED}` : REDACTED;
    });
  }
  return out;
}

/**
 * A value after a name that says it is secret: `password: x`, `PROXMOX_SECRET=x`,
 * `"api_key": "x"`, `token = "x"`. The name is found by its secret part (the rest of it, such as
 * `PROXMOX_`, needs no matching); the separator may follow a closing quote, escaped or not.
 *
 * Group 1 is everything before the value (kept), group 2 an opening quote, group 3 a quoted
 * value, group 4 an unquoted one.
 */
const NAMED_VALUE = new RegExp(
  String.raw`((?:password|passwd|passphrase|secret|token|api[_-]?key|apikey)[\w.-]{0,64}(?:\\*["'])?[ \t]*[:=]>?[ \t]*)` +
    String.raw`(?:(\\*["'])([^"'\\\r\n]+)|([^\s"'\\,;&()[\]{}<>][^\s"'\\,;&)\]}]*))`,
  "gi",
);

/**
 * Unquoted values that are not secrets. Terraform's markers, `(sensitive value)` and `(known
 * after apply)`, and what redaction or masking already put there (`[redacted]`, `[MASKED]`) are
 * ruled out by their first character; these by their words: empty values, and placeholders such
 * as `tokenid=secret` in a sentence that explains a format.
 */
const NOT_A_VALUE =
  /^(?:\*{3}|\$\{|(?:true|false|null|nil|none|undefined|secret|password|token|x{3,}|\.{3}|…)$)/i;

/**
 * A PVE API token whose secret part is already gone (a value ends before a `]`, so the
 * `[redacted]` shows cut): who the token belongs to is no secret.
 */
const PVE_TOKEN_REDACTED = /^[^@\s]+@[^!\s]+![^=\s]+=\[redacted\]?$/;

const PRIVATE_KEY_BEGIN = /-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK)?-----/g;
const PRIVATE_KEY_END = /-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----/g;

/** What a key's body is made of: base64, PEM headers (`Proc-Type: 4,ENCRYPTED`), blanks. */
const KEY_BODY = /[A-Za-z0-9+/=:, \t\r\n-]/;

/**
 * Where a key's body that touches `from` ends (reading forwards) or starts (backwards). An
 * escaped line break (`\n`, `\\n`, … in JSON-escaped text) is part of it.
 */
function keyBodyEdge(text: string, from: number, step: 1 | -1, limit = 0): number {
  let at = from;
  for (;;) {
    if (step === -1 && at <= limit) return limit;
    const char = text[step === 1 ? at : at - 1];
    if (char === undefined) return at;
    if (KEY_BODY.test(char)) {
      at += step;
      continue;
    }
    if (char !== "\\") return at;
    let run = at;
    while (text[step === 1 ? run : run - 1] === "\\" && (step === 1 || run > limit)) run += step;
    // Forwards the escaped letter follows the run; backwards it was read just before it.
    const letter = step === 1 ? text[run] : text[at];
    if (letter === undefined || !/[nrt]/.test(letter)) return at;
    at = step === 1 ? run + 1 : run;
  }
}

/** How many backslashes end `text` just before `at`. */
function backslashesBefore(text: string, at: number): number {
  let count = 0;
  while (text[at - count - 1] === "\\") count += 1;
  return count;
}

/**
 * The span `[start, end)` widened so that replacing it cannot leave a backslash escaping
 * something new: an odd run of backslashes before it (the last one escaped the span's first
 * character) goes with it, and so does a character the span's last backslash escaped.
 */
function escapeSafe(text: string, start: number, end: number): [number, number] {
  let from = start;
  let to = end;
  if (backslashesBefore(text, from) % 2 === 1) from -= 1;
  if (backslashesBefore(text, to) % 2 === 1 && to < text.length) to += 1;
  return [from, to];
}

/**
 * Private key blocks, whole or cut: a BEGIN line to its END line; a BEGIN without an END up to
 * where the key's body stops (a log cut inside the key); an END without a BEGIN from where the
 * key's body starts (a log excerpt that begins inside the key).
 */
function redactPrivateKeys(text: string): string {
  if (!text.includes("PRIVATE KEY")) return text;
  const parts: string[] = [];
  let from = 0;
  // The next BEGIN and END at or after `from`; null once there is none left. Each is searched
  // for again only when `from` has passed it, so the text is read once.
  let begin: RegExpExecArray | null | undefined;
  let end: RegExpExecArray | null | undefined;
  const next = (pattern: RegExp, found: RegExpExecArray | null | undefined) => {
    if (found === null || (found !== undefined && found.index >= from)) return found;
    pattern.lastIndex = from;
    return pattern.exec(text);
  };
  for (;;) {
    begin = next(PRIVATE_KEY_BEGIN, begin);
    end = next(PRIVATE_KEY_END, end);
    let span: [number, number];
    if (end !== null && (begin === null || end.index < begin.index)) {
      // An END with no BEGIN before it.
      span = [keyBodyEdge(text, end.index, -1, from), end.index + end[0].length];
    } else if (begin !== null && end !== null) {
      span = [begin.index, end.index + end[0].length];
    } else if (begin !== null) {
      span = [begin.index, keyBodyEdge(text, begin.index + begin[0].length, 1)];
    } else {
      break;
    }
    const [start, stop] = escapeSafe(text, Math.max(from, span[0]), span[1]);
    parts.push(text.slice(from, start), REDACTED);
    from = Math.max(stop, from + 1);
  }
  if (parts.length === 0) return text;
  parts.push(text.slice(from));
  return parts.join("");
}

/** The new value of a secret Terraform shows changing: `token = "[redacted]" -> "new"`. */
const CHANGED_VALUE = new RegExp(
  String.raw`(?<=\[redacted\]\\*["'][ \t]*->[ \t]*\\*["'])[^"'\\\r\n]+`,
  "g",
);

function redactNamedValues(text: string): string {
  const out = text.replace(
    NAMED_VALUE,
    (whole, name: string, quote?: string, quoted?: string, bare?: string) => {
      if (quote !== undefined && quoted !== undefined) return `${name}${quote}${REDACTED}`;
      if (bare === undefined || NOT_A_VALUE.test(bare) || PVE_TOKEN_REDACTED.test(bare)) {
        return whole;
      }
      return `${name}${REDACTED}`;
    },
  );
  return out.includes("->") ? out.replace(CHANGED_VALUE, REDACTED) : out;
}

export type Redactor = ((text: string) => string) & {
  /** Adds a secret learnt at run time (e.g. read from Vault). */
  add(secret: string): void;
};

/** The forms a secret takes in text: itself, URL-encoded, JSON-escaped (once and twice). */
function formsOf(secret: string): string[] {
  const once = JSON.stringify(secret).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  return [...new Set([secret, encodeURIComponent(secret), once, twice])];
}

export function createRedactor(initial: Iterable<string> = []): Redactor {
  const secrets = new Set<string>();
  const add = (secret: string) => {
    // Very short values would redact ordinary words; nothing the bot holds is that short.
    if (secret.length < 6) return;
    for (const form of formsOf(secret)) secrets.add(form);
  };
  for (const secret of initial) add(secret);

  const redact = (text: string): string => {
    let out = text;
    for (const secret of secrets) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    out = redactPrivateKeys(out);
    return redactNamedValues(redactShapes(out));
  };
  return Object.assign(redact, { add });
}

/** How much text is redacted between two turns of the event loop. */
const BATCH_CHARS = 256 * 1024;

/**
 * The redactor over a long text (a whole plan file) a batch of lines at a time, letting other
 * work (a health check, a click) run between batches. Lines are never split; a private key cut
 * by a batch's edge is still found, as a block cut by a log would be.
 */
export async function redactInBatches(text: string, redact: Redactor): Promise<string> {
  if (text.length <= BATCH_CHARS) return redact(text);
  const parts: string[] = [];
  for (let from = 0; from < text.length;) {
    const newline = text.indexOf("\n", from + BATCH_CHARS);
    const to = newline === -1 ? text.length : newline + 1;
    parts.push(redact(text.slice(from, to)));
    from = to;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return parts.join("");
}
