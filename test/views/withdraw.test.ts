import { describe, expect, it } from "vitest";
import { planMessage } from "../../src/views/plan-message.js";
import { requestMessage, statusLine } from "../../src/views/request-message.js";
import {
  notYoursToWithdraw,
  stillStartingWords,
  withdrawProblemWords,
} from "../../src/views/withdraw.js";
import { planSummary, sampleRequest } from "../support/requests.js";

const PIPELINE = { pipelineId: 42, pipelineUrl: "https://gitlab.example.com/p/-/pipelines/42" };
const actionsOf = (blocks: unknown[]) =>
  blocks.filter((b) => (b as { type: string }).type === "actions") as {
    block_id: string;
    elements: { action_id: string; value: string; confirm?: Record<string, { text: string }> }[];
  }[];

describe("the Withdraw button", () => {
  it("is on the request message while it queues with a pipeline and while it plans", () => {
    for (const status of ["queued", "planning"] as const) {
      const [actions] = actionsOf(requestMessage(sampleRequest({ status, ...PIPELINE })).blocks);
      expect(actions?.block_id).toBe("request_actions");
      expect(actions?.elements.map((e) => [e.action_id, e.value])).toEqual([
        ["request_withdraw", "vm-abc-1234"],
      ]);
      expect(actions?.elements[0]?.confirm).toMatchObject({
        title: { text: "Withdraw this request?" },
        text: {
          text: "vmbot cancels the pipeline of web-01 in GitLab and its plan can no longer be applied. Only you, who asked for it, can withdraw it.",
        },
        confirm: { text: "Withdraw" },
        deny: { text: "Keep it" },
      });
    }
  });

  it("is not there before the pipeline exists, nor once the apply started or the request ended", () => {
    expect(actionsOf(requestMessage(sampleRequest({ status: "queued" })).blocks)).toEqual([]);
    for (const status of ["applying", "configuring", "ready", "failed", "withdrawn"] as const) {
      expect(actionsOf(requestMessage(sampleRequest({ status, ...PIPELINE })).blocks)).toEqual([]);
    }
  });

  it("sits beside Approve and Reject while the plan waits", () => {
    const request = sampleRequest({ status: "awaiting_approval", ...PIPELINE });
    const message = planMessage(request, {
      plan: planSummary([{ address: "proxmox_virtual_environment_vm.vm", action: "create" }]),
      nodes: undefined,
      planJobUrl: undefined,
      planFile: "none",
    });
    expect(actionsOf(message.blocks)[0]?.elements.map((e) => e.action_id)).toEqual([
      "plan_approve",
      "plan_reject",
      "request_withdraw",
    ]);
  });
});

describe("a withdrawn request", () => {
  const withdrawn = sampleRequest({
    status: "withdrawn",
    ...PIPELINE,
    decision: { kind: "withdrawn", by: "U0REQ", at: "2026-12-02T10:05:00.000Z" },
  });

  it("says who withdrew it and that its pipeline was canceled", () => {
    expect(requestMessage(withdrawn).text).toBe("VM web-01 — Withdrawn");
    expect(statusLine(withdrawn)).toBe(
      "Withdrawn by <@U0REQ>, who asked for it: nothing was built and GitLab <https://gitlab.example.com/p/-/pipelines/42|pipeline #42> was canceled.",
    );
  });

  it("shows who withdrew it and when in place of the plan's buttons", () => {
    const message = planMessage(withdrawn, {
      plan: planSummary([{ address: "proxmox_virtual_environment_vm.vm", action: "create" }]),
      nodes: undefined,
      planJobUrl: undefined,
      planFile: "none",
    });
    const text = JSON.stringify(message.blocks);
    expect(text).toContain(
      ":leftwards_arrow_with_hook: Withdrawn by <@U0REQ> at <!date^1796205900^{date_short_pretty} {time}|2026-12-02T10:05:00.000Z>",
    );
    expect(actionsOf(message.blocks)).toEqual([]);
  });

  it("answers the others who click in plain words", () => {
    expect(notYoursToWithdraw(withdrawn)).toBe(
      "Only <@U0REQ>, who asked for *web-01*, can withdraw it. An approver can reject its plan instead.",
    );
    expect(stillStartingWords(withdrawn)).toBe(
      "vmbot is still starting the pipeline of *web-01*; withdraw it again in a moment.",
    );
    expect(withdrawProblemWords("GitLab refused to cancel its pipeline.")).toBe(
      "The request is withdrawn, but GitLab refused to cancel its pipeline.",
    );
  });
});
