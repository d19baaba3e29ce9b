import { describe, expect, it } from "vitest";
import { typedInputs } from "../../src/gitlab/gitlab.js";

describe("inputs typed as the pipeline declares them", () => {
  const declared = new Map([
    ["vm_id", "NUMBER"],
    ["vm_name", "STRING"],
    ["flag", "BOOLEAN"],
  ]);

  it("sends a number where the pipeline says NUMBER, a string where it says STRING", () => {
    expect(typedInputs({ vm_id: "150", vm_name: 42 }, declared)).toEqual({
      vm_id: 150,
      vm_name: "42",
    });
  });

  it("leaves a value that is no number, another type, or an undeclared input as it is", () => {
    expect(typedInputs({ vm_id: "abc", flag: "true", other: "1" }, declared)).toEqual({
      vm_id: "abc",
      flag: "true",
      other: "1",
    });
  });
});
