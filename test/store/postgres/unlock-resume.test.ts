/**
 * An unlock a crash interrupted, on replicas sharing one PostgreSQL database: finishing it is the
 * leader's work, written through its fence, so the replicas that start on it (and the one that
 * takes the lead later) remove the lock, record it and tell the channel once.
 */
import { expect, it } from "vitest";
import { openPostgresStore } from "../../../src/store/postgres/store.js";
import { startVmbot } from "../../../src/start.js";
import { ADMIN, CHANNEL, harnessPerTest, PROJECT_PATH } from "../../support/harness.js";
import { captureLogs } from "../../support/logs.js";
import { lockRemovals } from "../../support/unlocks.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";
import { waitFor } from "../../support/wait.js";

/** When the crashed replica confirmed the unlocks: its claims ran out long ago. */
const CRASHED_AT = new Date(Date.now() - 60 * 60_000);
/** When the states were locked, as GitLab's GraphQL gives it (whole seconds). */
const LOCKED_AT = new Date(Math.floor(CRASHED_AT.getTime() / 1000 - 3600) * 1000);
const LOCKED_AT_TEXT = `${LOCKED_AT.toISOString().slice(0, 19)}Z`;

describeWithPostgres("an interrupted unlock on replicas sharing PostgreSQL", () => {
  const db = useDatabase();
  const start = harnessPerTest();

  /**
   * What a replica that crashed just after claiming the unlock of `state` left: its intent,
   * claimed by it until long ago.
   */
  async function interruptedUnlock(state: string): Promise<void> {
    const crashed = await openPostgresStore(db.url(), {
      replica: "replica-crashed",
      clock: () => CRASHED_AT,
    });
    try {
      const intent = {
        state,
        lockedAt: LOCKED_AT_TEXT,
        holder: "alice",
        user: ADMIN,
        channel: CHANNEL,
      };
      const claim = await crashed.claim(
        `unlock:${state}`,
        `unlock:${LOCKED_AT_TEXT}`,
        60_000,
        intent,
      );
      expect(claim.claimed).toBe(true);
    } finally {
      await crashed.close();
    }
  }

  it("two replicas starting on it finish it once, and the replica that takes the lead after finds it done", async () => {
    await interruptedUnlock("general");
    const h = await start({
      db: db.url(),
      env: { LEADER_TTL: "3s" },
      prepare: ({ gitlab }) => {
        gitlab.addUser({ username: "alice" });
        for (const state of ["general", "web-01"]) {
          gitlab.addTerraformState(PROJECT_PATH, state, { lockedBy: "alice", lockedAt: LOCKED_AT });
        }
      },
    });
    const second = await startVmbot(h.config, {
      logDestination: captureLogs().stream,
      gitlabTimeoutMs: 5_000,
    });
    try {
      const told = (state: string) =>
        h.slack.messages.filter(
          (m) => m.text.includes("force-unlocked") && m.text.includes(`\`${state}\``),
        );
      await waitFor(() => told("general")[0], "the channel told of the finished unlock");

      // Another unlock is interrupted; the leader stops, and the other replica, taking the lead,
      // finishes it: its resume has run (a barrier for the first unlock not being done again).
      await interruptedUnlock("web-01");
      await h.bot.stop(2_000);
      await waitFor(() => told("web-01")[0], "the new leader to finish the second unlock", {
        timeoutMs: 15_000,
      });
      await h.gitlab.settled();

      expect(told("general")).toHaveLength(1);
      expect(told("web-01")).toHaveLength(1);
      for (const state of ["general", "web-01"]) {
        expect(h.gitlab.terraformState(PROJECT_PATH, state)?.lock).toBeNull();
        const removals = lockRemovals(h.gitlab, new RegExp(`/${state}/lock$`));
        expect(removals).toHaveLength(1);
      }
      const unlocked = (await second.store.listAudit()).filter((a) => a.action === "unlocked");
      expect(unlocked.map((a) => a.detail.state).sort()).toEqual(["general", "web-01"]);
      expect(await second.store.pendingEffects()).toEqual([]);
    } finally {
      await second.stop(2_000);
    }
  });
  it("a leader whose lead passes while it finishes an interrupted unlock writes nothing: the new leader finishes it, and the channel is told once", async () => {
    await interruptedUnlock("db-01");
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first replica leads at once and then pauses: its renewals never run. Its resume reads
    // the states and GitLab holds that read back until the test lets it go.
    const h = await start({
      db: db.url(),
      env: { LEADER_TTL: "3s" },
      gitlabTimeoutMs: 60_000,
      leaderSchedule: () => () => undefined,
      prepare: ({ gitlab }) => {
        gitlab.addUser({ username: "alice" });
        gitlab.addTerraformState(PROJECT_PATH, "db-01", {
          lockedBy: "alice",
          lockedAt: LOCKED_AT,
        });
        gitlab.failNext({ path: /graphql/ }, { until: held }, { times: 1 });
      },
    });
    await waitFor(
      () => (h.gitlab.requests.some((r) => r.path.includes("graphql")) ? true : undefined),
      "the paused leader's resume to read the states",
    );
    // The second replica takes the lead once the first's lease runs out, takes over its claim
    // (its liveness has passed too), removes the lock and tells the channel.
    const second = await startVmbot(h.config, {
      logDestination: captureLogs().stream,
      gitlabTimeoutMs: 5_000,
    });
    try {
      const told = () =>
        h.slack.messages.filter(
          (m) => m.text.includes("force-unlocked") && m.text.includes("`db-01`"),
        );
      await waitFor(() => told()[0], "the new leader to finish the unlock", {
        timeoutMs: 20_000,
      });
      // The paused leader resumes: it finds the lock gone, and its writes are refused.
      release();
      await waitFor(
        () =>
          h.logs.find((line) =>
            line.includes("another replica leads: the interrupted unlocks are left to it"),
          ),
        "the paused leader's resume to be refused",
      );
      await h.gitlab.settled();
      expect(told()).toHaveLength(1);
      expect(h.gitlab.terraformState(PROJECT_PATH, "db-01")?.lock).toBeNull();
      expect(lockRemovals(h.gitlab, /\/db-01\/lock$/)).toHaveLength(1);
      const audit = await second.store.listAudit();
      const unlocked = audit.filter((a) => a.action === "unlocked" && a.detail.state === "db-01");
      expect(unlocked).toHaveLength(1);
      expect(await second.store.pendingEffects()).toEqual([]);
    } finally {
      await second.stop(2_000);
    }
  });
});
