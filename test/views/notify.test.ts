import { describe, expect, it } from "vitest";
import {
  approvalWindowWords,
  approverMentions,
  approversCalledWords,
  requesterToldWords,
} from "../../src/views/notify.js";
import { sampleRequest } from "../support/requests.js";

const AT = "2026-12-03T10:05:00.000Z";
const SECONDS = Date.parse(AT) / 1000;

describe("the words that call people in", () => {
  it("mentions user groups as groups and people as people, leaving out the requester", () => {
    expect(approverMentions(["S0OPS", "U0ALEX", "U0REQ"], "U0REQ")).toEqual([
      "<!subteam^S0OPS>",
      "<@U0ALEX>",
    ]);
  });

  it("calls the approvers in with the request, who asked, and the deadline", () => {
    const request = sampleRequest({ status: "awaiting_approval" });
    expect(approversCalledWords(request, ["<!subteam^S0OPS>"], AT)).toBe(
      `:eyes: <!subteam^S0OPS> the plan for *web-01*, asked by <@U0REQ>, awaits your approval. Approve or reject it before <!date^${SECONDS}^{date_short_pretty} {time}|${AT}>.`,
    );
  });

  it("says under the plan until when and by whom it can be approved", () => {
    expect(approvalWindowWords(["<@U0A>", "<@U0B>", "<!subteam^S0OPS>"], AT)).toBe(
      `:hourglass: Can be approved until <!date^${SECONDS}^{date_short_pretty} {time}|${AT}> by <@U0A>, <@U0B> or <!subteam^S0OPS>; after that it expires and cannot be applied.`,
    );
  });

  it("tells the requester how the request ended, and nothing while it runs", () => {
    const by = { kind: "rejected" as const, by: "U0APPROVER", at: AT };
    expect(requesterToldWords(sampleRequest({ status: "ready", address: "10.0.0.5" }))).toBe(
      ":white_check_mark: <@U0REQ> *web-01* is ready at `10.0.0.5`.",
    );
    expect(requesterToldWords(sampleRequest({ status: "failed" }))).toBe(
      ":x: <@U0REQ> *web-01* failed: the request message above says why.",
    );
    expect(requesterToldWords(sampleRequest({ status: "rejected", decision: by }))).toBe(
      ":no_entry_sign: <@U0REQ> the plan for *web-01* was rejected by <@U0APPROVER>; nothing was built.",
    );
    expect(requesterToldWords(sampleRequest({ status: "expired" }))).toContain(
      "expired before anyone approved it",
    );
    expect(requesterToldWords(sampleRequest({ status: "applying" }))).toBeUndefined();
  });
});
