import { describe, expect, it } from "vitest";
import {
  NOT_REQUESTER_FIELD,
  notAdminWords,
  notApproverWords,
  notRequesterWords,
  whoMay,
} from "../../src/views/refusals.js";

describe("refusals name who may, never a setting", () => {
  it("names user groups by handle and people by mention", () => {
    expect(whoMay(["S0PLATFORM", "U0ALICE"])).toBe("<!subteam^S0PLATFORM> or <@U0ALICE>");
    expect(whoMay(["U0ALICE"])).toBe("<@U0ALICE>");
  });

  it("counts the rest beyond five names", () => {
    const ids = ["U01", "U02", "U03", "U04", "U05", "U06", "U07"];
    expect(whoMay(ids)).toBe("<@U01>, <@U02>, <@U03>, <@U04>, <@U05> or 2 more");
  });

  it("says nobody yet for an empty list, and drops what is no Slack ID", () => {
    expect(whoMay([])).toBe("nobody yet");
    expect(whoMay(["<!channel>", "not-an-id"])).toBe("nobody yet");
  });

  it("words each refusal with the people who may", () => {
    const texts = [
      notApproverWords("reject", "web-01", ["S0PLATFORM"]),
      notRequesterWords(["S0TEAM"]),
      notAdminWords(["U0ADMIN"]),
    ];
    expect(texts).toEqual([
      "Only the approvers (<!subteam^S0PLATFORM>) may reject plans. Ask one of them to look at web-01.",
      "Only the people who may ask for VMs (<!subteam^S0TEAM>) can use /vm create, and you are not among them. Ask the team that runs vmbot to add you.",
      "Only vmbot's admins (<@U0ADMIN>) may unlock Terraform state. Ask one of them if the state is stuck.",
    ]);
    for (const text of [...texts, NOT_REQUESTER_FIELD]) {
      expect(text).not.toMatch(/APPROVERS|REQUESTERS|ADMINS/);
    }
  });
});
