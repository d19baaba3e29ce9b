import { WebClient } from "@slack/web-api";
import { TEST_SECRETS } from "../support/secrets.js";
import { describe, expect, it, vi } from "vitest";
import type { Tracker } from "../../src/tracker/tracker.js";
import { FencedError } from "../../src/store/postgres/leader.js";
import { testClock } from "../support/clock.js";
import { waitFor } from "../support/wait.js";
import {
  CHANNEL,
  PROJECT_PATH,
  askForVm,
  harnessPerTest,
  requestsOf,
  runUntilSettled,
  type Harness,
} from "../support/harness.js";

const start = harnessPerTest();

/** `terraform show -json` of a plan that replaces the VM, with the platform's node_resources. */
const replacePlanJson = {
  format_version: "1.2",
  terraform_version: "1.9.5",
  resource_changes: [
    {
      address: "proxmox_virtual_environment_vm.vm",
      mode: "managed",
      type: "proxmox_virtual_environment_vm",
      name: "vm",
      action_reason: "replace_because_cannot_update",
      change: { actions: ["delete", "create"], replace_paths: [["clone", 0, "vm_id"]] },
    },
  ],
  output_changes: { node_resources: { actions: ["no-op"] } },
  planned_values: {
    outputs: {
      node_resources: {
        sensitive: false,
        value: {
          pve: { cpu_usage_percent: 12.6, memory_used_gb: 3.2, memory_total_gb: 16 },
          pve2: { cpu_usage_percent: 71, memory_used_gb: 60, memory_total_gb: 64 },
        },
      },
    },
  },
};

function trackerFor(h: Harness): Tracker {
  return h.bot.tracker;
}

const requestOf = async (h: Harness, pipelineId: number) =>
  (await requestsOf(h)).find((r) => r.pipelineId === pipelineId)!;

describe("the tracker", () => {
  it("moves a request to planning, then posts the plan with Approve and Reject and the full plan in the thread", async () => {
    const h = await start();
    const tracker = trackerFor(h);
    const pipelineId = await askForVm(h);

    await tracker.tick();
    expect((await requestOf(h, pipelineId)).status).toBe("planning");

    runUntilSettled(h, pipelineId, "tf:plan");
    await tracker.tick();

    const done = await requestOf(h, pipelineId);
    expect(done.status).toBe("awaiting_approval");
    expect(done.review?.plan.resources.length).toBeGreaterThan(0);
    const message = h.slack.message(CHANNEL, done.messageTs!)!;
    const body = JSON.stringify(message.blocks);
    expect(message.text).toBe("VM web-01 — Awaiting approval");
    expect(body).toContain("*Plan:*");
    expect(body).toContain('"action_id":"plan_approve"');
    expect(body).toContain(`"value":"${done.id}"`);
    expect(h.slack.uploads).toHaveLength(1);
    expect(h.slack.uploads[0]).toMatchObject({ filename: "web-01-plan.txt" });
    expect(body).toContain("full plan in the thread");
  });

  it("does not upload the plan again after a restart that came between the upload and the status change", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    await trackerFor(h).tick();
    runUntilSettled(h, pipelineId, "tf:plan");
    const planJob = h.gitlab.job(pipelineId, "tf:plan");
    // What a bot that uploaded the plan and died before recording it leaves: the intent in the
    // store, and the file in the request's thread.
    const request = await requestOf(h, pipelineId);
    await h.bot.store.intend(request.id, `upload_plan:${planJob.id}`);
    await new WebClient(TEST_SECRETS.botToken, { slackApiUrl: h.slack.apiUrl }).filesUploadV2({
      channel_id: CHANNEL,
      thread_ts: request.messageTs!,
      filename: "web-01-plan.txt",
      content: "the plan",
    });
    await trackerFor(h).tick();
    expect(await requestOf(h, pipelineId)).toMatchObject({
      status: "awaiting_approval",
      review: expect.objectContaining({ planFile: "uploaded" }) as unknown,
    });
    expect(h.slack.uploads).toHaveLength(1);
    expect(h.slack.callsTo("conversations.replies")).toHaveLength(1);
    expect(await h.bot.store.effect(request.id, `upload_plan:${planJob.id}`)).toMatchObject({
      state: "done",
      result: { reconciled: true },
    });
  });

  it("ends the request with the plan job's last log lines when the plan fails", async () => {
    const h = await start();
    const tracker = trackerFor(h);
    const pipelineId = await askForVm(h);
    await tracker.tick();
    h.gitlab.failJob(pipelineId, "tf:plan", "script_failure");
    runUntilSettled(h, pipelineId, "tf:plan");
    await tracker.tick();

    const failed = await requestOf(h, pipelineId);
    expect(failed.status).toBe("failed");
    const job = h.gitlab.job(pipelineId, "tf:plan");
    expect(failed.error).toContain(
      `The plan job \`tf:plan\` failed in GitLab. <${h.gitlab.url}/${PROJECT_PATH}/-/jobs/${job.id}|Open its log>.`,
    );
    expect(JSON.stringify(h.slack.message(CHANNEL, failed.messageTs!)!.blocks)).toContain(
      "Open its log",
    );
  });

  it("says a failed plan's cause on the message and puts its Terraform error, whole, in the thread instead of the log's last lines", async () => {
    const h = await start();
    const tracker = trackerFor(h);
    const pipelineId = await askForVm(h);
    await tracker.tick();
    h.gitlab.failJob(pipelineId, "tf:plan", "script_failure");
    runUntilSettled(h, pipelineId, "tf:plan");
    await tracker.tick();

    const failed = await requestOf(h, pipelineId);
    // The message says the cause in one sentence; the error itself, whole, is in the thread.
    expect(failed.error).toContain(
      "Terraform stopped on an error from the provider or its API: error retrieving VM list: received an HTTP 401 response - Reason: authentication failure.",
    );
    expect(failed.error).not.toContain("```");
    const excerpt = h.slack.messages.find(
      (m) => m.thread_ts === failed.messageTs && m.text.startsWith(":x: Terraform's error:"),
    );
    expect(excerpt?.text).toContain(
      "```Error: error retrieving VM list: received an HTTP 401 response - Reason: authentication failure",
    );
    expect(excerpt?.text).toContain(
      'on main.tf line 12, in resource "proxmox_virtual_environment_vm"',
    );
    // The runner's closing lines are not the cause.
    expect(excerpt?.text).not.toContain("ERROR: Job failed");
  });

  it("reads the plan and the nodes' load from the plan job's JSON artifact when configured", async () => {
    const h = await start({ env: { GITLAB_PLAN_JSON_ARTIFACT: "plan.json" } });
    const pipelineId = await askForVm(h);
    await trackerFor(h).tick();
    h.gitlab.setJobArtifact(pipelineId, "tf:plan", "plan.json", JSON.stringify(replacePlanJson));
    runUntilSettled(h, pipelineId, "tf:plan");
    await trackerFor(h).tick();

    const review = (await requestOf(h, pipelineId)).review!;
    expect(review.plan.resources).toEqual([
      expect.objectContaining({
        address: "proxmox_virtual_environment_vm.vm",
        action: "replace",
        replaceOrder: "delete-first",
      }),
    ]);
    expect(review.nodes?.map((n) => n.name).sort()).toEqual(["pve", "pve2"]);
    const message = h.slack.message(CHANNEL, (await requestOf(h, pipelineId)).messageTs!)!;
    const body = JSON.stringify(message.blocks);
    expect(body).toContain(":rotating_light: *This plan destroys a resource of VM web-01.*");
    expect(body).toContain("*pve* (chosen): CPU 13%, memory 3.2 / 16.0 GiB");
    expect(body).toContain("*pve2*: CPU 71%, memory 60.0 / 64.0 GiB");
    expect(body).toContain('"text":"Destroy resources?"');
  });

  it("reads the plan from the log, and says why, when the plan's JSON artifact is longer than GITLAB_LOG_MAX_BYTES", async () => {
    const h = await start({
      env: { GITLAB_PLAN_JSON_ARTIFACT: "plan.json", GITLAB_LOG_MAX_BYTES: "65536" },
    });
    const pipelineId = await askForVm(h);
    await trackerFor(h).tick();
    const long = JSON.stringify({ ...replacePlanJson, description: "x".repeat(100_000) });
    h.gitlab.setJobArtifact(pipelineId, "tf:plan", "plan.json", long);
    runUntilSettled(h, pipelineId, "tf:plan");
    await trackerFor(h).tick();

    const review = (await requestOf(h, pipelineId)).review!;
    // The log's plan creates the VM; the artifact's, unread, would have replaced it.
    expect(review.plan.resources).toEqual([
      expect.objectContaining({ address: "proxmox_virtual_environment_vm.vm", action: "create" }),
    ]);
    expect(review.plan.notes).toContain(
      "The plan job's plan.json is longer than 64 KB, more than vmbot reads; this summary was read from its log.",
    );
    const body = JSON.stringify(
      h.slack.message(CHANNEL, (await requestOf(h, pipelineId)).messageTs!)!.blocks,
    );
    expect(body).toContain("plan.json is longer than 64 KB");
  });

  it("ends the request with a clear sentence when its pipeline was deleted in GitLab", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    h.gitlab.failNext(
      { method: "GET", path: new RegExp(`/pipelines/${pipelineId}/jobs`) },
      { status: 404, body: { message: "404 Not found" } },
    );
    await trackerFor(h).tick();
    expect(await requestOf(h, pipelineId)).toMatchObject({
      status: "failed",
      error: `Pipeline #${pipelineId} no longer exists in GitLab (it was deleted), so nothing more will happen for this request. Run /vm create again if the VM is still needed.`,
    });
  });

  it("keeps a request and reads it again when GitLab fails for a moment", async () => {
    const h = await start();
    const pipelineId = await askForVm(h);
    h.gitlab.failNext(
      { method: "GET", path: new RegExp(`/pipelines/${pipelineId}/jobs`) },
      { status: 500 },
    );
    await trackerFor(h).tick();
    expect((await requestOf(h, pipelineId)).status).toBe("queued");
    await trackerFor(h).tick();
    expect((await requestOf(h, pipelineId)).status).toBe("planning");
  });

  it("reads a pipeline that stopped changing before its request was followed: the ID came while a pass listed", async () => {
    const gitlabClock = testClock();
    const h = await start({ gitlab: { now: gitlabClock.now } });
    const tracker = trackerFor(h);
    const first = await askForVm(h, "web-01");
    await tracker.tick(); // the first pass reads everything once; later ones only what changed
    // The next pass has its unfinished requests and is waiting for GitLab's list of changes…
    let answer!: () => void;
    h.gitlab.failNext(
      { method: "GET", path: /\/pipelines$/ },
      { until: new Promise<void>((resolve) => (answer = resolve)) },
    );
    const listed = h.gitlab.requestsTo("GET", /\/pipelines$/).length;
    const pass = tracker.tick();
    await waitFor(
      () => h.gitlab.requestsTo("GET", /\/pipelines$/).length > listed || undefined,
      "the pass to ask GitLab for the changed pipelines",
    );
    // …when a second request gets its pipeline, which plans and stops at the manual apply job,
    // before GitLab answers; a minute later the first one moves on. That list is the last to
    // show the second pipeline changing: later ones ask for what changed after the first moved.
    const pipelineId = await askForVm(h, "web-02");
    runUntilSettled(h, pipelineId, "tf:plan");
    gitlabClock.advance(60_000);
    h.gitlab.advance(first);
    answer();
    await pass;
    expect((await requestOf(h, pipelineId)).status).toBe("queued");

    await tracker.tick();
    expect((await requestOf(h, pipelineId)).status).toBe("awaiting_approval");
  });

  it("reads on a later pass what a pass cut short by a change of leader had still to read", async () => {
    const gitlabClock = testClock();
    const h = await start({ gitlab: { now: gitlabClock.now } });
    const tracker = trackerFor(h);
    const ids: number[] = [];
    for (const name of ["web-01", "web-02", "web-03", "web-04", "web-05", "web-06"]) {
      ids.push(await askForVm(h, name));
    }
    await tracker.tick(); // the first pass reads everything once; later ones only what changed
    // Every plan ends: the last two's a minute before the others'.
    const [first, ...rest] = ids as [number, ...number[]];
    const [slow, left] = [rest.slice(0, 3), rest.slice(3)];
    for (const pipelineId of left) runUntilSettled(h, pipelineId, "tf:plan");
    gitlabClock.advance(60_000);
    for (const pipelineId of [first, ...slow]) runUntilSettled(h, pipelineId, "tf:plan");
    // The pass reads four at a time. The first one's move is refused at once (another replica
    // leads now) while the next three are still being read, slowly; the last two are left.
    const refusedId = (await requestOf(h, first)).id;
    const store = h.bot.store;
    const transition = store.transition.bind(store);
    let refused = 0;
    vi.spyOn(store, "transition").mockImplementation((...args) => {
      if (args[0] === refusedId && refused++ === 0) {
        return Promise.reject(new FencedError("move a request", 1));
      }
      return transition(...args);
    });
    h.gitlab.failNext(
      { method: "GET", path: new RegExp(`/pipelines/(${slow.join("|")})/jobs`) },
      { delayMs: 300 },
      { times: slow.length },
    );
    await tracker.tick();
    expect(refused).toBe(1);
    // What the cut-short pass had started ends on its own.
    await waitFor(async () => {
      const moved = await Promise.all(slow.map(async (id) => (await requestOf(h, id)).status));
      return moved.every((status) => status === "awaiting_approval") || undefined;
    }, "the reads the pass had started to end");

    // Later lists ask for changes after the newest the cut-short pass saw: a minute after the
    // last two plans ended.
    await tracker.tick();
    const statuses = await Promise.all(ids.map(async (id) => (await requestOf(h, id)).status));
    expect(statuses).toEqual(ids.map(() => "awaiting_approval"));
  });

  it("reads, within a minute, a change that GitLab shows after a later one was listed: its updated_at is older", async () => {
    const gitlabClock = testClock();
    const botClock = testClock();
    const h = await start({ gitlab: { now: gitlabClock.now }, clock: botClock.now });
    const tracker = trackerFor(h);
    const late = await askForVm(h, "web-01");
    const other = await askForVm(h, "web-02");
    await tracker.tick(); // the first pass reads everything once; later ones only what changed
    // Rails sets updated_at before the transaction commits: the first plan's end, stamped two
    // seconds before the other pipeline's change, is seen only after that change was listed.
    gitlabClock.advance(5_000);
    h.gitlab.advance(other);
    await tracker.tick();
    gitlabClock.advance(-2_000);
    runUntilSettled(h, late, "tf:plan");
    gitlabClock.advance(2_000);
    // Lists ask for changes after the newest seen…
    await tracker.tick();
    expect((await requestOf(h, late)).status).toBe("planning");
    // …and once a minute from a minute before it.
    botClock.advance(60_000);
    await tracker.tick();
    expect((await requestOf(h, late)).status).toBe("awaiting_approval");
  });

  it("goes on following when GitLab's list gives a timestamp that is none", async () => {
    const h = await start();
    const tracker = trackerFor(h);
    const pipelineId = await askForVm(h, "web-01");
    const mangled = [
      {
        id: pipelineId,
        status: "pending",
        updated_at: "yesterday",
        web_url: `${h.gitlab.url}/${PROJECT_PATH}/-/pipelines/${pipelineId}`,
      },
    ];
    // The first pass's look at GitLab's last change, then a list of changes.
    h.gitlab.failNext({ method: "GET", path: /\/pipelines$/ }, { status: 200, body: mangled });
    await tracker.tick();
    h.gitlab.failNext({ method: "GET", path: /\/pipelines$/ }, { status: 200, body: mangled });
    await tracker.tick();
    expect((await requestOf(h, pipelineId)).status).toBe("planning");

    runUntilSettled(h, pipelineId, "tf:plan");
    await tracker.tick();
    expect((await requestOf(h, pipelineId)).status).toBe("awaiting_approval");
  });

  it("asks GitLab for the changes after its own last one, whatever this replica's clock says", async () => {
    // Five minutes ahead of GitLab: a list from its own time would miss every change till then.
    const h = await start({ clock: testClock(new Date(Date.now() + 5 * 60_000)).now });
    const tracker = trackerFor(h);
    const pipelineId = await askForVm(h, "web-01");
    await tracker.tick();
    expect((await requestOf(h, pipelineId)).status).toBe("planning");

    runUntilSettled(h, pipelineId, "tf:plan");
    await tracker.tick();
    expect((await requestOf(h, pipelineId)).status).toBe("awaiting_approval");
  });

  it("costs one GitLab request per tick whether 1 or 50 requests wait, when none changes", async () => {
    const h = await start();
    const tracker = trackerFor(h);
    const perTick: number[] = [];
    for (const count of [1, 50]) {
      while ((await h.bot.store.listActive()).length < count) {
        await askForVm(h, `web-${(await h.bot.store.listActive()).length + 1}`);
      }
      await tracker.tick(); // the first pass looks at everything once
      await tracker.tick();
      const before = h.gitlab.requests.length;
      await tracker.tick();
      perTick.push(h.gitlab.requests.length - before);
    }
    expect(perTick).toEqual([1, 1]);
  }, 60_000);
});
