/**
 * Three bot processes on one PostgreSQL database with a lease of 3 s (LEADER_TTL), and a GitLab
 * that answers every call slowly: the leader is paused (SIGSTOP) in the middle of its work, past
 * its lease; another takes over and posts the plans; the paused one is let go on (SIGCONT). It
 * writes nothing, to the database, GitLab or Slack, and the flow completes once.
 */
import { afterEach, expect, it } from "vitest";
import { APPROVER } from "../support/harness.js";
import {
  askMany,
  approveAll,
  effectsSettled,
  expectEachOnce,
  FLEET_WAIT_MS,
  pipelinesRecorded,
  planWholeOf,
  startFleet,
  type Fleet,
} from "../support/fleet.js";
import { describeWithPostgres } from "../support/postgres.js";
import { waitFor } from "../support/wait.js";

const GITLAB_LATENCY_MS = 1_500;
/** What the bot sends Slack that changes something people see. */
const SLACK_WRITES = [
  "chat.postMessage",
  "chat.update",
  "chat.delete",
  "files.completeUploadExternal",
];

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

describeWithPostgres("a leader paused past its lease, on three replicas sharing PostgreSQL", () => {
  it(
    "writes nothing when it resumes while another leads, and the flow completes once",
    async () => {
      const f = (fleet = await startFleet({ env: { LEADER_TTL: "3s" } }));
      f.gitlab.failNext({ path: /./ }, { delayMs: GITLAB_LATENCY_MS }, { times: Infinity });
      // The requests are started by the other replicas: what the one to be paused has in hand
      // is its led work alone. (A start's last update of its message, sent by a replica paused
      // after checking the store and before sending, goes out when it goes on.)
      const paused = await f.leader();
      const ids = await askMany(f, "pause", 2, paused);
      await pipelinesRecorded(f);

      // The leader is paused in the middle of its passes (each waits 1.5 s on GitLab); the plans
      // then finish with it unable to see them.
      await f.signal(paused, "SIGSTOP");
      f.gitlab.autoAdvance({ intervalMs: 250 });

      // Another takes over once the paused one's lease has run out, and acts: the plans posted.
      const next = await f.leader();
      expect(next).not.toBe(paused);
      for (const requestId of ids) await planWholeOf(f, requestId);
      await effectsSettled(f);

      // Everything the paused leader could do from here on is already done by the new one.
      const audit = await f.store.listAudit();
      const gitlabMark = f.gitlab.mark();
      const slackMark = f.slack.calls.length;
      const outputMark = paused.bot.stdout().length;
      await f.signal(paused, "SIGCONT");

      // Barrier: the resumed replica says it does not lead, having found so for itself, and the
      // new leader has read GitLab again since.
      await waitFor(
        async () => ((await f.leads(paused)) === false ? true : undefined),
        "the resumed replica to say it does not lead",
        { timeoutMs: FLEET_WAIT_MS, intervalMs: 100 },
      );
      await waitFor(
        () =>
          paused.bot.stdout().slice(outputMark).includes("this replica no longer leads")
            ? true
            : undefined,
        "the resumed replica to stop its led work",
        { timeoutMs: FLEET_WAIT_MS, intervalMs: 100 },
      );
      const listed = () =>
        f.gitlab
          .requestsSince(gitlabMark)
          .filter((r) => r.method === "GET" && /\/pipelines\b/.test(r.path)).length;
      const listedNow = listed();
      await waitFor(() => (listed() > listedNow ? true : undefined), "another pass of the leader", {
        timeoutMs: FLEET_WAIT_MS,
        intervalMs: 100,
      });

      expect(await f.store.listAudit()).toEqual(audit);
      expect(f.gitlab.requestsSince(gitlabMark).filter((r) => r.method !== "GET")).toEqual([]);
      // Slack's calls by their token: each replica holds its own.
      const tokens = f.replicas.map((replica) => replica.slackToken);
      expect(
        f.slack.calls.filter((call) => !tokens.includes(f.slack.callerOf(call) ?? "")),
      ).toEqual([]);
      expect(
        f.slack.calls
          .slice(slackMark)
          .filter(
            (call) =>
              f.slack.callerOf(call) === paused.slackToken && SLACK_WRITES.includes(call.method),
          ),
      ).toEqual([]);
      expect(f.slack.uploads).toHaveLength(ids.length);

      // The flow goes on, and completes once.
      await approveAll(f, ids, APPROVER);
      await expectEachOnce(f, ids, ["apply_started", "apply_started"]);
    },
    4 * FLEET_WAIT_MS,
  );
});
