/**
 * Three bot processes (HTTP mode) on one PostgreSQL database, as a deployment runs them, with a
 * GitLab that answers every call slowly: twenty requests asked at once, every Slack delivery
 * sent to a random replica and retried by "Slack" to another, approvals clicked by several
 * approvers on several replicas. Each request gets one pipeline, one play of its apply job, one
 * message and thread, and its whole audit.
 */
import { afterEach, expect, it } from "vitest";
import { APPROVER, CHANNEL, REQUESTER } from "../support/harness.js";
import {
  allRequests,
  askThroughFleet,
  auditOf,
  completeAudit,
  deliverTwice,
  effectsSettled,
  FLEET_WAIT_MS,
  messageOf,
  requestMessages,
  startFleet,
  threadOf,
  threadSteps,
  type Fleet,
} from "../support/fleet.js";
import { fleetStory } from "../support/fleet-story.js";
import { describeWithPostgres } from "../support/postgres.js";
import { waitFor } from "../support/wait.js";

const REQUESTS = 20;
const APPROVERS = [APPROVER, "U0APPROVER2", "U0APPROVER3"];
/** Every GitLab call is answered this late. */
const GITLAB_LATENCY_MS = 1_500;

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

/** `count` of `items`, in a random order. */
function someOf<T>(items: readonly T[], count: number): T[] {
  return [...items]
    .map((item) => ({ item, order: Math.random() }))
    .sort((a, b) => a.order - b.order)
    .slice(0, count)
    .map(({ item }) => item);
}

describeWithPostgres("three replicas on one PostgreSQL, each a process of its own", () => {
  it(
    "twenty requests through random replicas, each delivery retried to another, are each planned, approved, applied and configured once",
    async () => {
      const f = (fleet = await startFleet({ env: { APPROVERS: APPROVERS.join(",") } }));
      f.gitlab.failNext({ path: /./ }, { delayMs: GITLAB_LATENCY_MS }, { times: Infinity });
      f.gitlab.autoAdvance({ intervalMs: 250 });

      const clicked = new Map<string, string[]>();
      const deliveries: { what: string; status: number; body: string }[] = [];
      const one = async (index: number) => {
        const name = `fleet-${String(index + 1).padStart(2, "0")}`;
        const { requestId, submitted } = await askThroughFleet(
          f,
          name,
          `192.168.1.${50 + index}/24`,
        );
        deliveries.push(
          { what: `${name} form`, status: submitted.first.status, body: submitted.first.body },
          {
            what: `${name} form retried`,
            status: submitted.retry.status,
            body: submitted.retry.body,
          },
        );
        const plan = await waitFor(
          () => {
            const message = messageOf(f, requestId);
            return message?.text.endsWith("Awaiting approval") === true ? message : undefined;
          },
          `the plan of ${name} posted for approval`,
          {
            timeoutMs: FLEET_WAIT_MS,
            intervalMs: 100,
            detail: () => fleetStory(f, { requestId, name }),
          },
        );
        // Two or three approvers at once, each on a random replica, each click retried.
        const approvers = someOf(APPROVERS, 2 + (index % 2));
        clicked.set(requestId, approvers);
        const clicks = await Promise.all(
          approvers.map((userId) =>
            deliverTwice(f, (signer) =>
              signer.blockAction({ message: plan, userId, actionId: "plan_approve" }),
            ),
          ),
        );
        for (const click of clicks) {
          deliveries.push(
            { what: `${name} approve`, status: click.first.status, body: "" },
            { what: `${name} approve retried`, status: click.retry.status, body: "" },
          );
        }
        await waitFor(
          () => {
            const message = messageOf(f, requestId);
            const told = threadOf(f, message!).some((m) => m.text.includes("is ready"));
            return message?.text.endsWith("Ready") === true && told ? true : undefined;
          },
          `${name} to be ready and its requester told`,
          {
            timeoutMs: FLEET_WAIT_MS,
            intervalMs: 100,
            detail: () => fleetStory(f, { requestId, name }),
          },
        );
        return requestId;
      };
      const ids = await Promise.all(Array.from({ length: REQUESTS }, (_, index) => one(index)));
      // Barrier: nothing any replica intended is left unfinished; what they did is final.
      await effectsSettled(f);

      // Every delivery, first or retried, was answered; no form was refused.
      expect(deliveries.filter((d) => d.status !== 200 || d.body !== "")).toEqual([]);

      expect(await allRequests(f)).toHaveLength(REQUESTS);
      expect(f.gitlab.pipelines).toHaveLength(REQUESTS);
      expect(f.gitlab.requestsTo("POST", /\/pipeline$/)).toHaveLength(REQUESTS);
      const plays = f.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/);
      expect(plays).toHaveLength(REQUESTS);
      expect(new Set(plays.map((p) => p.path)).size).toBe(REQUESTS);

      expect(requestMessages(f)).toHaveLength(REQUESTS);
      expect(f.slack.uploads).toHaveLength(REQUESTS);
      // Each a plan, shared by the led work's own client as it was read.
      for (const upload of f.slack.uploads) expect(upload.content).toMatch(/Plan: \d+ to add/);
      for (const requestId of ids) {
        const message = messageOf(f, requestId)!;
        expect(message.channel).toBe(CHANNEL);
        expect({ requestId, steps: threadSteps(f, message) }).toEqual({
          requestId,
          steps: [
            expect.stringMatching(/^notify_approvers:\d+$/),
            "applied",
            "configured",
            "notify_requester",
          ],
        });
        const audit = await auditOf(f, requestId);
        const actions = audit.map((a) => a.action);
        expect(actions.filter((action) => action === "planning").length).toBeLessThanOrEqual(1);
        expect({ requestId, actions: actions.filter((action) => action !== "planning") }).toEqual({
          requestId,
          actions: completeAudit(),
        });
        expect(audit[0]?.actor).toBe(REQUESTER);
        const approved = audit.find((a) => a.action === "approved");
        expect(clicked.get(requestId)).toContain(approved?.actor);
      }
    },
    3 * FLEET_WAIT_MS,
  );
});
