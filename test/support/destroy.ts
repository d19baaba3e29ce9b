import { expect } from "vitest";
import type { FakeMessage } from "../../sandbox/simulators/slack/index.js";
import {
  APPROVER,
  CHANNEL,
  click,
  planRequest,
  REQUESTER,
  runUntilSettled,
  type Harness,
} from "./harness.js";
import { waitFor } from "./wait.js";

/** A VM made through the wire, and a destroy asked for it: the steps destroy tests share. */

export interface CommandAnswer {
  response_type?: string;
  text: string;
  blocks: FakeMessage["blocks"];
}

/** Types `/vm <text>` as `userId`; the immediate (ephemeral) answer. */
export async function vmCommand(h: Harness, userId: string, text: string): Promise<CommandAnswer> {
  const delivery = await h.signer.slashCommand({ text, userId, channelId: CHANNEL });
  expect(delivery.status).toBe(200);
  return JSON.parse(delivery.body) as CommandAnswer;
}

/** web-01 asked for by REQUESTER, approved, applied at 192.168.1.50 and configured. */
export async function makeVm(h: Harness): Promise<number> {
  const { pipelineId, requestId, message } = await planRequest(h);
  await click(h, message(), APPROVER, "plan_approve");
  await waitFor(
    () => (h.gitlab.job(pipelineId, "tf:apply").status === "manual" ? undefined : true),
    "the apply job to start",
  );
  h.gitlab.setJobArtifact(pipelineId, "tf:apply", "vm_ip.txt", "192.168.1.50\n");
  runUntilSettled(h, pipelineId, "tf:apply");
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "ansible:configure");
  await h.bot.tracker.tick();
  expect((await h.bot.store.getRequest(requestId))?.status).toBe("ready");
  return pipelineId;
}

/** A request approved and applied whose configure job failed: the VM exists. */
export async function configureFailed(h: Harness) {
  const planned = await planRequest(h);
  const { pipelineId, requestId, message } = planned;
  await click(h, message(), APPROVER, "plan_approve");
  await h.slack.waitFor("chat.update", (call) =>
    JSON.stringify(call.args.blocks).includes("Approved by"),
  );
  runUntilSettled(h, pipelineId, "tf:apply");
  await h.bot.tracker.tick();
  h.gitlab.failJob(pipelineId, "ansible:configure", "script_failure");
  runUntilSettled(h, pipelineId, "ansible:configure");
  await h.bot.tracker.tick();
  expect((await h.bot.store.getRequest(requestId))?.status).toBe("failed");
  return planned;
}

/**
 * `/vm destroy web-01` by `userId`, confirmed, its pipeline run to the approval: the pipeline,
 * the request's ID and its message (read afresh).
 */
export async function askToDestroy(h: Harness, userId = REQUESTER) {
  const before = h.gitlab.pipelines.length;
  const prompt = await vmCommand(h, userId, "destroy web-01");
  await h.signer.blockAction({
    message: {
      channel: CHANNEL,
      ts: "1796205600.000100",
      text: prompt.text,
      blocks: prompt.blocks,
      user: h.slack.identity.botUserId,
      bot_id: h.slack.identity.botId,
      app_id: h.slack.identity.appId,
    },
    ephemeral: true,
    actionId: "destroy_confirm",
    userId,
  });
  const pipelineId = await waitFor(
    () => (h.gitlab.pipelines.length > before ? h.gitlab.pipelines.at(-1)!.id : undefined),
    "the destroy pipeline",
  );
  const request = await waitFor(
    async () =>
      (await h.bot.store.listActive()).find(
        (r) => r.kind === "destroy" && r.pipelineId === pipelineId && r.messageTs !== null,
      ),
    "the destroy request",
  );
  await h.bot.tracker.tick();
  runUntilSettled(h, pipelineId, "tf:destroy");
  await h.bot.tracker.tick();
  expect((await h.bot.store.getRequest(request.id))?.status).toBe("awaiting_approval");
  const message = () => h.slack.message(CHANNEL, request.messageTs!)!;
  return { pipelineId, requestId: request.id, message };
}

/** The destroy asked for by `askToDestroy`, approved by APPROVER and run to its end in GitLab. */
export async function destroyApproved(
  h: Harness,
  destroy: { pipelineId: number; message: () => FakeMessage },
) {
  await click(h, destroy.message(), APPROVER, "destroy_approve");
  await waitFor(
    () => (h.gitlab.job(destroy.pipelineId, "tf:destroy").status === "manual" ? undefined : true),
    "the destroy job to start",
  );
  runUntilSettled(h, destroy.pipelineId, "tf:destroy");
  await h.bot.tracker.tick();
}
