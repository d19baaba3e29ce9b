import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  createRecapParser,
  MAX_MESSAGE_LENGTH,
  parseAnsibleOutput,
  type AnsibleRun,
  type HostRecap,
} from "../../src/ansible/recap.js";
import { cleanTrace } from "../../src/gitlab/trace.js";
import { readFixture } from "../support/fixtures.js";
import { colorize, cutPoints, hostileText, printable, SGR } from "../support/generators.js";

const RUNS = { numRuns: 200 };

const FIXTURES = [
  "ansible/ok-first-nocolor.txt",
  "ansible/fail-color.txt",
  "ansible-callback/callback_default.out.default.stdout",
  "ansible-callback/callback_default.out.failed_to_stderr.stdout",
  "ansible-callback/callback_default.out.include_role_fails.stdout",
];

const stars = (text: string) => `${text} ${"*".repeat(Math.max(3, 79 - text.length))}`;

/** Host and task names: plain, or hostile (Ansible prints whatever the inventory holds). */
const hostName = fc.oneof(
  fc.constantFrom("web-01", "test-vm-01", "localhost", "db -> bastion"),
  hostileText.filter((h) => !/[\s\]]/.test(h) && h !== ""),
);
const taskName = fc.oneof(fc.constantFrom("Write motd", "Start qemu-guest-agent"), hostileText);

const payload = fc.oneof(
  fc
    .record(
      {
        msg: fc.oneof(hostileText, fc.string({ maxLength: 600 })),
        reason: fc.string(),
        stderr: fc.string(),
        unreachable: fc.boolean(),
        changed: fc.boolean(),
      },
      { requiredKeys: [] },
    )
    .chain((value) => fc.constantFrom(JSON.stringify(value), JSON.stringify(value, null, 4))),
  fc.constantFrom('{"msg": "unterminated', "{", "}", "[1, {", "plain words", ""),
);

const counts = fc
  .tuple(...Array.from({ length: 7 }, () => fc.nat(40)))
  .map(
    ([ok, changed, unreachable, failed, skipped, rescued, ignored]) =>
      `ok=${ok}   changed=${changed}   unreachable=${unreachable}   failed=${failed}   skipped=${skipped}   rescued=${rescued}   ignored=${ignored}`,
  );

/** One piece of an ansible-playbook log, its default callback's wording. */
const logPiece = fc.oneof(
  { weight: 2, arbitrary: taskName.map((name) => stars(`TASK [${name}]`)) },
  { weight: 1, arbitrary: taskName.map((name) => stars(`PLAY [${name}]`)) },
  { weight: 1, arbitrary: taskName.map((name) => stars(`RUNNING HANDLER [${name}]`)) },
  { weight: 2, arbitrary: hostName.map((host) => `changed: [${host}]`) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(hostName, fc.constantFrom("FAILED", "UNREACHABLE"), payload)
      .map(([host, kind, body]) => `fatal: [${host}]: ${kind}! => ${body}`),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(hostName, hostileText, payload)
      .map(([host, item, body]) => `failed: [${host}] (item=${item}) => ${body}`),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        hostName,
        fc.constantFrom("FAILED", "UNREACHABLE"),
        fc.array(hostileText, { maxLength: 4 }),
      )
      .map(([host, kind, lines]) =>
        [`fatal: [${host}]: ${kind}! => `, ...lines.map((line) => `    ${line}`)].join("\n"),
      ),
  },
  { weight: 2, arbitrary: fc.constant("...ignoring") },
  { weight: 1, arbitrary: fc.constant("           to retry, use: --limit @site.retry") },
  { weight: 1, arbitrary: fc.constant(stars("PLAY RECAP")) },
  {
    weight: 3,
    arbitrary: fc.tuple(hostName, counts).map(([host, row]) => `${host.padEnd(26)} : ${row}`),
  },
  { weight: 2, arbitrary: fc.constant("") },
  { weight: 1, arbitrary: hostileText },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 20 }) },
);

const ansibleLog = fc.array(logPiece, { maxLength: 40 }).map((pieces) => pieces.join("\n"));

/** Printable text, tabs and newlines only: ansible-playbook's output without colour. */
const plainLog = ansibleLog.map(printable);

function lineByLine(text: string): AnsibleRun {
  const parser = createRecapParser();
  for (const line of text.split("\n")) parser.push(line);
  return parser.result();
}

function expectBounded(text: string, run: AnsibleRun): void {
  const lines = text.split("\n").length;
  expect(run.hosts.length).toBeLessThanOrEqual(lines);
  expect(run.failures.length).toBeLessThanOrEqual(lines);
  expect(run.plays.length).toBeLessThanOrEqual(lines);
  for (const failure of run.failures) {
    expect(failure.message.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
  }
  for (const host of run.hosts) {
    for (const value of Object.values(host)) {
      if (typeof value === "number") expect(Number.isSafeInteger(value) && value >= 0).toBe(true);
    }
  }
}

const COUNTS: (keyof HostRecap)[] = [
  "ok",
  "changed",
  "unreachable",
  "failed",
  "skipped",
  "rescued",
  "ignored",
];

/**
 * What a log cut at `cut` may report, against the whole log: no host or count the whole log does
 * not have, and every failure but the one the cut may have fallen in as the whole log reads it.
 */
function expectCutAgrees(text: string, cut: number, whole: AnsibleRun): void {
  const run = parseAnsibleOutput(text.slice(0, cut));
  if (run.recapFound) expect(whole.recapFound).toBe(true);
  for (const host of run.hosts) {
    const full = whole.hosts.find((h) => h.host === host.host);
    if (full === undefined) expect.fail(`host ${host.host} is not in the whole log`);
    for (const key of COUNTS) expect(host[key]).toBeLessThanOrEqual(full[key] as number);
  }
  expect(run.plays).toEqual(whole.plays.slice(0, run.plays.length));
  const settled = ({ host, task, play, kind, item, message }: AnsibleRun["failures"][number]) => ({
    host,
    task,
    play,
    kind,
    item,
    message,
  });
  const found = run.failures;
  expect(found.slice(0, -1).map(settled)).toEqual(
    whole.failures.slice(0, Math.max(0, found.length - 1)).map(settled),
  );
  const last = found.at(-1);
  if (last !== undefined) {
    expect(whole.failures[found.length - 1]).toMatchObject({ host: last.host, task: last.task });
  }
}

describe("reading ansible-playbook output", () => {
  it("never throws on any log and keeps a result bounded by its number of lines", () => {
    fc.assert(
      fc.property(fc.oneof(ansibleLog, fc.string({ unit: "binary", maxLength: 400 })), (log) => {
        expectBounded(log, parseAnsibleOutput(log));
      }),
      RUNS,
    );
  });

  it("reads a log fed line by line, or in one piece, as the whole log", () => {
    fc.assert(
      fc.property(ansibleLog, (log) => {
        const whole = parseAnsibleOutput(log);
        expect(lineByLine(log)).toEqual(whole);
        const parser = createRecapParser();
        parser.push(log);
        expect(parser.result()).toEqual(whole);
      }),
      RUNS,
    );
  });

  it("reads CRLF line ends as LF", () => {
    fc.assert(
      fc.property(ansibleLog, (log) => {
        expect(parseAnsibleOutput(log.replaceAll("\n", "\r\n"))).toEqual(parseAnsibleOutput(log));
      }),
      RUNS,
    );
  });

  it("reads coloured output as the plain output, directly and from a cleaned job log", () => {
    fc.assert(
      fc.property(
        plainLog,
        fc.array(fc.nat(), { maxLength: 30 }),
        fc.array(fc.constantFrom(...SGR), { minLength: 1, maxLength: 4 }),
        (log, positions, codes) => {
          const colored = colorize(log, positions, codes);
          const plain = parseAnsibleOutput(log);
          expect(parseAnsibleOutput(colored)).toEqual(plain);
          expect(parseAnsibleOutput(cleanTrace(colored))).toEqual(plain);
        },
      ),
      RUNS,
    );
  });

  it("reads a log cut anywhere as at most what the whole log says", () => {
    fc.assert(
      fc.property(ansibleLog, fc.nat(), (log, at) => {
        expectCutAgrees(log, at % (log.length + 1), parseAnsibleOutput(log));
      }),
      { numRuns: 500 },
    );
  });

  it("reads a large hostile log in one pass (bounded by the test's timeout)", () => {
    const count = 50_000;
    const log = [
      stars("TASK [one task, many failures]"),
      'fatal: [web-01]: FAILED! => {"msg": "x"}\n...ignoring\n'.repeat(count),
      // More `...ignoring` lines than failures: each looks for a failure to mark.
      "...ignoring\n".repeat(count),
      `fatal: [web-01]: FAILED! => {${'"msg": "'.repeat(20_000)}`,
      ...Array.from({ length: 1_000 }, () => `    "a": ${"[".repeat(100)}`),
      stars("PLAY RECAP"),
      `web-01 : ${"ok=1 ".repeat(20_000)}changed=0 unreachable=0 failed=1`,
    ].join("\n");
    const run = parseAnsibleOutput(log);
    expectBounded(log, run);
    expect(run.recapFound).toBe(true);
    // The last failure is of the same task and host, so the same outcome: ignored too.
    expect(run.failures).toHaveLength(count + 1);
    expect(run.failures.every((failure) => failure.ignored)).toBe(true);
  });
});

describe("reading cut and re-encoded copies of the ansible fixtures", () => {
  for (const name of FIXTURES) {
    const log = readFixture(name);
    const whole = parseAnsibleOutput(log);

    it(`reads ${name} cut at any point as at most what the whole log says`, () => {
      for (const cut of cutPoints(log, 4000)) expectCutAgrees(log, cut, whole);
    });

    it(`reads ${name} with CRLF line ends, and from a cleaned job log, as the log itself`, () => {
      expect(parseAnsibleOutput(log.replaceAll("\n", "\r\n"))).toEqual(whole);
      expect(parseAnsibleOutput(cleanTrace(log))).toEqual(whole);
    });
  }
});

/** Words of a failure message, some of which YAML would need quoting for. */
const messageWord = fc.oneof(
  fc.stringMatching(/^[a-z][a-z0-9./-]{0,12}$/),
  fc.constantFrom("/dev/sda1:", "it's", "#1", "'quoted'", '"double"', "a: b", "- dash", "{x}"),
);
const messageLine = fc
  .array(messageWord, { minLength: 1, maxLength: 8 })
  .map((words) => words.join(" "));

/** A YAML scalar as Ansible's YAML result format may print it: plain, single-quoted or a block. */
function yamlValue(lines: string[], style: "plain" | "quoted" | "block", indent: string): string[] {
  const text = lines.join("\n");
  const plainSafe =
    lines.length === 1 && !/^['"#{[&*!|>%@`-]|: | #|:$/.test(text) && text.trim() === text;
  if (style === "plain" && plainSafe) return [` ${text}`];
  if (style === "block" || lines.length > 1) {
    return [" |-", ...lines.map((line) => `${indent}    ${line}`)];
  }
  return [` '${text.replaceAll("'", "''")}'`];
}

const hostNames = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/), {
  minLength: 1,
  maxLength: 6,
});
const recapCounts = fc.tuple(...Array.from({ length: 7 }, () => fc.nat(500)));

const yamlRun = fc
  .record({
    hosts: hostNames,
    columns: fc.constantFrom(4, 5, 7),
    retryHint: fc.boolean(),
    indent: fc.constantFrom("    ", "  "),
  })
  .chain(({ hosts, columns, retryHint, indent }) =>
    fc.record({
      columns: fc.constant(columns),
      retryHint: fc.constant(retryHint),
      indent: fc.constant(indent),
      rows: fc.tuple(...hosts.map((host) => fc.tuple(fc.constant(host), recapCounts))),
      failures: fc.array(
        fc.record({
          host: fc.constantFrom(...hosts),
          task: fc.stringMatching(/^[A-Za-z][A-Za-z0-9 _-]{0,20}[A-Za-z0-9]$/),
          kind: fc.constantFrom("failed" as const, "unreachable" as const),
          lines: fc.array(messageLine, { minLength: 1, maxLength: 3 }),
          style: fc.constantFrom("plain" as const, "quoted" as const, "block" as const),
        }),
        { maxLength: 5 },
      ),
    }),
  );

describe("reading the YAML result format and the recap's variants", () => {
  it("gives back every generated failure's message and every host's counts", () => {
    fc.assert(
      fc.property(yamlRun, ({ columns, retryHint, indent, rows, failures }) => {
        const log: string[] = [stars("PLAY [site]"), ""];
        for (const failure of failures) {
          log.push(stars(`TASK [${failure.task}]`));
          const word = failure.kind === "failed" ? "FAILED" : "UNREACHABLE";
          log.push(`fatal: [${failure.host}]: ${word}! => `);
          log.push(`${indent}changed: false`);
          const [first = "", ...rest] = yamlValue(failure.lines, failure.style, indent);
          log.push(`${indent}msg:${first}`, ...rest);
          if (failure.kind === "unreachable") log.push(`${indent}unreachable: true`);
          log.push("");
        }
        log.push(stars("PLAY RECAP"));
        if (retryHint) log.push("           to retry, use: --limit @/srv/site.retry", "");
        const keys = ["ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored"];
        for (const [host, values] of rows) {
          const pairs = keys
            .slice(0, columns)
            .map((key, i) => `${key}=${String(values[i]).padEnd(4)}`);
          log.push(`${host.padEnd(26)} : ${pairs.join(" ")}`);
        }
        log.push("");

        const run = parseAnsibleOutput(log.join("\n"));
        expect(run.recapFound).toBe(true);
        expect(run.hosts).toEqual(
          rows.map(([host, values]) => {
            const shown = values.map((value, i) => (i < columns ? value : 0));
            return {
              host,
              ok: shown[0],
              changed: shown[1],
              unreachable: shown[2],
              failed: shown[3],
              skipped: shown[4],
              rescued: shown[5],
              ignored: shown[6],
            };
          }),
        );
        expect(
          run.failures.map(({ host, task, kind, message }) => ({ host, task, kind, message })),
        ).toEqual(
          failures.map(({ host, task, kind, lines }) => ({
            host,
            task,
            kind,
            message: lines.join("\n").trim(),
          })),
        );
      }),
      RUNS,
    );
  });
});
