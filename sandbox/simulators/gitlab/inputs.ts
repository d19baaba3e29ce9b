/** spec:inputs, as Gitlab::Ci::Config::Interpolation::Inputs checks them. */
import { type InputSpec, type InputValue } from "./types.js";

export function inputType(spec: InputSpec): "string" | "number" | "boolean" {
  return spec.type ?? "string";
}

export function inputTypeMatches(spec: InputSpec, value: unknown): boolean {
  switch (inputType(spec)) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "boolean":
      return typeof value === "boolean";
  }
}

function formatInputValue(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Returns the inputs the pipeline runs with, or GitLab's error text (first 3 errors joined). */
export function resolveInputs(
  specs: Readonly<Record<string, InputSpec>> | undefined,
  given: Record<string, unknown>,
): { inputs: Record<string, InputValue> } | { error: string } {
  const givenNames = Object.keys(given);
  if (specs === undefined) {
    if (givenNames.length > 0) {
      return {
        error: "Given inputs not defined in the `spec` section of the included configuration file",
      };
    }
    return { inputs: {} };
  }
  const errors: string[] = [];
  const unknown = givenNames.filter((name) => !Object.hasOwn(specs, name));
  if (unknown.length > 0) errors.push(`unknown input arguments: ${unknown.join(", ")}`);

  const inputs: Record<string, InputValue> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const raw = given[name];
    const provided = raw !== undefined && raw !== null;
    const fail = (message: string): void => {
      errors.push(`\`${name}\` input: ${message}`);
    };
    if (!provided) {
      if (spec.default === undefined) fail("required value has not been provided");
      else inputs[name] = spec.default;
      continue;
    }
    const type = inputType(spec);
    const typeOk = inputTypeMatches(spec, raw);
    if (!typeOk) fail(`provided value is not a ${type}`);
    if (spec.options !== undefined && !spec.options.some((option) => option === raw)) {
      // The two wordings are GitLab's own (StringInput and NumberInput differ by "the").
      const list =
        type === "number" ? "the list of the allowed options" : "the list of allowed options";
      fail(`\`${formatInputValue(raw)}\` cannot be used because it is not in ${list}`);
    }
    if (typeOk) inputs[name] = raw as InputValue;
  }
  return errors.length > 0 ? { error: errors.slice(0, 3).join(", ") } : { inputs };
}
