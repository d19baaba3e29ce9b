import { describe, expect, it } from "vitest";
import { requesterToldWords } from "../../src/views/notify.js";
import { rejectModal } from "../../src/views/reject.js";
import { requestMessage, statusLine } from "../../src/views/request-message.js";
import { sampleRequest } from "../support/requests.js";

const rejected = sampleRequest({
  status: "rejected",
  requester: "U0REQ",
  pipelineId: 42,
  pipelineUrl: "https://gitlab.example.com/p/42",
  decision: {
    kind: "rejected",
    by: "U0APPROVER",
    at: "2026-12-02T10:05:00.000Z",
    reason: "pve1 is full:\nuse pve2",
  },
});

describe("Reject's reason", () => {
  it("asks why in a form, optionally, naming the VM", () => {
    const modal = rejectModal(rejected);
    expect(modal.callback_id).toBe("plan_reject_modal");
    expect(JSON.parse(modal.private_metadata ?? "")).toEqual({ requestId: rejected.id });
    const body = JSON.stringify(modal.blocks);
    expect(body).toContain(
      "Reject the plan for web-01? Its pipeline is canceled in GitLab and nothing is built.",
    );
    expect(body).toContain('"optional":true');
    expect(body).toContain('"text":"Why (optional)"');
    expect(body).toContain('"max_length":500');
  });

  it("shows who rejected and why on the message, and tells the requester why", () => {
    expect(statusLine(rejected)).toBe(
      "Rejected by <@U0APPROVER>: nothing was built and GitLab <https://gitlab.example.com/p/42|pipeline #42> was canceled.\nReason: “pve1 is full: use pve2”",
    );
    expect(JSON.stringify(requestMessage(rejected).blocks)).toContain(
      "Reason: “pve1 is full: use pve2”",
    );
    expect(requesterToldWords(rejected)).toBe(
      ":no_entry_sign: <@U0REQ> the plan for *web-01* was rejected by <@U0APPROVER>; nothing was built.\nReason: “pve1 is full: use pve2”",
    );
  });

  it("says nothing of a reason when none was given", () => {
    const plain = sampleRequest({
      ...rejected,
      decision: { kind: "rejected", by: "U0APPROVER", at: "2026-12-02T10:05:00.000Z" },
    });
    expect(statusLine(plain)).not.toContain("Reason");
  });
});
