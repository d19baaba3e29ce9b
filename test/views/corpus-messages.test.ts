import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseAnsibleOutput } from "../../src/ansible/recap.js";
import { escapeMrkdwn, truncate } from "../../src/slack/mrkdwn.js";
import { parsePlanText } from "../../src/terraform/plan-text.js";
import { planMessage } from "../../src/views/plan-message.js";
import { recapText } from "../../src/views/recap.js";
import { fixturePath, readFixture } from "../support/fixtures.js";
import { sampleRequest } from "../support/requests.js";

/**
 * What a person must see for each file of the corpus (test/corpus.test.ts checks the reading):
 * Terraform's counts and every destroyed or replaced resource; every failed or unreachable host
 * with its task and message.
 */
interface Written {
  parser: "plan-text" | "recap";
  counts?: { add: number; change: number; destroy: number; import?: number } | null;
  noChanges?: boolean;
  resources?: [string, string][];
  hosts?: [string, number, number, number, number, number, number, number][];
  failures?: { host: string; task: string; kind: string; message: string; ignored: boolean }[];
}

function files(dir: string): string[] {
  return readdirSync(fixturePath(dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return files(relative);
    return relative.endsWith(".expected.json") ? [] : [relative];
  });
}

const corpus = files("corpus").sort();
const written = (file: string) => JSON.parse(readFixture(`${file}.expected.json`)) as Written;
const plans = corpus.filter((file) => written(file).parser === "plan-text");
const runs = corpus.filter((file) => written(file).parser === "recap");

const request = sampleRequest({ status: "awaiting_approval", messageTs: "1700000000.000100" });

describe("the messages for the corpus", () => {
  it.each(plans)(
    "show the counts, imports too, every destroyed or replaced resource and every move of %s",
    (file) => {
      const expected = written(file);
      const text = JSON.stringify(
        planMessage(request, {
          plan: parsePlanText(readFixture(file)),
          nodes: undefined,
          planJobUrl: undefined,
          planFile: "none",
        }),
      );
      if (expected.counts !== null && expected.counts !== undefined) {
        const { add, change, destroy } = expected.counts;
        expect(text).toContain(`*${add}* to add, *${change}* to change, *${destroy}* to destroy`);
        const importing = expected.counts.import ?? 0;
        if (importing > 0) expect(text).toContain(`*${importing}* to import, *${add}* to add`);
      }
      const changes = (expected.resources ?? []).filter(([, action]) => action !== "no-op");
      if (expected.counts === null && expected.noChanges === false && changes.length === 0) {
        // No "Plan:" line and nothing planned: no counts are made up.
        expect(text).not.toContain("*0* to add");
        expect(text).toMatch(/printed no \\"Plan:\\" line|no resource changes, only outputs/);
      }
      for (const [address, action] of expected.resources ?? []) {
        // A move or an import is the only change of a resource listed as no-op: it is named.
        if (action === "no-op" && expected.counts !== null) {
          expect(text).toContain(JSON.stringify(escapeMrkdwn(address)).slice(1, -1));
        }
        if (action !== "delete" && action !== "replace") continue;
        expect(text).toContain(JSON.stringify(escapeMrkdwn(address)).slice(1, -1));
      }
    },
  );

  it("name what a removed block takes out of the state without destroying it", () => {
    const text = JSON.stringify(
      planMessage(request, {
        plan: parsePlanText(
          readFixture("corpus/terraform/terraform-plan-comment-basic-3-remove-plan.txt"),
        ),
        nodes: undefined,
        planJobUrl: undefined,
        planFile: "none",
      }),
    );
    expect(text).toContain("local_file.test2 leaves Terraform's state but is not destroyed");
  });

  it("say so when Ansible's PLAY RECAP lists no host, rather than nothing", () => {
    const run = parseAnsibleOutput(
      readFixture("corpus/ansible/data_tagging_controller.expected_stdout.txt"),
    );
    expect(run.recapFound).toBe(true);
    expect(recapText(run)).toBe("Ansible's PLAY RECAP lists no host: the playbook ran on none.");
  });

  it.each(runs)("show every failed or unreachable host of %s with its task and message", (file) => {
    const expected = written(file);
    const text = recapText(parseAnsibleOutput(readFixture(file)));
    expect(text.trim()).not.toBe("");
    for (const [host, , , unreachable, failed] of expected.hosts ?? []) {
      if (unreachable === 0 && failed === 0) continue;
      const kind = failed > 0 ? "failed" : "unreachable";
      const shown = (expected.failures ?? []).filter(
        (f) => f.host === host && f.kind === kind && !f.ignored,
      );
      expect(shown.length).toBeGreaterThan(0);
      // The failure's line: host, kind and task, perhaps the loop item, then the message.
      const shownInText = (f: (typeof shown)[number]) => {
        const head = `• *${escapeMrkdwn(host)}* ${kind} in _${escapeMrkdwn(f.task)}_`;
        const start = text.indexOf(head);
        if (start === -1) return false;
        const end = text.indexOf("\n• ", start + head.length);
        const line = text.slice(start, end === -1 ? undefined : end);
        return line.includes(`: ${escapeMrkdwn(truncate(f.message, 300))}`);
      };
      expect(shown.some(shownInText)).toBe(true);
    }
  });
});
