/**
 * Three bot processes on one PostgreSQL database with a lease of 3 s (LEADER_TTL), and a GitLab
 * that answers every call slowly: the leader is killed (SIGKILL, nothing flushed or given up)
 * while plans are pending, or while the apply job's play it sent is still in GitLab's hands.
 * Another replica leads within the lease and one renewal, and every request reaches its end with
 * one pipeline and one play.
 */
import { afterEach, expect, it } from "vitest";
import { APPROVER } from "../support/harness.js";
import {
  askMany,
  askThroughFleet,
  auditOf,
  approveAll,
  expectEachOnce,
  FLEET_WAIT_MS,
  pipelinesRecorded,
  planOf,
  readyOf,
  startFleet,
  type Fleet,
  type Replica,
} from "../support/fleet.js";
import { describeWithPostgres } from "../support/postgres.js";
import { waitFor } from "../support/wait.js";

const TTL_MS = 3_000;
/** A replica renews its lease every third of it (leader.ts), and tries to take one as often. */
const RENEW_MS = TTL_MS / 3;
/**
 * A killed leader's lease runs out at most one lease after its last renewal, and another replica
 * tries to take it at most one renewal period after that.
 */
const TAKEOVER_BOUND_MS = TTL_MS + RENEW_MS;
const GITLAB_LATENCY_MS = 1_500;

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

async function startSlowFleet(): Promise<Fleet> {
  const f = (fleet = await startFleet({ env: { LEADER_TTL: "3s" } }));
  f.gitlab.failNext({ path: /./ }, { delayMs: GITLAB_LATENCY_MS }, { times: Infinity });
  return f;
}

/** Kills the leader and waits for another to say it leads: within the bound, or the test fails. */
async function killLeader(f: Fleet, leader: Replica): Promise<Replica> {
  await f.signal(leader, "SIGKILL");
  const next = await f.leader(TAKEOVER_BOUND_MS);
  expect(next).not.toBe(leader);
  return next;
}

describeWithPostgres("the leader killed, on three replicas sharing PostgreSQL", () => {
  it(
    "while plans are pending: another leads within the lease and a renewal, and each request is planned, applied and configured once",
    async () => {
      const f = await startSlowFleet();
      const ids = await askMany(f, "failover", 3);
      // Every pipeline made and recorded, nothing half done: the plans wait for a runner.
      await pipelinesRecorded(f);

      const leader = await f.leader();
      await killLeader(f, leader);
      f.gitlab.autoAdvance({ intervalMs: 250 });

      await approveAll(f, ids, APPROVER);
      await expectEachOnce(f, ids, ["apply_started", "apply_started", "apply_started"]);
    },
    4 * FLEET_WAIT_MS,
  );

  it(
    "while the play it sent is still in GitLab's hands: another leads within the lease and a renewal, and the apply runs once",
    async () => {
      const f = await startSlowFleet();
      f.gitlab.autoAdvance({ intervalMs: 250 });
      const { requestId } = await askThroughFleet(f, "failover-04", "192.168.1.60/24");
      const plan = await planOf(f, requestId);

      // The click goes to the leader, which plays the apply job itself; it dies while GitLab
      // holds the play (answered 1.5 s late, carried out all the same).
      const leader = await f.leader();
      const plays = () => f.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/).length;
      const click = await leader.signer.blockAction({
        message: plan,
        userId: APPROVER,
        actionId: "plan_approve",
      });
      expect(click.status).toBe(200);
      await waitFor(() => (plays() === 1 ? true : undefined), "GitLab to receive the play", {
        timeoutMs: FLEET_WAIT_MS,
        intervalMs: 10,
      });
      await killLeader(f, leader);

      await readyOf(f, requestId);
      // The play's answer never reached the dead replica: the new leader found the job played.
      await expectEachOnce(f, [requestId], ["apply_confirmed"]);
      const approved = (await auditOf(f, requestId)).find((a) => a.action === "approved");
      expect(approved?.actor).toBe(APPROVER);
    },
    4 * FLEET_WAIT_MS,
  );
});
