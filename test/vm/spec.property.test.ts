import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readCreateForm } from "../../src/actions/create-submit.js";
import { CREATE_FIELDS, type CreateField } from "../../src/ids.js";
import {
  LIMITS,
  pipelineParams,
  validateVmForm,
  type FormOptions,
  type VmFormValues,
  type VmSpec,
} from "../../src/vm/spec.js";
import { anyText, dotted, dottedQuadValue, LOOKALIKE_CHARACTERS } from "../support/generators.js";

const RUNS = { numRuns: 300 };

const OPTIONS: FormOptions = {
  nodes: ["pve", "pve2", "node-3"],
  templates: [
    { name: "ubuntu", id: 9000 },
    { name: "debian", id: 9001 },
    { name: "rocky", id: 120 },
  ],
};

const FIELDS = Object.keys(CREATE_FIELDS) as CreateField[];

/** What a person might leave around a value: nothing, spaces, tabs, a newline. */
const padding = fc.constantFrom("", " ", "  ", "\t", "\n", " \u00a0");
const padded = (value: fc.Arbitrary<string>) =>
  fc.tuple(padding, value, padding).map(([before, text, after]) => `${before}${text}${after}`);

/** A whole number in range, as typed: maybe with leading zeros. */
const typedNumber = (range: { min: number; max: number }) =>
  fc
    .tuple(fc.integer(range), fc.integer({ min: 0, max: 3 }))
    .map(([value, zeros]) => `${"0".repeat(zeros)}${value}`)
    .filter((text) => text.length <= 12);

/** A hostname label as RFC 1123 has it, in any mix of case. */
const hostname = fc.mixedCase(fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/));

/** An address, a prefix from /8 to /30, and a gateway: two distinct hosts of that subnet. */
const network = fc
  .record({
    base: fc.integer({ min: 0, max: 0xffffffff }),
    prefix: fc.integer({ min: LIMITS.prefix.min, max: LIMITS.prefix.max }),
    host: fc.nat(),
    gatewayHost: fc.nat(),
  })
  .map(({ base, prefix, host, gatewayHost }) => {
    const size = 2 ** (32 - prefix);
    const start = base - (base % size);
    const hosts = size - 2;
    const hostIndex = 1 + (host % hosts);
    let gatewayIndex = 1 + (gatewayHost % hosts);
    if (gatewayIndex === hostIndex) gatewayIndex = (gatewayIndex % hosts) + 1;
    return {
      ip: `${dotted(start + hostIndex)}/${prefix}`,
      gateway: dotted(start + gatewayIndex),
      start,
      size,
    };
  });

/** A form a person filled in correctly, as typed (spaces and capitals included). */
const validForm = fc
  .record({
    name: padded(hostname),
    node: padded(fc.constantFrom(...OPTIONS.nodes)),
    template: padded(fc.constantFrom(...OPTIONS.templates.map((t) => String(t.id)))),
    cores: padded(typedNumber(LIMITS.cores)),
    memory: padded(typedNumber(LIMITS.memoryMb)),
    disk: padded(typedNumber(LIMITS.diskGb)),
    network,
    dns: padded(fc.ipV4()),
    vmId: fc.option(padded(fc.oneof(typedNumber(LIMITS.vmId), fc.constantFrom("0", "000"))), {
      nil: undefined,
    }),
    vlan: fc.option(padded(fc.oneof(typedNumber(LIMITS.vlan), fc.constantFrom("0", "00"))), {
      nil: undefined,
    }),
    ipPadding: fc.tuple(padding, padding),
    gatewayPadding: fc.tuple(padding, padding),
  })
  .map(({ network: net, ipPadding, gatewayPadding, ...fields }) => {
    const form: VmFormValues = {
      ...fields,
      ip: `${ipPadding[0]}${net.ip}${ipPadding[1]}`,
      gateway: `${gatewayPadding[0]}${net.gateway}${gatewayPadding[1]}`,
    };
    if (form.vmId === undefined) delete form.vmId;
    if (form.vlan === undefined) delete form.vlan;
    return form;
  });

const wholeOrZero = (text: string | undefined) =>
  text === undefined || text.trim() === "" ? 0 : Number(text.trim());

/** The documented normalisation: trimmed, the name lower-cased, numbers read as numbers. */
function expectedSpec(form: VmFormValues): Omit<VmSpec, "templateName"> {
  const trim = (field: CreateField) => (form[field] ?? "").trim();
  return {
    name: trim("name").toLowerCase(),
    node: trim("node"),
    templateId: Number(trim("template")),
    cores: Number(trim("cores")),
    memoryMb: Number(trim("memory")),
    diskGb: Number(trim("disk")),
    ip: trim("ip"),
    gateway: trim("gateway"),
    dns: trim("dns"),
    vmId: wholeOrZero(form.vmId),
    vlanId: wholeOrZero(form.vlan),
  };
}

/** `view.state.values` as Slack sends it for the form: text inputs and static selects. */
function stateValues(form: VmFormValues): Record<string, Record<string, unknown>> {
  const state: Record<string, Record<string, unknown>> = {};
  for (const field of FIELDS) {
    const id = CREATE_FIELDS[field];
    const value = form[field];
    state[id] = {
      [id]:
        field === "node" || field === "template"
          ? {
              type: "static_select",
              selected_option:
                value === undefined ? null : { text: { type: "plain_text", text: value }, value },
            }
          : {
              type:
                field === "cores" || field === "memory" || field === "disk"
                  ? "number_input"
                  : "plain_text_input",
              value: value ?? null,
            },
    };
  }
  return state;
}

describe("the create form, from what was typed to the pipeline's inputs", () => {
  it("accepts every correctly filled form and sends exactly what was typed, normalised", () => {
    fc.assert(
      fc.property(
        validForm,
        fc.constantFrom("variables" as const, "inputs" as const),
        (form, sizing) => {
          const result = validateVmForm(readCreateForm(stateValues(form)), OPTIONS);
          if (!result.ok)
            expect.fail(`rejected ${JSON.stringify(form)}: ${JSON.stringify(result.errors)}`);
          const spec = expectedSpec(form);
          expect(result.spec).toMatchObject(spec);

          // Untyped inputs, as the example pipeline declares them: every value is a string.
          const params = pipelineParams(result.spec, { sizing });
          const inputs = {
            action: "apply",
            vm_name: spec.name,
            vm_ip: spec.ip,
            vm_gateway: spec.gateway,
            template_vm_id: String(spec.templateId),
            proxmox_node: spec.node,
            vm_id: String(spec.vmId),
            vlan_id: String(spec.vlanId),
          };
          const sizingValues = {
            cpu_cores: String(spec.cores),
            memory_mb: String(spec.memoryMb),
            disk_size_gb: String(spec.diskGb),
            dns_server: spec.dns,
          };
          expect(params).toEqual(
            sizing === "inputs"
              ? { inputs: { ...inputs, ...sizingValues }, variables: {} }
              : {
                  inputs,
                  variables: {
                    TF_VAR_cpu_cores: String(spec.cores),
                    TF_VAR_memory_mb: String(spec.memoryMb),
                    TF_VAR_disk_size_gb: String(spec.diskGb),
                    TF_VAR_dns_server: spec.dns,
                  },
                },
          );
          // A note tells the requester when the name was changed, and only then.
          const folded = form.name?.trim() !== spec.name;
          expect(result.notes.some((note) => note.includes("folded to lower case"))).toBe(folded);
        },
      ),
      RUNS,
    );
  });

  /** A field's text: usually a good one, otherwise anything at all. */
  const fieldText = (good: fc.Arbitrary<string>) =>
    fc.oneof(
      { weight: 3, arbitrary: good },
      { weight: 1, arbitrary: anyText() },
      {
        weight: 1,
        arbitrary: fc.constant(undefined),
      },
    );

  const mixedForm = fc
    .tuple(validForm, fc.record(Object.fromEntries(FIELDS.map((f) => [f, fc.boolean()]))))
    .chain(([form, garble]) =>
      fc.record(
        Object.fromEntries(
          FIELDS.map((field) => [
            field,
            garble[field] === true
              ? fieldText(fc.constant(form[field] ?? ""))
              : fc.constant(form[field]),
          ]),
        ) as Record<CreateField, fc.Arbitrary<string | undefined>>,
      ),
    )
    .map((fields) => {
      const form: VmFormValues = {};
      for (const field of FIELDS) {
        const value = fields[field];
        if (value !== undefined) form[field] = value;
      }
      return form;
    });

  it("never lets through a value that is not a hostname, an IPv4 address or in range", () => {
    fc.assert(
      fc.property(mixedForm, (form) => {
        const result = validateVmForm(form, OPTIONS);
        if (!result.ok) return;
        const { spec } = result;
        const typedName = (form.name ?? "").trim();
        // What was typed is a hostname up to case: nothing else folds into one.
        expect(typedName).toMatch(/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/);
        expect(spec.name).toBe(typedName.toLowerCase());

        expect(OPTIONS.nodes).toContain(spec.node);
        expect(OPTIONS.templates.map((t) => t.id)).toContain(spec.templateId);
        expect(spec.cores).toBeGreaterThanOrEqual(LIMITS.cores.min);
        expect(spec.cores).toBeLessThanOrEqual(LIMITS.cores.max);
        expect(spec.memoryMb).toBeGreaterThanOrEqual(LIMITS.memoryMb.min);
        expect(spec.memoryMb).toBeLessThanOrEqual(LIMITS.memoryMb.max);
        expect(spec.diskGb).toBeGreaterThanOrEqual(LIMITS.diskGb.min);
        expect(spec.diskGb).toBeLessThanOrEqual(LIMITS.diskGb.max);
        for (const [id, range] of [
          [spec.vmId, LIMITS.vmId],
          [spec.vlanId, LIMITS.vlan],
        ] as const) {
          expect(id === 0 || (id >= range.min && id <= range.max)).toBe(true);
          expect(Number.isInteger(id)).toBe(true);
        }

        const [addressText, prefixText] = spec.ip.split("/");
        const addressValue = dottedQuadValue(addressText ?? "");
        const prefix = Number(prefixText);
        expect(addressValue).toBeDefined();
        expect(prefix).toBeGreaterThanOrEqual(LIMITS.prefix.min);
        expect(prefix).toBeLessThanOrEqual(LIMITS.prefix.max);
        const size = 2 ** (32 - prefix);
        const start = addressValue! - (addressValue! % size);
        expect(addressValue).not.toBe(start);
        expect(addressValue).not.toBe(start + size - 1);

        const gatewayValue = dottedQuadValue(spec.gateway);
        expect(gatewayValue).toBeDefined();
        expect(gatewayValue! > start && gatewayValue! < start + size - 1).toBe(true);
        expect(gatewayValue).not.toBe(addressValue);
        expect(dottedQuadValue(spec.dns)).toBeDefined();
      }),
      RUNS,
    );
  });

  it("never throws on any text in any field, and a refusal always says what is wrong", () => {
    const anyForm = fc.record(
      Object.fromEntries(FIELDS.map((field) => [field, anyText(80)])) as Record<
        CreateField,
        fc.Arbitrary<string>
      >,
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(anyForm, (form) => {
        const result = validateVmForm(form, OPTIONS);
        if (result.ok) return;
        const entries = Object.entries(result.errors);
        expect(entries.length).toBeGreaterThan(0);
        for (const [field, message] of entries) {
          expect(FIELDS).toContain(field);
          expect(typeof message).toBe("string");
          expect(message.trim()).not.toBe("");
        }
      }),
      RUNS,
    );
  });

  it("refuses a name holding any character but a-z, A-Z, 0-9 and -, even one that folds into them", () => {
    const odd = fc.oneof(
      fc.constantFrom(...LOOKALIKE_CHARACTERS),
      fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
    );
    fc.assert(
      fc.property(rightElsewhere, hostname, odd, hostname, (form, before, char, after) => {
        fc.pre(!/[A-Za-z0-9-]/.test(char));
        const result = validateVmForm({ ...form, name: `${before}${char}${after}` }, OPTIONS);
        if (result.ok) expect.fail(`accepted the name ${JSON.stringify(result.spec.name)}`);
        expect(Object.keys(result.errors)).toEqual(["name"]);
      }),
      RUNS,
    );
  });

  /** For each field, text that is wrong there whatever the other fields say. */
  const WRONG: Record<CreateField, fc.Arbitrary<string | undefined>> = {
    name: fc.oneof(
      fc.constant(undefined),
      fc.constantFrom("", "   ", "-web", "web-", "-", "web_01", "web.lan", "wéb", "web 01"),
      fc
        .string({ minLength: 64, maxLength: 80, unit: fc.constantFrom("a", "b", "1", "-") })
        .map((s) => `a${s}a`),
      fc
        .tuple(hostname, fc.constantFrom(...LOOKALIKE_CHARACTERS), hostname)
        .map(([a, odd, b]) => `${a}${odd}${b}`),
      fc
        .tuple(hostname, fc.string({ unit: "binary", minLength: 1, maxLength: 3 }), hostname)
        .filter(([, middle]) => /[^A-Za-z0-9-\s]/.test(middle))
        .map(([a, middle, b]) => `${a}${middle}${b}`),
    ),
    node: fc.oneof(
      fc.constant(undefined),
      anyText().filter((text) => !OPTIONS.nodes.includes(text.trim())),
      fc.constantFrom("PVE", "pve ,pve2", "pve\u200b"),
    ),
    template: fc.oneof(
      fc.constant(undefined),
      fc.constantFrom("ubuntu", "09000", "9000.0", "0x2328", "9002", "-9000"),
      anyText().filter((text) => !["9000", "9001", "120"].includes(text.trim())),
    ),
    cores: fc.oneof(
      fc.constant(undefined),
      fc.integer({ min: LIMITS.cores.max + 1 }).map(String),
      fc.constantFrom("0", "-1", "2.5", "1e2", "two", "", "0x10", "\uff12", "\u0662"),
    ),
    memory: fc.oneof(
      fc.constant(undefined),
      fc.integer({ min: 0, max: LIMITS.memoryMb.min - 1 }).map(String),
      fc.integer({ min: LIMITS.memoryMb.max + 1 }).map(String),
      fc.constantFrom("2,048", "2048MB", "2 048", "4e3", "1234567890123"),
    ),
    disk: fc.oneof(
      fc.constant(undefined),
      fc.integer({ min: LIMITS.diskGb.max + 1 }).map(String),
      fc.constantFrom("0", "20G", "-20", "Infinity", "NaN"),
    ),
    ip: fc.oneof(
      fc.constant(undefined),
      fc.ipV4(),
      fc
        .tuple(fc.ipV4(), fc.integer({ min: 0, max: 99 }))
        .filter(([, prefix]) => prefix < LIMITS.prefix.min || prefix > LIMITS.prefix.max)
        .map(([ip, prefix]) => `${ip}/${prefix}`),
      fc.constantFrom(
        "192.168.1.0/24",
        "192.168.1.255/24",
        "192.168.001.50/24",
        "192.168.1.50/024",
        "192.168.1.50 /24",
        "300.1.1.1/24",
        "::1/64",
      ),
    ),
    gateway: fc.oneof(
      fc.constant(undefined),
      fc.constantFrom(
        "192.168.1",
        "192.168.1.01",
        "gateway",
        "192.168.1.1/24",
        "10.0.0.1",
        "192.168.2.1",
        "192.168.1.50",
        "192.168.1.0",
        "192.168.1.255",
      ),
      anyText().filter((text) => dottedQuadValue(text.trim()) === undefined),
    ),
    dns: fc.oneof(
      fc.constant(undefined),
      fc.constantFrom("dns.lan", "1.1.1", "8.8.8.08", "1.1.1.1.1"),
      anyText().filter((text) => dottedQuadValue(text.trim()) === undefined),
    ),
    vmId: fc.oneof(
      fc.integer({ min: 1, max: LIMITS.vmId.min - 1 }).map(String),
      fc.constantFrom("-1", "auto", "1000000000", "1e3", "100.0"),
    ),
    vlan: fc.oneof(
      fc.integer({ min: LIMITS.vlan.max + 1, max: 99_999 }).map(String),
      fc.constantFrom("-1", "untagged", "1.5"),
    ),
  };

  /** A form that is right everywhere else, on 192.168.1.0/24, so the gateway's texts are wrong. */
  const rightElsewhere = validForm.map((form): VmFormValues => ({
    ...form,
    ip: "192.168.1.50/24",
    gateway: "192.168.1.1",
  }));

  it("answers wrong input on the field that holds it, and only there", () => {
    fc.assert(
      fc.property(
        rightElsewhere,
        fc.constantFrom(...FIELDS).chain((field) => fc.tuple(fc.constant(field), WRONG[field])),
        (form, [field, text]) => {
          // A field left blank reaches validation as undefined.
          const changed: VmFormValues = { ...form, [field]: text };
          const result = validateVmForm(changed, OPTIONS);
          if (result.ok) expect.fail(`accepted ${field}=${JSON.stringify(text)}`);
          expect(Object.keys(result.errors)).toEqual([field]);
          expect(result.errors[field]?.trim()).not.toBe("");
        },
      ),
      RUNS,
    );
  });
});

describe("readCreateForm", () => {
  it("never throws on any value, and reads only non-blank strings of the form's fields", () => {
    const shapes = fc.oneof(
      fc.anything({
        withBigInt: true,
        withBoxedValues: true,
        withDate: true,
        withMap: true,
        withNullPrototype: true,
        withObjectString: true,
        withSet: true,
        withSparseArray: true,
        withTypedArray: true,
        key: fc.oneof(
          fc.string(),
          fc.constantFrom(...Object.values(CREATE_FIELDS), "__proto__", "constructor"),
        ),
      }),
      fc.jsonValue(),
      // The form's own block IDs holding elements of any shape.
      fc.dictionary(
        fc.constantFrom(...Object.values(CREATE_FIELDS)),
        fc.dictionary(
          fc.constantFrom(...Object.values(CREATE_FIELDS), "other"),
          fc.oneof(
            fc.record(
              {
                type: fc.oneof(fc.string(), fc.integer()),
                value: fc.oneof(fc.string(), fc.constant(null), fc.integer(), anyText()),
                selected_option: fc.oneof(
                  fc.constant(null),
                  fc.record({ value: fc.oneof(fc.string(), fc.integer()) }),
                  fc.string(),
                ),
              },
              { requiredKeys: [] },
            ),
            fc.anything(),
          ),
        ),
      ),
    );
    fc.assert(
      fc.property(shapes, (values) => {
        const form = readCreateForm(values);
        for (const [field, value] of Object.entries(form)) {
          expect(FIELDS).toContain(field);
          expect(typeof value).toBe("string");
          expect(value.trim()).not.toBe("");
        }
      }),
      { numRuns: 500 },
    );
  });

  it("reads back exactly what each field held, and leaves out the blank ones", () => {
    const texts = fc.record(
      Object.fromEntries(FIELDS.map((field) => [field, fc.oneof(anyText(), padding)])) as Record<
        CreateField,
        fc.Arbitrary<string>
      >,
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(texts, (typed) => {
        const expected = Object.fromEntries(
          Object.entries(typed).filter(([, text]) => text.trim() !== ""),
        );
        expect(readCreateForm(stateValues(typed))).toEqual(expected);
      }),
      RUNS,
    );
  });
});
