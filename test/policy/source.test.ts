import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import {
  createPolicySource,
  PolicyFileError,
  policyRefusedNote,
  type PolicySource,
} from "../../src/policy/source.js";
import { waitFor } from "../support/wait.js";

const LISTS = { requesters: [], approvers: ["U0A"], admins: ["U0ADMIN"], allowSelfApproval: false };
const log = createLogger({ level: "silent", redactor: createRedactor() });

const policy = (admins: string) => `
version: 1
groups: { platform: [${admins}] }
roles: { approvers: [platform], admins: [platform] }
`;

const dirs: string[] = [];
const sources: PolicySource[] = [];
afterEach(() => {
  sources.splice(0).forEach((source) => {
    source.stop();
  });
  dirs.splice(0).forEach((dir) => {
    rmSync(dir, { recursive: true, force: true });
  });
});

function file(text: string) {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-policy-"));
  dirs.push(dir);
  const path = join(dir, "policy.yaml");
  writeFileSync(path, text);
  return path;
}

const open = (path: string | undefined, watch = false) => {
  const source = createPolicySource({ path, lists: LISTS, log, watch });
  sources.push(source);
  return source;
};

describe("the policy in force", () => {
  it("is the access lists without a file", () => {
    expect(open(undefined).current()).toMatchObject({
      source: "environment",
      groups: { approvers: ["U0A"], admins: ["U0ADMIN"] },
    });
  });

  it("refuses to start on a bad file, naming its problems", () => {
    const path = file("version: 1\ngroups: { platform: [alice] }\n");
    expect(() => open(path)).toThrow(PolicyFileError);
    expect(() => open(path)).toThrow(/groups\.platform\.0: is not a Slack user ID/);
    expect(() => open(path)).toThrow(/roles: /);
  });

  it("keeps the last good policy when a reload is refused, and says why until a good one", () => {
    const path = file(policy("U0FIRST"));
    const source = open(path);
    writeFileSync(path, "version: 1\ngroups: { platform: [nobody] }\n");
    const refused = source.reload();
    expect(refused.ok).toBe(false);
    expect(source.current().groups.platform).toEqual(["U0FIRST"]);
    const refusal = source.refused();
    expect(refusal?.problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/^groups\.platform\.0: /)]),
    );
    expect(policyRefusedNote(refusal!)).toMatch(/refused .*the policy loaded before still decides/);
    writeFileSync(path, policy("U0SECOND"));
    expect(source.reload().ok).toBe(true);
    expect(source.current().groups.platform).toEqual(["U0SECOND"]);
    expect(source.refused()).toBeUndefined();
  });

  it("reloads on SIGHUP", async () => {
    const path = file(policy("U0FIRST"));
    const source = open(path, true);
    writeFileSync(path, policy("U0HUP"));
    process.kill(process.pid, "SIGHUP");
    await waitFor(
      () => (source.current().groups.platform?.[0] === "U0HUP" ? true : undefined),
      "the reload on SIGHUP",
    );
  });

  it("reloads when the file is replaced on disk", async () => {
    const path = file(policy("U0FIRST"));
    const source = open(path, true);
    const next = `${path}.new`;
    writeFileSync(next, policy("U0DISK"));
    renameSync(next, path);
    await waitFor(
      () => (source.current().groups.platform?.[0] === "U0DISK" ? true : undefined),
      "the reload on change",
    );
  });
});
