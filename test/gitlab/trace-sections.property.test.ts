import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stripEscapes, stripEscapesBetween } from "../../src/gitlab/trace-escapes.js";
import {
  createSectionBook,
  matchMarker,
  readMarker,
  readMarkerBefore,
  type SectionMarker,
} from "../../src/gitlab/trace-sections.js";

/** Pieces of section markers, whole and broken, and what surrounds them in a log. */
const markerPiece = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 6 }) },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "section_",
      "start:",
      "end:",
      "section_start:1506004954:prepare_script\r\x1b[0K",
      "section_start:1:build[collapsed=true]\r\x1b[0K",
      "section_start:1:a[k=v, x=y]\r\x1b[0K",
      "section_end:2:build\r\x1b[0K",
      "12345678901234567890",
      "1767603601",
      ":",
      "step_script",
      "a.b-c_d",
      "[",
      "]",
      "[k=v",
      "k=v",
      ",",
      ", ",
      "=",
      "\r",
      "\x1b[0K",
      "\x1b[0",
      "é",
    ),
  },
);

/** `markerPiece`, and whole markers, good and bad, whose names and times hold every character they may. */
const markerOrNear = fc.oneof(
  markerPiece,
  fc.constantFrom(
    "section_start:1767603600:a.b-c_d\r\x1b[0K",
    "section_end:1767603601:a.b-c_d\r\x1b[0K",
    "section_start:x1:a\r\x1b[0K",
    "section_end:1x:a\r\x1b[0K",
    "section_start:1:a b\r\x1b[0K",
    "section_start:1:a[k=v,,x=y]\r\x1b[0K",
    "section_start:1:a[k=v x=y]\r\x1b[0K",
  ),
);

const newMarker = (): SectionMarker => ({ start: false, at: 0, name: "", options: "", end: 0 });

describe("reading a section marker by character codes", () => {
  it("reads what GitLab's marker pattern reads, wherever `section_` is found", () => {
    fc.assert(
      fc.property(fc.array(markerPiece, { maxLength: 12 }), (pieces) => {
        const text = pieces.join("");
        const book = createSectionBook();
        for (let at = text.indexOf("section_"); at !== -1; at = text.indexOf("section_", at + 1)) {
          const byCodes = newMarker();
          const byPattern = newMarker();
          const read = readMarker(text, at, book, byCodes);
          expect(read).toBe(matchMarker(text, at, book, byPattern));
          if (read) expect(byCodes).toEqual(byPattern);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("reads back from a carriage return the marker it ends, as read from its `section_`", () => {
    fc.assert(
      fc.property(fc.array(markerOrNear, { maxLength: 12 }), fc.nat(), (pieces, cut) => {
        const text = pieces.join("");
        const from = cut % (text.length + 1);
        const book = createSectionBook();
        for (let cr = text.indexOf("\r"); cr !== -1; cr = text.indexOf("\r", cr + 1)) {
          // The reference: every `section_` from `from` on, read forward, for a marker ending here.
          let start = -1;
          const forward = newMarker();
          for (let at = text.indexOf("section_", from); at !== -1 && at < cr; at += 1) {
            at = text.indexOf("section_", at);
            if (at === -1 || at >= cr) break;
            if (readMarker(text, at, book, forward) && forward.end === cr + 5) {
              start = at;
              break;
            }
          }
          const back = newMarker();
          expect(readMarkerBefore(text, cr, from, book, back)).toBe(start);
          if (start !== -1) expect(back).toEqual(forward);
          // Without a book, only where it starts and ends.
          const bare = newMarker();
          expect(readMarkerBefore(text, cr, from, undefined, bare)).toBe(start);
          if (start !== -1) expect(bare.end).toBe(forward.end);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe("removing escapes from a line inside a longer text", () => {
  it("gives what removing them from the line cut out does", () => {
    const piece = fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.constantFrom("\x1b", "\x1b[", "\x1b[0K", "\x1b[32;1m", "\x1b]0;t", "\x07", "\x1bP", "\\"),
      fc.constantFrom("\x1b\\", "\x1b(B", "\n"),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 20 }), fc.nat(), fc.nat(), (pieces, a, b) => {
        const text = pieces.join("");
        const from = a % (text.length + 1);
        const end = from + (b % (text.length - from + 1));
        const line = text.slice(from, end);
        expect(stripEscapesBetween(text, from, end, text.indexOf("\x1b", from))).toBe(
          stripEscapes(line),
        );
      }),
      { numRuns: 2000 },
    );
  });
});
