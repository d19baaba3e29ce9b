import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  attributeName,
  createMarkerSpan,
  forcesReplacement,
  heredocOpener,
  heredocOpenerIn,
  holdsTypeAndName,
  markerReplaces,
  readMarker,
} from "../../src/terraform/plan-text-chars.js";
import {
  commentTextStart,
  HEADING_PHRASES,
  headingPhrase,
  isHeading,
  isSpace,
} from "../../src/terraform/plan-text-lines.js";
import { hostileText } from "../support/generators.js";

const RUNS = { numRuns: 2000 };

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The patterns the lines were read by: the references the readers by character codes match. */
const HEADING = new RegExp(
  `^\\s*# (.+?) (${Object.keys(HEADING_PHRASES)
    .sort((a, b) => b.length - a.length)
    .map(escapeRegExp)
    .join("|")})$`,
);
const MARKER = /^\s*(?:(-\/\+|\+\/-|<=|[+~-])\s+)?(resource|data) "([^"]+)" "([^"]+)" \{/;
const FORCES_REPLACEMENT = /#\s*forces replacement\s*$/;
const HEREDOC_OPEN = /<<[-~]?([A-Za-z_]\w*)(?:\s+#.*)?$/;
const ATTRIBUTE_NAME = /^\s*(?:(?:-\/\+|\+\/-|[+~-])\s+)?("(?:[^"\\]|\\.)*"|[\w.-]+)\s*(?:=|\{)/;

/** Where a line's text starts after its white space, as the reader finds it. */
function textStart(text: string): number {
  let start = 0;
  while (isSpace(text.charCodeAt(start))) start += 1;
  return start;
}

/** Pieces the lines are made of: the patterns' own words, and what stands next to them. */
const piece = fc.oneof(
  fc.constantFrom(
    " ",
    "  ",
    "\t",
    "\u00a0",
    "\u2003",
    "\ufeff",
    "\u2028",
    "\u2029",
    "\n",
    "\r",
    "#",
    "# ",
    "  # ",
    '"',
    '" "',
    '" {',
    " {",
    "{",
    "=",
    " = ",
    "\\",
    '\\"',
    "\\\u2028",
    "\\\n",
    "-/+",
    "+/-",
    "<=",
    "<",
    "+",
    "-",
    "~",
    "/",
    ".",
    "_",
    "resource",
    "data",
    "resources",
    "local_file",
    "test",
    "local_file.test",
    "module.m.",
    "[0]",
    '["a will be created"]',
    "forces replacement",
    "forces",
    "replacement",
    "has moved to",
    "x",
    "é",
    "<<",
    "<<-",
    "<<~",
    "<<<",
    "EOT",
    "_9",
    "9",
    " # x",
    "#",
  ),
  fc.constantFrom(...Object.keys(HEADING_PHRASES)),
  fc.constantFrom(...Object.keys(HEADING_PHRASES)).map((phrase) => ` ${phrase}`),
  fc.stringMatching(/^[a-z0-9_.-]{1,6}$/),
);

const line = fc.oneof(
  fc.array(piece, { maxLength: 12 }).map((pieces) => pieces.join("")),
  hostileText,
);

/** Lines shaped like what each reader reads, with their parts swapped for look-alikes. */
const headingLike = fc
  .tuple(
    fc.array(piece, { maxLength: 2 }),
    fc.constantFrom("# ", "#", "#  ", "x "),
    fc.array(piece, { minLength: 0, maxLength: 5 }),
    fc.constantFrom(...Object.keys(HEADING_PHRASES), "has changed", "must be", ""),
  )
  .map(
    ([indent, hash, address, phrase]) => `${indent.join("")}${hash}${address.join("")} ${phrase}`,
  );

const markerLike = fc
  .tuple(
    fc.array(fc.constantFrom(" ", "\t", "\u3000"), { maxLength: 3 }),
    fc.constantFrom("", "-/+", "+/-", "<=", "+", "~", "-", "<", "-/", "+/-+"),
    fc.array(fc.constantFrom(" ", "\t", "\u00a0"), { maxLength: 2 }),
    fc.constantFrom("resource", "data", "resources", "dat"),
    fc.constantFrom(' "', '"', '  "'),
    fc.array(piece, { maxLength: 3 }),
    fc.constantFrom('" "', '""', '" ', '"  "'),
    fc.array(piece, { maxLength: 3 }),
    fc.constantFrom('" {', '"{', '" { # x', '"', " {"),
  )
  .map((parts) => parts.map((part) => (Array.isArray(part) ? part.join("") : part)).join(""));

const attributeLike = fc
  .tuple(
    fc.array(fc.constantFrom(" ", "\t", "\u2003"), { maxLength: 3 }),
    fc.constantFrom("", "-/+", "+/-", "+", "~", "-", "<="),
    fc.array(fc.constantFrom(" ", "\t"), { maxLength: 2 }),
    fc.array(piece, { maxLength: 4 }),
    fc.constantFrom(" = ", "=", " {", "", " "),
    fc.constantFrom("1 # forces replacement", "x", ""),
  )
  .map((parts) => parts.map((part) => (Array.isArray(part) ? part.join("") : part)).join(""));

describe("reading headings by their phrases rather than by a pattern", () => {
  it("finds the phrase and address the heading pattern finds", () => {
    fc.assert(
      fc.property(fc.oneof(headingLike, line), (text) => {
        const match = HEADING.exec(text);
        const from = commentTextStart(text);
        const phrase = from === -1 ? undefined : headingPhrase(text, from);
        expect(phrase).toBe(match?.[2]);
        if (phrase !== undefined && match !== null) {
          expect(text.slice(from, text.length - phrase.length - 1)).toBe(match[1]);
        }
        expect(isHeading(text)).toBe(match !== null);
      }),
      RUNS,
    );
  });

  it("reads quoted keys that hold a phrase, line terminators and short addresses as the pattern", () => {
    for (const text of [
      '  # local_file.a["will be created"] will be created',
      '  # local_file.a["x will be destroyed"] must be replaced',
      "  # local_file.a is tainted, so must be replaced",
      "  # is tainted, so must be replaced",
      "  # x must be replaced, but the existing object will not be destroyed",
      "  #  will be created",
      "  # x  will be created",
      "  # a\u2028b will be created",
      "  # a\u2029b will be created",
      "\u2028  # a will be created",
      "  # a\rb will be created",
      "  #will be created",
      "  # will be created",
      "  # x will be created ",
      "\t# x will be created",
    ]) {
      const match = HEADING.exec(text);
      const from = commentTextStart(text);
      expect(from === -1 ? undefined : headingPhrase(text, from), text).toBe(match?.[2]);
      if (match !== null) expect(text.slice(from, from + (match[1]?.length ?? 0))).toBe(match[1]);
    }
  });
});

describe("reading a resource's marker line and forcing attributes by character codes", () => {
  it("reads a marker line as the marker pattern, its symbol, type and name", () => {
    fc.assert(
      fc.property(
        fc.oneof(markerLike, line),
        fc.constantFrom("", "local_file.test", "a.b.c"),
        (text, address) => {
          const match = MARKER.exec(text);
          const span = createMarkerSpan();
          const start = textStart(text);
          expect(readMarker(text, start, span)).toBe(match !== null);
          if (match === null) return;
          const [, symbol, , type = "", name = ""] = match;
          expect(text.slice(span.typeFrom, span.typeTo)).toBe(type);
          expect(text.slice(span.nameFrom, span.nameTo)).toBe(name);
          expect(markerReplaces(text, start)).toBe(symbol === "-/+" || symbol === "+/-");
          for (const held of [
            address,
            `${type}.${name}`,
            `x${type}.${name}[0]`,
            `${type}.${name}`.slice(1),
          ]) {
            expect(holdsTypeAndName(held, text, span)).toBe(held.includes(`${type}.${name}`));
          }
        },
      ),
      RUNS,
    );
  });

  it("finds a type and name in an address as includes does, long ones too", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[ab.]{1,80}$/),
        fc.stringMatching(/^[ab]{1,70}$/),
        fc.stringMatching(/^[ab.]{1,70}$/),
        (address, type, name) => {
          const text = `resource "${type}" "${name}" {`;
          const span = createMarkerSpan();
          expect(readMarker(text, 0, span)).toBe(true);
          expect(holdsTypeAndName(address, text, span)).toBe(address.includes(`${type}.${name}`));
          const within = `x.${type}.${name}.y`;
          expect(holdsTypeAndName(within, text, span)).toBe(true);
        },
      ),
      RUNS,
    );
  });

  it("finds forces replacement and the attribute's name where the patterns find them", () => {
    fc.assert(
      fc.property(fc.oneof(attributeLike, line), (raw) => {
        // The reader's lines have no white space at their end.
        const text = raw.trimEnd();
        expect(forcesReplacement(text)).toBe(FORCES_REPLACEMENT.test(text));
        expect(attributeName(text, textStart(text))).toBe(ATTRIBUTE_NAME.exec(text)?.[1] ?? "");
      }),
      RUNS,
    );
  });

  it("names the attribute of a line whose symbol or quotes leave the pattern another reading", () => {
    for (const text of [
      "- = 1",
      "-  { x",
      "-/+ = 1",
      "-/+ a = 1",
      "+/- = 1",
      "~ = 1",
      '  ~ "a\\"b" = 1',
      '  ~ "a\\\u2028b" = 1',
      '  ~ "a\u2028b" = 1',
      '  ~ "a\\',
      '  "x" {',
      "  a.b-c_d   = 2 # forces replacement",
      "\u00a0+\u2003name = 1",
      "<= a = 1",
    ]) {
      expect(attributeName(text, textStart(text)), text).toBe(ATTRIBUTE_NAME.exec(text)?.[1] ?? "");
    }
  });
});

describe("finding where a heredoc value opens by character codes", () => {
  const openerLike = fc
    .tuple(
      fc.array(piece, { maxLength: 4 }),
      fc.constantFrom("<<", "<<-", "<<~", "<<<", "<", "<<+"),
      fc.constantFrom("EOT", "_x9", "9x", "", "E", "EOT-1"),
      fc.constantFrom(
        "",
        " # comment",
        "  #",
        "#x",
        " x",
        "\u2028# x",
        " # a\u2028b",
        " # a\nb",
        "\t#",
      ),
      fc.array(piece, { maxLength: 2 }),
    )
    .map((parts) => parts.map((part) => (Array.isArray(part) ? part.join("") : part)).join(""));

  it("finds the word the heredoc pattern captures, or none where it finds none", () => {
    fc.assert(
      fc.property(fc.oneof(openerLike, line), (text) => {
        expect(heredocOpener(text)).toBe(HEREDOC_OPEN.exec(text)?.[1]);
      }),
      RUNS,
    );
  });

  it("finds the same word in a line where it stands in a longer text as in the line alone", () => {
    // Text on either side, as in a chunk of a log: what is past the line's end is not the line's.
    const around = fc.constantFrom("", "x\n", "  # a <<EOT\n", " ");
    const after = fc.constantFrom("", "\n", "\n# x", " # x\n", "\n<<EOT", "EOT\n");
    fc.assert(
      fc.property(fc.oneof(openerLike, line), around, after, (text, before, rest) => {
        const whole = `${before}${text}${rest}`;
        const end = before.length + text.length;
        expect(heredocOpenerIn(whole, before.length, end)).toBe(heredocOpener(text));
      }),
      RUNS,
    );
  });

  it("takes the first opener that ends the line, past ones that do not", () => {
    for (const text of [
      "a = <<EOT",
      "a = <<-EOT # forces replacement",
      "a = <<~EOT",
      "<<x <<EOT",
      "<<<EOT",
      "<<-~EOT",
      "<<-",
      "<<9EOT",
      "a = <<EOT #",
      "a = <<EOT#",
      "a = <<EOT # a\u2028b",
      "a = <<EOT\n# x",
    ]) {
      expect(heredocOpener(text), text).toBe(HEREDOC_OPEN.exec(text)?.[1]);
    }
  });
});
