/**
 * Approvals from two groups given at the same moment on two replicas sharing PostgreSQL: both
 * are counted, the apply is played once, and the audit says who approved once.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { createSlackSigner } from "../../sandbox/simulators/slack/signer.js";
import { approvalKey } from "../../src/policy/approval-step.js";
import { startVmbot } from "../../src/start.js";
import {
  askForVm,
  CHANNEL,
  click,
  harnessPerTest,
  REQUESTER,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";
import { captureLogs } from "../support/logs.js";
import { describeWithPostgres, useDatabase } from "../support/postgres.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { waitFor } from "../support/wait.js";

const PLATFORM = "U0PLAT1";
const SECURITY = "U0SEC1";
const POLICY = `
version: 1
groups:
  devs: [${REQUESTER}]
  platform: [${PLATFORM}]
  security: [${SECURITY}]
roles:
  requesters: [devs]
  approvers: [platform, security]
  admins: [platform]
approvals:
  - name: two groups
    require: [{ group: platform }, { group: security }]
`;

const dirs: string[] = [];
afterEach(() => {
  dirs.splice(0).forEach((dir) => {
    rmSync(dir, { recursive: true, force: true });
  });
});

describeWithPostgres("approvals given at once on two replicas", () => {
  const start = harnessPerTest();
  const db = useDatabase();

  it("count both, play the apply once and audit one approval naming a person who gave it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vmbot-replica-approvals-"));
    dirs.push(dir);
    writeFileSync(join(dir, "policy.yaml"), POLICY);
    const h = await start({
      env: {
        VMBOT_DB: db.url(),
        LEADER_TTL: "3s",
        VMBOT_POLICY: join(dir, "policy.yaml"),
        APPROVERS: undefined,
        ADMINS: undefined,
      },
      project: { role: "maintainer" },
    });
    const second = await startVmbot(h.config, {
      logDestination: captureLogs().stream,
      gitlabTimeoutMs: 5_000,
    });
    try {
      const other: Harness = {
        ...h,
        bot: second,
        baseUrl: `http://127.0.0.1:${second.port}`,
        signer: createSlackSigner({
          eventsUrl: `http://127.0.0.1:${second.port}/slack/events`,
          signingSecret: TEST_SECRETS.signingSecret,
          slack: h.slack,
        }),
      };
      const pipelineId = await askForVm(h);
      await h.bot.tracker.tick();
      runUntilSettled(h, pipelineId, "tf:plan");
      await h.bot.tracker.tick();
      const request = await waitFor(
        async () =>
          (await h.bot.store.listActive()).find(
            (r) => r.status === "awaiting_approval" && r.messageTs !== null,
          ),
        "the plan posted for approval",
      );
      const message = structuredClone(h.slack.message(CHANNEL, request.messageTs!)!);
      const plays = () => h.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/).length;

      await Promise.all([
        click(h, message, PLATFORM, "plan_approve"),
        click(other, message, SECURITY, "plan_approve"),
      ]);
      await waitFor(() => (plays() === 1 ? true : undefined), "the apply played");
      const given = await h.bot.store.approvals.list(request.id, approvalKey(request)!);
      expect(given.map((a) => a.user).sort()).toEqual([PLATFORM, SECURITY].sort());
      await waitFor(
        async () =>
          (await h.bot.store.listAudit(request.id)).some((e) => e.action === "approved")
            ? true
            : undefined,
        "the approval audited",
      );
      // Each replica has had its turn at the request since: a second play would show by now.
      await h.bot.tracker.tick();
      await second.tracker.tick();
      expect(plays()).toBe(1);
      const approved = (await h.bot.store.listAudit(request.id)).filter(
        (e) => e.action === "approved",
      );
      expect(approved).toHaveLength(1);
      expect([PLATFORM, SECURITY]).toContain(approved[0]!.actor);
      // The first approval counted alone is recorded as such at most once; counted together with
      // the other, the approval is the only entry.
      const recorded = (await h.bot.store.listAudit(request.id)).filter(
        (e) => e.action === "approval_recorded",
      );
      expect(recorded.length).toBeLessThanOrEqual(1);
    } finally {
      await second.stop(2_000);
    }
  });
});
