import fc from "fast-check";

/**
 * Shared generators for the property tests. Each test file states its own `numRuns`; fast-check
 * picks a fresh seed per run and prints it (with the shrunk counterexample) when a property
 * fails, so a failure found in CI can be replayed with `{ seed, path }`.
 */

/**
 * Characters that look like, fold into, or hide among the characters a form accepts: the Kelvin
 * sign lower-cases to ASCII `k`, dotted and dotless i change length or script when case-folded,
 * fullwidth digits and letters look like ASCII, and the rest are spaces, joiners, marks,
 * bidirectional controls and half characters that a person cannot see.
 */
export const LOOKALIKE_CHARACTERS = [
  "\u212a", // KELVIN SIGN
  "\u0130", // LATIN CAPITAL LETTER I WITH DOT ABOVE
  "\u0131", // LATIN SMALL LETTER DOTLESS I
  "\u017f", // LATIN SMALL LETTER LONG S
  "\uff11", // FULLWIDTH DIGIT ONE
  "\uff41", // FULLWIDTH LATIN SMALL LETTER A
  "\u0660", // ARABIC-INDIC DIGIT ZERO
  "\u00a0", // NO-BREAK SPACE
  "\u200b", // ZERO WIDTH SPACE
  "\u200d", // ZERO WIDTH JOINER
  "\ufeff", // BYTE ORDER MARK
  "\u0301", // COMBINING ACUTE ACCENT
  "\u202e", // RIGHT-TO-LEFT OVERRIDE
  "\u2028", // LINE SEPARATOR
  "\u2010", // HYPHEN
  "\u2212", // MINUS SIGN
  "\ud800", // a high surrogate on its own, as a cut JSON string can leave it
  "\udfff", // a low surrogate on its own
  "\u0000",
  "\t",
  "\n",
  "\r",
];

/** Any text: ASCII, any code point, and the lookalikes and lone surrogates above. */
export const anyText = (maxLength = 40): fc.Arbitrary<string> =>
  fc.oneof(
    fc.string({ maxLength }),
    fc.string({ unit: "binary", maxLength }),
    fc.string({
      unit: fc.constantFrom(...LOOKALIKE_CHARACTERS, "a", "Z", "0", "-", "."),
      maxLength,
    }),
  );

/**
 * Text that tries to talk to Slack: mentions, broadcasts, links, entities, formatting and
 * backticks that would close a code span, alone and mixed into other text.
 */
export const HOSTILE_STRINGS = [
  "<!channel>",
  "<!here>",
  "<!everyone>",
  "<@U123>",
  "<#C123>",
  "<!subteam^S123>",
  "<https://evil.example|click>",
  "<https://evil.example>",
  "<mailto:a@evil.example|mail>",
  "&",
  "&lt;!channel&gt;",
  "&amp;lt;",
  "*bold*",
  "_italic_",
  "~strike~",
  "`",
  "``",
  "```",
  "`<!channel>`",
  "a`b",
  "> quote",
  "\n> quote",
  "|",
  ":skull:",
  "@channel",
  "x\n<!here>",
  "<",
  ">",
  "<<!channel>>",
  // Look like the bot's own mentions, dates and links.
  "<@U0REQ>",
  "<!date^1700000000^{time}|noon>",
  "<https://gitlab.example.com/x|trusted-looking>",
  "web-01",
];

/** A hostile string: one of the fixed list, several of them run together, or random text. */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  {
    weight: 3,
    arbitrary: fc
      .array(fc.oneof(fc.constantFrom(...HOSTILE_STRINGS), fc.string({ maxLength: 6 })), {
        minLength: 1,
        maxLength: 6,
      })
      .map((parts) => parts.join("")),
  },
  {
    weight: 1,
    arbitrary: fc.string({
      unit: fc.constantFrom("<", ">", "&", "`", "|", "!", "@", "#", "*", "_", "~", "^", "a", " "),
      minLength: 1,
      maxLength: 30,
    }),
  },
  { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 20 }) },
);

/** The cut points at which a text is truncated: every one for short texts, else a spread. */
export function cutPoints(text: string, most = 400): number[] {
  if (text.length <= most) return Array.from({ length: text.length + 1 }, (_, i) => i);
  const step = text.length / most;
  const points = new Set<number>([0, text.length]);
  for (let i = 0; i < most; i += 1) points.add(Math.floor(i * step));
  // Around every line break too: cutting just before, at and after a newline are the cases a
  // line-based parser treats differently.
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) {
    for (const point of [i - 1, i, i + 1])
      if (point >= 0 && point <= text.length) points.add(point);
  }
  return [...points].sort((a, b) => a - b);
}

/** Splits `text` at the given offsets (sorted, deduplicated, clamped) into pieces. */
export function splitAt(text: string, offsets: readonly number[]): string[] {
  const points = [...new Set(offsets.map((o) => Math.min(text.length, Math.max(0, o))))].sort(
    (a, b) => a - b,
  );
  const pieces: string[] = [];
  let from = 0;
  for (const point of points) {
    pieces.push(text.slice(from, point));
    from = point;
  }
  pieces.push(text.slice(from));
  return pieces;
}

// eslint-disable-next-line no-control-regex -- replacing control characters is the point
const CONTROL_CHARACTERS = /[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]/g;

/** Text as a program prints it without colour: control characters but tab and newline made spaces. */
export const printable = (text: string) => text.replace(CONTROL_CHARACTERS, " ");

/** SGR colour sequences as ansible-playbook, Terraform and GitLab runners print them. */
export const SGR = [
  "\x1b[0m",
  "\x1b[0;32m",
  "\x1b[1;31m",
  "\x1b[31m",
  "\x1b[01;34m",
  "\x1b[0;33m",
  "\x1b[1m",
  "\x1b[0K",
  "\x1b[32;1m",
];

/**
 * `text` with colour codes inserted before the chosen characters (indices modulo the length).
 * Codes never go between a `\r` and the `\n` after it, where they would split a line ending.
 */
export function colorize(
  text: string,
  positions: readonly number[],
  codes: readonly string[],
): string {
  if (text.length === 0 || positions.length === 0) return text;
  const at = new Map<number, string>();
  positions.forEach((position, i) => {
    const index = position % (text.length + 1);
    if (text[index - 1] === "\r" && text[index] === "\n") return;
    at.set(index, (at.get(index) ?? "") + (codes[i % codes.length] ?? ""));
  });
  let out = "";
  for (let i = 0; i <= text.length; i += 1) out += (at.get(i) ?? "") + (text[i] ?? "");
  return out;
}

/** An independent reading of a dotted quad: four decimal octets, 0–255, no leading zeros. */
export function dottedQuadValue(text: string): number | undefined {
  const match = /^(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,2})$/.exec(
    text,
  );
  if (match === null) return undefined;
  const octets = match.slice(1).map(Number);
  if (octets.some((octet) => octet > 255)) return undefined;
  return octets.reduce((value, octet) => value * 256 + octet, 0);
}

export const dotted = (value: number) =>
  [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".");
