import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createWebhookHandler, sameSecret } from "../../src/gitlab/webhook.js";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { readFixture } from "../support/fixtures.js";
import { askForVm, harnessPerTest, runUntilSettled, type Harness } from "../support/harness.js";
import { waitFor } from "../support/wait.js";
import { TEST_SECRETS } from "../support/secrets.js";

const start = harnessPerTest();
const withWebhook = { env: { GITLAB_WEBHOOK_SECRET: TEST_SECRETS.webhookSecret } };

function post(h: Pick<Harness, "baseUrl">, token: string | undefined, body: string) {
  return fetch(`${h.baseUrl}/gitlab/webhook`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-gitlab-event": "Pipeline Hook",
      ...(token === undefined ? {} : { "x-gitlab-token": token }),
    },
    body,
  });
}

describe("POST /gitlab/webhook", () => {
  it("wakes the tracker, which posts the plan without waiting for the next poll", async () => {
    const h = await start(withWebhook);
    const pipelineId = await askForVm(h);
    h.gitlab.deliverHooks({
      url: `${h.baseUrl}/gitlab/webhook`,
      secretToken: TEST_SECRETS.webhookSecret,
    });
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.gitlab.settled();
    const request = await waitFor(
      async () => (await h.bot.store.listActive()).find((r) => r.status === "awaiting_approval"),
      "the plan to be posted after the webhook",
    );
    expect(request.review?.plan.resources.length).toBeGreaterThan(0);
    expect(h.gitlab.hookDeliveries.every((d) => d.response?.status === 200)).toBe(true);
  });

  it("reads the jobs of the pipeline a Job Hook names, though the pipelines list shows no change", async () => {
    const h = await start(withWebhook);
    const pipelineId = await askForVm(h);
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    await h.bot.tracker.tick();
    const jobReads = () => h.gitlab.requestsTo("GET", new RegExp(`/pipelines/${pipelineId}/jobs`));
    // Nothing changed since: a pass reads no job.
    const before = jobReads().length;
    await h.bot.tracker.tick();
    expect(jobReads()).toHaveLength(before);

    const hook = JSON.stringify({ object_kind: "build", pipeline_id: pipelineId, build_id: 1 });
    expect((await post(h, TEST_SECRETS.webhookSecret, hook)).status).toBe(200);
    await waitFor(
      () => jobReads().length > before || undefined,
      "the named pipeline's jobs to be read",
    );
  });

  it("refuses a wrong or missing token with 401 and wakes nothing", async () => {
    const wakes: (number | undefined)[] = [];
    const server = createServer(
      createWebhookHandler({
        secret: TEST_SECRETS.webhookSecret,
        wake: (pipelineId) => wakes.push(pipelineId),
        log: createLogger({ level: "silent", redactor: createRedactor() }),
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
    const body = JSON.stringify({ object_kind: "pipeline", object_attributes: { id: 1 } });
    try {
      // The handler wakes the tracker before it answers, so an answer means it has decided.
      expect((await post({ baseUrl: url }, "not-the-secret", body)).status).toBe(401);
      expect((await post({ baseUrl: url }, undefined, body)).status).toBe(401);
      expect(wakes).toStrictEqual([]);
      expect((await post({ baseUrl: url }, TEST_SECRETS.webhookSecret, body)).status).toBe(200);
      expect(wakes).toStrictEqual([1]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("answers 400 to a body that is not a GitLab hook", async () => {
    const h = await start(withWebhook);
    expect((await post(h, TEST_SECRETS.webhookSecret, "not json")).status).toBe(400);
    expect((await post(h, TEST_SECRETS.webhookSecret, "[1,2]")).status).toBe(400);
  });

  it("does not exist when no GITLAB_WEBHOOK_SECRET is set", async () => {
    const h = await start();
    expect((await post(h, "anything", "{}")).status).toBe(404);
  });
});

describe("POST /gitlab/webhook with GitLab's own payloads", () => {
  it("accepts GitLab's real Pipeline Hook and Job Hook bodies", async () => {
    const h = await start(withWebhook);
    for (const file of ["pipeline.json", "job.json", "build.json"]) {
      const body = readFixture(`gitlab-webhooks/${file}`);
      const response = await post(h, TEST_SECRETS.webhookSecret, body);
      expect(response.status, file).toBe(200);
    }
  });
});

describe("sameSecret", () => {
  it("compares secrets of any length", () => {
    expect(sameSecret("abc", "abc")).toBe(true);
    expect(sameSecret("abc", "abcd")).toBe(false);
    expect(sameSecret("", "abc")).toBe(false);
  });
});
