import { describe, expect, it } from "vitest";
import {
  APPROVER,
  REQUESTER,
  click,
  harnessPerTest,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";

import { askToDestroy, configureFailed, destroyApproved } from "../support/destroy.js";

const start = harnessPerTest();
const RETRY = /\/jobs\/\d+\/retry$/;

const ephemeralTo = (h: Harness, user: string) =>
  h.slack.waitFor("chat.postEphemeral", (call) => call.args.user === user);

const audit = async (h: Harness, requestId: string) =>
  (await h.bot.store.listAudit(requestId)).map((entry) => [entry.actor, entry.action]);

describe("Retry configure after a configure failure", () => {
  it("offers Retry configure, runs the configure job again once, follows the new job and posts its recap", async () => {
    const h = await start();
    const { pipelineId, requestId, message, thread } = await configureFailed(h);
    const failedJob = h.gitlab.job(pipelineId, "ansible:configure");
    const failed = JSON.stringify(message().blocks);
    expect(failed).toContain('"action_id":"request_retry_configure"');
    expect(failed).toContain("Retry configure");
    expect(failed).toContain("The VM exists: the failed task is in the thread.");
    // The channel message carries no log lines: the thread has the failed task.
    expect(failed).not.toContain("```");
    expect(thread().map((m) => m.text.split("\n")[0])).toContain(":x: Configuration failed.");

    await click(h, message(), REQUESTER, "request_retry_configure");
    await h.slack.waitFor("chat.postMessage", (call) =>
      String(call.args.text).includes("retried the configuration"),
    );
    expect(h.gitlab.requestsTo("POST", RETRY)).toHaveLength(1);
    const again = h.gitlab.job(pipelineId, "ansible:configure");
    expect(again.id).not.toBe(failedJob.id);
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("configuring");
    expect(JSON.stringify(message().blocks)).not.toContain("request_retry_configure");
    expect(await audit(h, requestId)).toContainEqual([REQUESTER, "configure_retried"]);
    expect(await audit(h, requestId)).toContainEqual([REQUESTER, "configure_retry_started"]);

    runUntilSettled(h, pipelineId, "ansible:configure");
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
    const replies = thread().map((m) => m.text.split("\n")[0]);
    expect(replies).toContain(":white_check_mark: Configured.");
    expect(replies.filter((line) => line === ":x: Configuration failed.")).toHaveLength(1);
    expect(replies.some((line) => line?.includes(`<@${REQUESTER}> *web-01* is ready`))).toBe(true);
    expect(h.gitlab.requestsTo("POST", RETRY)).toHaveLength(1);
  });

  for (const lost of ["reset", { status: 502 }] as const) {
    it(`answer lost after GitLab took the retry (${JSON.stringify(lost)}): reads the pipeline back, exactly one new job`, async () => {
      const h = await start();
      const { pipelineId, requestId, message } = await configureFailed(h);
      const failedJob = h.gitlab.job(pipelineId, "ansible:configure");
      h.gitlab.failNext({ method: "POST", path: RETRY }, { afterEffect: lost });
      await click(h, message(), REQUESTER, "request_retry_configure");
      await h.slack.waitFor("chat.postMessage", (call) =>
        String(call.args.text).includes("retried the configuration"),
      );
      const jobs = h.gitlab.pipeline(pipelineId).jobs.filter((j) => j.name === "ansible:configure");
      expect(jobs).toHaveLength(2);
      expect(jobs.filter((j) => j.id !== failedJob.id)).toHaveLength(1);
      expect((await h.bot.store.getRequest(requestId))?.status).toBe("configuring");

      // A later pass reads the pipeline and follows the one new job, without asking again.
      runUntilSettled(h, pipelineId, "ansible:configure");
      await h.bot.tracker.tick();
      expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
      expect(
        h.gitlab.pipeline(pipelineId).jobs.filter((j) => j.name === "ansible:configure"),
      ).toHaveLength(2);
      expect(h.gitlab.requestsTo("POST", RETRY)).toHaveLength(1);
    });
  }

  it("when neither the retry nor the read back is answered, a later pass settles it from the pipeline without a second retry", async () => {
    const h = await start();
    const { pipelineId, requestId, message } = await configureFailed(h);
    h.gitlab.failNext({ method: "POST", path: RETRY }, { afterEffect: "reset" });
    // Every attempt of the read back (GET is retried) fails.
    h.gitlab.failNext(
      { method: "GET", path: new RegExp(`/pipelines/${pipelineId}/jobs`) },
      { status: 503 },
      { times: 4 },
    );
    await click(h, message(), REQUESTER, "request_retry_configure");
    const told = await ephemeralTo(h, REQUESTER);
    expect(told.args.text).toContain("it does not retry twice");
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("configuring");

    await h.bot.tracker.tick();
    await h.slack.waitFor("chat.postMessage", (call) =>
      String(call.args.text).includes("retried the configuration"),
    );
    runUntilSettled(h, pipelineId, "ansible:configure");
    await h.bot.tracker.tick();
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
    expect(h.gitlab.requestsTo("POST", RETRY)).toHaveLength(1);
    expect(
      h.gitlab.pipeline(pipelineId).jobs.filter((j) => j.name === "ansible:configure"),
    ).toHaveLength(2);
  });

  it("two clicks at once retry once", async () => {
    const h = await start({ env: { APPROVERS: `${APPROVER},U0SECOND` } });
    const { pipelineId, message } = await configureFailed(h);
    const failedMessage = structuredClone(message());
    await Promise.all([
      click(h, failedMessage, REQUESTER, "request_retry_configure"),
      click(h, failedMessage, APPROVER, "request_retry_configure"),
    ]);
    await h.slack.waitFor("chat.postMessage", (call) =>
      String(call.args.text).includes("retried the configuration"),
    );
    // The click that lost the claim is answered: both clicks have been handled.
    await h.slack.waitFor("chat.postEphemeral", (call) =>
      String(call.args.text).includes("nothing to retry its configuration for"),
    );
    expect(h.gitlab.requestsTo("POST", RETRY)).toHaveLength(1);
    expect(
      h.gitlab.pipeline(pipelineId).jobs.filter((j) => j.name === "ansible:configure"),
    ).toHaveLength(2);
  });

  it("refuses someone who is neither the requester nor an approver, naming who may", async () => {
    const h = await start();
    const { requestId, message } = await configureFailed(h);
    await click(h, message(), "U0STRANGER", "request_retry_configure");
    const told = await ephemeralTo(h, "U0STRANGER");
    expect(told.args.text).toBe(
      `Only <@${REQUESTER}>, who asked for web-01, or an approver (<@${APPROVER}>) can retry its configuration.`,
    );
    expect(h.gitlab.requestsTo("POST", RETRY)).toHaveLength(0);
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("failed");
  });

  it("when GitLab refuses the retry, the request stays failed with its button and the clicker is told why", async () => {
    const h = await start();
    const { requestId, message } = await configureFailed(h);
    h.gitlab.failNext({ method: "POST", path: RETRY }, { status: 403 });
    await click(h, message(), APPROVER, "request_retry_configure");
    const told = await ephemeralTo(h, APPROVER);
    expect(told.args.text).toContain(
      "GitLab did not run the configuration of web-01 again, so it is still failed.",
    );
    const request = (await h.bot.store.getRequest(requestId))!;
    expect(request.status).toBe("failed");
    expect(request.error).toContain("GitLab did not run it again");
    await h.slack.waitFor("chat.update", (call) =>
      JSON.stringify(call.args.blocks).includes("GitLab did not run it again"),
    );
    expect(JSON.stringify(message().blocks)).toContain("request_retry_configure");
  });

  it("refuses to configure again a VM being destroyed, or destroyed: Ansible would run at an address that is not its own", async () => {
    const h = await start();
    const { requestId, message } = await configureFailed(h);
    const created = structuredClone(message());
    const destroy = await askToDestroy(h);
    await click(h, created, REQUESTER, "request_retry_configure");
    expect((await ephemeralTo(h, REQUESTER)).args.text).toBe(
      "web-01 is being destroyed, so its configuration is not run again.",
    );

    await destroyApproved(h, destroy);
    expect(await h.bot.store.inventory.get("web-01")).toBeUndefined();
    await click(h, created, APPROVER, "request_retry_configure");
    expect((await ephemeralTo(h, APPROVER)).args.text).toBe(
      "web-01 is no longer the VM this request made (it was destroyed, or asked for again since), so there is nothing to configure.",
    );
    expect(h.gitlab.requestsTo("POST", RETRY)).toHaveLength(0);
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("failed");
  });

  it("takes the Retry configure button off the VM's message once the VM is destroyed, and says so", async () => {
    const h = await start();
    const { message } = await configureFailed(h);
    expect(JSON.stringify(message().blocks)).toContain("request_retry_configure");
    const destroy = await askToDestroy(h);
    await destroyApproved(h, destroy);
    const shown = JSON.stringify(message().blocks);
    expect(shown).not.toContain("request_retry_configure");
    expect(shown).toContain(
      "The configure job failed in GitLab, and web-01 has been destroyed since: there is nothing left to configure.",
    );
    expect(shown).toContain(":wastebasket: Destroyed by request `");
    expect(shown).not.toContain("The VM exists");
  });
});
