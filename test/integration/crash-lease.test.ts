import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { APPROVER, CHANNEL, REQUESTER } from "../support/harness.js";
import {
  audit,
  effectOf,
  expectDeclared,
  LEASES,
  MOMENTS,
  requestMessage,
  requestsIn,
  seedVm,
  settled,
  startWorld,
  TEST_MS,
  until,
  vmOf,
} from "../support/crash-world.js";

/**
 * Crash tests (test/support/crash-world.ts) of a lease: its reminder, and an approved longer lease.
 */

/** The crash points a test below is declared for, filled as they are declared. */
const declared: string[] = [];

describe.concurrent("crash between the intent and the result of each effect of a lease", () => {
  for (const moment of MOMENTS) {
    declared.push(`lease_reminder:${moment}`);
    it(
      `crashes at lease_reminder:${moment}, restarts, and reminds the owner once`,
      async () => {
        // Due from the first pass, and far from its end however slowly a busy machine starts
        // the bot: a lease that ended first would open a destroy request instead.
        const end = new Date(Date.now() + 5 * 60_000).toISOString();
        const env = { ...LEASES, VM_LEASE_MAX: "1h", VM_LEASE_WARN: "10m" };
        const w = await startWorld(`lease_reminder:${moment}`, env, (store) => seedVm(store, end));
        try {
          await until(
            w,
            async () =>
              (await effectOf(w, "lease:web-01", `lease_reminder:${end}:600000`))?.state === "done"
                ? true
                : undefined,
            "the reminder to be recorded",
          );
          await settled(w);
          expect(w.crashes).toBe(1);
          const dms = w.slack.messages.filter(
            (m) => m.metadata?.event_type === "vmbot_lease_reminder",
          );
          expect(dms).toHaveLength(1);
          expect(dms[0]!.channel).toBe(`D${REQUESTER.slice(1)}`);
        } finally {
          await w.close();
        }
      },
      TEST_MS,
    );
  }

  for (const moment of MOMENTS) {
    declared.push(`extend_lease:${moment}`);
    it(
      `crashes at extend_lease:${moment} of an approved longer lease, restarts, and moves the lease once`,
      async () => {
        // The policy lets one approver from platform lend web-01 past the maximum (1 h).
        const policyDir = mkdtempSync(join(tmpdir(), "vmbot-crash-policy-"));
        const policy = join(policyDir, "policy.yaml");
        writeFileSync(
          policy,
          `version: 1\ngroups:\n  devs: [${REQUESTER}]\n  platform: [${APPROVER}]\nroles:\n  approvers: [platform]\n  admins: [platform]\napprovals:\n  - name: long leases\n    action: extend\n    require: [{ group: platform }]\n`,
        );
        const end = new Date(Date.now() + 5 * 60_000).toISOString();
        const env = {
          ...LEASES,
          VM_LEASE_MAX: "1h",
          VM_LEASE_WARN: "10m",
          SLACK_CHANNEL: CHANNEL,
          VMBOT_POLICY: policy,
        };
        const w = await startWorld(`extend_lease:${moment}`, env, (store) => seedVm(store, end));
        try {
          const dm = await until(
            w,
            () => w.slack.messages.find((m) => m.metadata?.event_type === "vmbot_lease_reminder"),
            "the reminder",
          );
          await w.signer.blockAction({
            message: dm,
            userId: REQUESTER,
            actionId: "lease_ask_longer",
          });
          const message = await until(
            w,
            () => {
              const m = requestMessage(w);
              return m?.text === "Longer lease for web-01 — Awaiting approval" ? m : undefined;
            },
            "the extension request awaiting approval",
          );
          await w.signer.blockAction({ message, userId: APPROVER, actionId: "extend_approve" });
          await until(
            w,
            () =>
              requestMessage(w)?.text === "Longer lease for web-01 — Extended" ? true : undefined,
            "the extension made",
          );
          await settled(w);
          expect(w.crashes).toBe(1);
          const actions = (await audit(w)).map((entry) => entry.action);
          expect(actions.filter((a) => a === "extension_requested")).toHaveLength(1);
          expect(actions.filter((a) => a === "approved")).toHaveLength(1);
          expect(actions.filter((a) => a === "lease_extended")).toHaveLength(1);
          const request = (await requestsIn(w, ["ready"])).find((r) => r.kind === "extend")!;
          const leaseUntil = (await vmOf(w, "web-01"))?.leaseUntil;
          // Twice the maximum (2 h) from the approval: moved once, to where the approval said.
          expect(Date.parse(leaseUntil!) - Date.parse(request.decision!.at)).toBe(2 * 3_600_000);
        } finally {
          await w.close();
          rmSync(policyDir, { recursive: true, force: true });
        }
      },
      TEST_MS,
    );
  }

  it("has a test for each of its crash points, before and after", () => {
    expectDeclared("lease", declared);
  });
});
