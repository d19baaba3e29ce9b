import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeMrkdwn, link, truncate, unescapeSlack } from "../../src/slack/mrkdwn.js";
import { anyText, hostileText } from "../support/generators.js";

const RUNS = { numRuns: 1_000 };

const text = fc.oneof(hostileText, anyText(200));

/** An `&` that does not start one of the three entities Slack decodes. */
const BARE_AMPERSAND = /&(?!amp;|lt;|gt;)/;

describe("escapeMrkdwn", () => {
  it("leaves no <, >, backtick or bare & in any text", () => {
    fc.assert(
      fc.property(text, (raw) => {
        const escaped = escapeMrkdwn(raw);
        expect(escaped).not.toMatch(/[<>`]/);
        expect(escaped).not.toMatch(BARE_AMPERSAND);
      }),
      RUNS,
    );
  });

  it("shows the text as typed, a backtick as a quote", () => {
    fc.assert(
      fc.property(text, (raw) => {
        expect(unescapeSlack(escapeMrkdwn(raw))).toBe(raw.replaceAll("`", "'"));
      }),
      RUNS,
    );
  });
});

describe("link", () => {
  it("makes exactly one link of any URL and label, the label escaped", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.webUrl(),
          text.map((tail) => `https://gitlab.example.com/${tail}`),
        ),
        text,
        (url, label) => {
          const made = link(url, label);
          expect(made.startsWith("<")).toBe(true);
          expect(made.endsWith(">")).toBe(true);
          expect(made.split("<")).toHaveLength(2);
          expect(made.split(">")).toHaveLength(2);
          expect(made.split("|")).toHaveLength(2);
          const shown = made.slice(made.indexOf("|") + 1, -1);
          expect(shown).not.toMatch(/[<>`|]/);
          expect(shown).not.toMatch(BARE_AMPERSAND);
        },
      ),
      RUNS,
    );
  });
});

describe("truncate", () => {
  it("leaves no high surrogate before its mark, paired or lone", () => {
    expect(truncate("ab\u{1f600}cd", 4)).toBe("ab…");
    // The random search found this one: a lone high surrogate before a cut one.
    expect(truncate("\ud800\ud800KK", 3)).toBe("…");
    expect(truncate("a\ud800\ud800KK", 4)).toBe("a…");
  });

  it("keeps a text within the limit, marking any cut, and never adds to what it keeps", () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 300 }), (raw, max) => {
        const cut = truncate(raw, max);
        expect(cut.length).toBeLessThanOrEqual(max);
        if (raw.length <= max) {
          expect(cut).toBe(raw);
        } else {
          expect(cut.endsWith("…")).toBe(true);
          expect(raw.startsWith(cut.slice(0, -1))).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it("never cuts an entity of escaped text or a character in two", () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 300 }), (raw, max) => {
        const cut = truncate(escapeMrkdwn(raw), max);
        expect(cut).not.toMatch(BARE_AMPERSAND);
        if (cut.endsWith("…")) expect(cut.slice(0, -1)).not.toMatch(/[\ud800-\udbff]$/);
      }),
      RUNS,
    );
  });
});
