import { describe, expect, it } from "vitest";
import { CHANNEL } from "../support/harness.js";
import {
  audit,
  DESTROY_FLOW_POINTS,
  destroyFlow,
  expectDeclared,
  LEASES,
  MOMENTS,
  requestMessage,
  requestMessages,
  seedVm,
  settle,
  settled,
  startWorld,
  TEST_MS,
  threadOf,
  until,
  vmOf,
} from "../support/crash-world.js";

/**
 * Crash tests (test/support/crash-world.ts) of a destroy: one a person asks for, and the one
 * a lease's end opens or plays without approval.
 */

/** The crash points a test below is declared for, filled as they are declared. */
const declared: string[] = [];

describe.concurrent("crash between the intent and the result of each effect of a destroy", () => {
  it(
    "destroys a VM without a crash as the baseline",
    async () => {
      expect(await destroyFlow(undefined)).toBe(0);
    },
    TEST_MS,
  );

  for (const point of DESTROY_FLOW_POINTS) {
    for (const moment of MOMENTS) {
      declared.push(`destroy/${point}:${moment}`);
      it(
        `crashes at ${point}:${moment} of a destroy, restarts, and destroys once`,
        async () => {
          const crashes = await destroyFlow(`${point}:${moment}`);
          expect(crashes).toBeGreaterThanOrEqual(1);
        },
        TEST_MS,
      );
    }
  }

  declared.push("lease expiry/create_pipeline:after");
  it(
    "crashes at create_pipeline:after of the destroy request a lease's end opened, and opens it once",
    async () => {
      // The seeded VM's own request is not in the store: the channel comes from SLACK_CHANNEL.
      const env = { ...LEASES, SLACK_CHANNEL: CHANNEL };
      const w = await startWorld("create_pipeline:after", env, (store) =>
        seedVm(store, new Date(Date.now() - 1_000).toISOString()),
      );
      try {
        const pipelineId = await until(w, () => w.gitlab.pipelines[0]?.id, "the destroy pipeline");
        settle(w, pipelineId, "tf:destroy");
        await until(
          w,
          () =>
            requestMessage(w)?.text === "Destroy web-01 — Awaiting approval" ? true : undefined,
          "the destroy request awaiting approval",
        );
        await settled(w);
        expect(w.crashes).toBe(1);
        expect(w.gitlab.pipelines).toHaveLength(1);
        expect(w.gitlab.pipeline(pipelineId).inputs).toMatchObject({ action: "destroy" });
        expect(requestMessages(w)).toHaveLength(1);
        const actions = (await audit(w)).map((entry) => entry.action);
        expect(actions.filter((a) => a === "lease_expired")).toHaveLength(1);
        expect(actions.filter((a) => a === "requested")).toHaveLength(1);
      } finally {
        await w.close();
      }
    },
    TEST_MS,
  );

  for (const moment of MOMENTS) {
    declared.push(`lease expiry destroy/play_destroy:${moment}`);
    it(
      `crashes at play_destroy:${moment} of the destroy a lease's end plays without approval, and destroys once`,
      async () => {
        const env = { ...LEASES, SLACK_CHANNEL: CHANNEL, VM_LEASE_ON_EXPIRY: "destroy" };
        const w = await startWorld(`play_destroy:${moment}`, env, (store) =>
          seedVm(store, new Date(Date.now() - 1_000).toISOString()),
        );
        try {
          const pipelineId = await until(
            w,
            () => w.gitlab.pipelines[0]?.id,
            "the destroy pipeline",
          );
          settle(w, pipelineId, "tf:destroy");
          await until(
            w,
            () => (w.gitlab.job(pipelineId, "tf:destroy").status !== "manual" ? true : undefined),
            "the destroy job to start",
          );
          settle(w, pipelineId, "tf:destroy");
          await until(
            w,
            () =>
              threadOf(w, requestMessage(w)!).some((m) => m.text.includes("is destroyed"))
                ? true
                : undefined,
            "the owner to be told",
          );
          await settled(w);
          expect(w.crashes).toBe(1);
          expect(requestMessage(w)?.text).toBe("Destroy web-01 — Destroyed");
          expect(requestMessages(w)).toHaveLength(1);
          expect(w.gitlab.pipelines).toHaveLength(1);
          expect(w.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(1);
          const actions = (await audit(w)).map((entry) => entry.action);
          for (const once of ["lease_expired", "destroy_without_approval", "vm_destroyed"]) {
            expect(actions.filter((a) => a === once)).toHaveLength(1);
          }
          expect(actions).not.toContain("approved");
          expect(await vmOf(w, "web-01")).toBeUndefined();
        } finally {
          await w.close();
        }
      },
      TEST_MS,
    );
  }

  it("has a test for each of its crash points, before and after", () => {
    expectDeclared("destroy", declared);
  });
});
