/**
 * Two replicas sharing one PostgreSQL database, in one process, on the same Slack and GitLab: one
 * leads and follows pipelines, a request asked of the other is planned and posted once, a GitLab
 * hook the other takes wakes the leader at once, and when the leader stops the other takes over.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { createSlackSigner } from "../../sandbox/simulators/slack/signer.js";
import { startVmbot, type RunningVmbot } from "../../src/start.js";
import { askForVm, harnessPerTest, runUntilSettled, type Harness } from "../support/harness.js";
import { captureLogs } from "../support/logs.js";
import { describeWithPostgres, useDatabase } from "../support/postgres.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { waitFor } from "../support/wait.js";

const HOOK_SECRET = "leader-test-hook-secret-0001";
/** The shortest lease LEADER_TTL allows. */
const TTL_MS = 3_000;

describeWithPostgres("replicas sharing PostgreSQL", () => {
  const start = harnessPerTest();

  /** What `/healthz` says of a replica's leadership. */
  async function leads(baseUrl: string): Promise<boolean | undefined> {
    const response = await fetch(`${baseUrl}/healthz`);
    const body = (await response.json()) as { replica?: string; leader?: boolean };
    expect(body.replica).toEqual(expect.any(String));
    return body.leader;
  }

  /**
   * The harness's bot, leading, then a second replica on the same database and fakes, following:
   * `follower` is a harness whose requests and signer go to the second replica.
   */
  async function twoReplicas(db: {
    url: () => string;
  }): Promise<{ h: Harness; follower: Harness; second: RunningVmbot }> {
    const h = await start({
      env: {
        VMBOT_DB: db.url(),
        LEADER_TTL: "3s",
        GITLAB_WEBHOOK_SECRET: HOOK_SECRET,
        // Longer than any test: a pipeline's change is seen through a hook or not at all.
        POLL_INTERVAL_MS: "3600000",
      },
    });
    await waitFor(
      async () => (await leads(h.baseUrl)) === true || undefined,
      "the first replica leads",
      {
        timeoutMs: 2 * TTL_MS,
      },
    );
    const second = await startVmbot(h.config, {
      logDestination: captureLogs().stream,
      gitlabTimeoutMs: 5_000,
    });
    const baseUrl = `http://127.0.0.1:${second.port}`;
    const signer = createSlackSigner({
      eventsUrl: `${baseUrl}/slack/events`,
      signingSecret: TEST_SECRETS.signingSecret,
      slack: h.slack,
    });
    return { h, follower: { ...h, bot: second, baseUrl, signer }, second };
  }

  describe("on a database of their own", () => {
    const db = useDatabase();
    it("has one leader; a request asked of the follower is planned and posted once, woken by a hook the follower took", async () => {
      const { h, follower, second } = await twoReplicas(db);
      try {
        expect([await leads(h.baseUrl), await leads(follower.baseUrl)]).toEqual([true, false]);
        h.gitlab.deliverHooks({
          url: `${follower.baseUrl}/gitlab/webhook`,
          secretToken: HOOK_SECRET,
        });

        const pipelineId = await askForVm(follower, "lead-01");
        runUntilSettled(h, pipelineId, "tf:plan");
        const request = await waitFor(
          async () =>
            (await h.bot.store.listActive()).find(
              (r) => r.spec.name === "lead-01" && r.status === "awaiting_approval",
            ),
          "the plan of the request asked of the follower, posted for approval",
        );
        // The hooks reached the follower only, and the leader posted the plan.
        const hooks = h.gitlab.hookDeliveries;
        expect(hooks.length).toBeGreaterThan(0);
        expect(hooks.every((d) => d.url.startsWith(follower.baseUrl))).toBe(true);

        // Barrier: one more pass on each replica (the follower's tracker does not run by itself).
        await h.gitlab.settled();
        await h.bot.tracker.tick();
        const audit = (await h.bot.store.listAudit(request.id)).map((a) => a.action);
        expect(audit.filter((action) => action === "plan_uploaded")).toHaveLength(1);
        expect(audit.filter((action) => action === "awaiting_approval")).toHaveLength(1);
        const planMessages = h.slack
          .callsTo("chat.update")
          .filter(
            (c) => c.args.ts === request.messageTs && JSON.stringify(c.args).includes("Approve"),
          );
        expect(planMessages.length).toBeGreaterThan(0);
        expect([await leads(h.baseUrl), await leads(follower.baseUrl)]).toEqual([true, false]);
      } finally {
        await second.stop(2_000);
      }
    });
  });

  describe("on another database of their own", () => {
    const db = useDatabase();
    it("when the leader stops, the other replica leads within the lease and finishes a request that was waiting", async () => {
      const { h, follower, second } = await twoReplicas(db);
      try {
        const pipelineId = await askForVm(follower, "lead-02");
        // The plan finishes with nobody told: no hook, and a poll an hour away.
        runUntilSettled(h, pipelineId, "tf:plan");

        const waiting = (await second.store.listActive()).find((r) => r.spec.name === "lead-02");
        expect(waiting?.status).not.toBe("awaiting_approval");

        const stoppedAt = Date.now();
        await h.bot.stop(2_000);
        await waitFor(
          async () => (await leads(follower.baseUrl)) === true || undefined,
          "the other leads",
          {
            timeoutMs: TTL_MS,
          },
        );
        const tookOverMs = Date.now() - stoppedAt;
        expect(tookOverMs).toBeLessThan(TTL_MS);

        await waitFor(
          async () =>
            (await second.store.listActive()).find(
              (r) => r.spec.name === "lead-02" && r.status === "awaiting_approval",
            ),
          "the waiting request's plan, posted by the new leader",
        );
      } finally {
        await second.stop(2_000);
      }
    });
  });

  describe("on a third database of their own", () => {
    const db = useDatabase();
    it("a leader paused past its lease writes nothing when it resumes, to the store or to Slack: its pass is refused, the new leader's lands once", async () => {
      const { h, follower, second } = await twoReplicas(db);
      // A third replica whose renewals the test holds: it runs them when told, or never (paused).
      const held: (() => void)[] = [];
      const pausedLogs = captureLogs();
      const paused = await startVmbot(h.config, {
        logDestination: pausedLogs.stream,
        gitlabTimeoutMs: 5_000,
        leaderSchedule: (run) => {
          held.push(run);
          return () => undefined;
        },
      });
      const pausedUrl = `http://127.0.0.1:${paused.port}`;
      try {
        const pipelineId = await askForVm(follower, "lead-03");

        // The first leader stops; the held replica is let renew once, and takes the lead.
        await h.bot.stop(2_000);
        for (const run of held.splice(0)) run();
        await waitFor(async () => (await leads(pausedUrl)) === true || undefined, "it leads");
        // Now it pauses: no renewal runs. The second replica takes over once the lease runs out.
        await waitFor(
          async () => (await leads(follower.baseUrl)) === true || undefined,
          "the second replica leads",
          { timeoutMs: 3 * TTL_MS },
        );

        // The new leader's passes run only when the test ticks it from here on: its own schedule
        // (started when it took the lead) is stopped, and its first pass is done. Then the plan
        // finishes with nobody told.
        await second.tracker.stop();
        await second.tracker.tick();
        runUntilSettled(h, pipelineId, "tf:plan");
        await h.gitlab.settled();

        // It resumes mid-pass, its tracker still running: its writes are refused.
        await paused.tracker.tick();
        expect(
          pausedLogs.lines.some((line) => line.includes("another replica leads: this pass ended")),
        ).toBe(true);
        const untouched = (await second.store.listActive()).find((r) => r.spec.name === "lead-03");
        expect(untouched?.status).not.toBe("awaiting_approval");

        // The new leader's pass lands, once.
        await second.tracker.tick();
        const request = (await second.store.listActive()).find((r) => r.spec.name === "lead-03");
        expect(request?.status).toBe("awaiting_approval");
        const audit = (await second.store.listAudit(request?.id)).map((a) => a.action);
        expect(audit.filter((action) => action === "plan_uploaded")).toHaveLength(1);
        expect(audit.filter((action) => action === "awaiting_approval")).toHaveLength(1);

        // The new leader has changed the request and not yet rendered its message when the
        // paused one passes again: it neither updates the message nor records it rendered.
        const behind = new pg.Pool({ connectionString: db.url(), max: 1 });
        await behind.query(
          "UPDATE requests SET rendered_revision = revision - 1, rendered_hash = 'older' WHERE id = $1",
          [request?.id],
        );
        await behind.end();
        const mark = h.slack.calls.length;
        await paused.tracker.tick();
        expect(h.slack.calls.slice(mark).map((call) => call.method)).toEqual([]);
        await second.tracker.tick();
        expect(h.slack.calls.slice(mark).map((call) => call.method)).toEqual(["chat.update"]);
      } finally {
        await paused.stop(2_000);
        await second.stop(2_000);
      }
    });
  });
});
