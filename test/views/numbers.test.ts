import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { wholeNumberWords } from "../../src/views/numbers.js";

describe("wholeNumberWords", () => {
  it("groups thousands as en-US does", () => {
    expect(wholeNumberWords(0)).toBe("0");
    expect(wholeNumberWords(999)).toBe("999");
    expect(wholeNumberWords(1000)).toBe("1,000");
    expect(wholeNumberWords(65_536)).toBe("65,536");
    expect(wholeNumberWords(1_048_576)).toBe("1,048,576");
    expect(wholeNumberWords(-1234)).toBe("-1,234");
  });

  it("writes every whole number exactly as toLocaleString('en-US') does", () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.double()), (n) => {
        expect(wholeNumberWords(n)).toBe(n.toLocaleString("en-US"));
      }),
      { numRuns: 2000 },
    );
  });
});
