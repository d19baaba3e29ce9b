import { describe, expect, it } from "vitest";
import { stateValuesFor } from "../../sandbox/simulators/slack/signer.js";
import { CHANNEL, REQUESTER, harnessPerTest } from "../support/harness.js";
import { waitFor } from "../support/wait.js";

const start = harnessPerTest();

describe("a pipeline GitLab creates after the bot gave up on it", () => {
  it("is canceled on the next pass, audited and said in the failed request's thread", async () => {
    const h = await start({ gitlabTimeoutMs: 300 });
    const release: (() => void)[] = [];
    const landed = new Promise<void>((resolve) => {
      release.push(resolve);
    });
    h.gitlab.failNext({ method: "POST", path: /\/pipeline$/ }, { until: landed });

    await h.signer.slashCommand({ text: "create web-01", userId: REQUESTER, channelId: CHANNEL });
    await h.slack.waitFor("views.open");
    const view = h.slack.views.at(-1)!;
    await h.signer.viewSubmission({
      view,
      values: stateValuesFor(view, { vm_ip: "192.168.1.50/24" }),
      userId: REQUESTER,
    });
    // GitLab did not answer in time, and nothing could be found: the request failed.
    await h.slack.waitFor("chat.update", (call) => call.args.text === "VM web-01 — Failed");
    const request = (await h.bot.store.listAudit())[0]!.requestId!;
    expect(await h.bot.store.getRequest(request)).toMatchObject({
      status: "failed",
      pipelineId: null,
    });

    // GitLab creates it after all.
    for (const resolve of release) resolve();
    const late = await waitFor(() => h.gitlab.pipelines[0], "the late pipeline");
    await h.bot.tracker.tick();

    expect(h.gitlab.pipeline(late.id).status).toBe("canceled");
    expect(h.gitlab.job(late.id, "tf:apply").status).toBe("canceled");
    expect(
      (await h.bot.store.listAudit(request))
        .filter((entry) => entry.action === "late_pipeline_canceled")
        .map((entry) => entry.detail),
    ).toEqual([{ pipelineId: late.id, kept: null, status: "canceled" }]);
    const messageTs = (await h.bot.store.getRequest(request))!.messageTs!;
    expect(h.slack.messages.filter((m) => m.thread_ts === messageTs).map((m) => m.text)).toEqual([
      `:warning: GitLab created pipeline #${late.id} for this request after vmbot had given up waiting for it. The request had ended, so vmbot canceled it.`,
    ]);

    // Handled once: later passes neither cancel nor say it again.
    const cancels = h.gitlab.requestsTo("POST", /\/cancel$/).length;
    await h.bot.tracker.tick();
    expect(h.gitlab.requestsTo("POST", /\/cancel$/)).toHaveLength(cancels);
    expect(h.slack.messages.filter((m) => m.thread_ts === messageTs)).toHaveLength(1);
  });

  it("costs nothing on passes once no create is uncertain", async () => {
    const h = await start();
    await h.bot.tracker.tick();
    const mark = h.gitlab.mark();
    await h.bot.tracker.tick();
    expect(h.gitlab.requestsSince(mark)).toEqual([]);
  });
});
