import { describe, expect, it } from "vitest";
import { duration, statusLine } from "../../src/views/request-message.js";
import { sampleRequest } from "../support/requests.js";

const PIPELINE = { pipelineId: 42, pipelineUrl: "https://gitlab.example.com/p/-/pipelines/42" };
const LINK = "<https://gitlab.example.com/p/-/pipelines/42|pipeline #42>";
const STAGE = "2026-12-02T10:03:00.000Z";
const SINCE = `since <!date^${Date.parse(STAGE) / 1000}^{time}|${STAGE}>`;

describe("status lines: a verb and the stage's time", () => {
  const at = (status: Parameters<typeof sampleRequest>[0]) =>
    statusLine(sampleRequest({ ...PIPELINE, stageAt: STAGE, ...status }));

  it("says what is happening now, since when", () => {
    expect(at({ status: "queued" })).toBe(
      `Queued… GitLab ${LINK} started: waiting for Terraform to plan.`,
    );
    expect(at({ status: "planning" })).toBe(
      `Planning… Terraform is planning in GitLab ${LINK}, ${SINCE}.`,
    );
    expect(at({ status: "awaiting_approval" })).toBe(`Awaiting approval… ${SINCE}.\nSee ${LINK}.`);
    expect(at({ status: "applying" })).toBe(
      `Applying… Terraform is applying the plan (${LINK}), ${SINCE}.`,
    );
    expect(at({ status: "configuring", address: "192.168.1.50" })).toBe(
      `Configuring… Ansible is configuring the VM at 192.168.1.50, ${SINCE}.`,
    );
  });

  it("says how long a ready VM took from the request", () => {
    expect(at({ status: "ready", address: "192.168.1.50" })).toBe(
      "Ready: *web-01* at `192.168.1.50`, 3:00 after it was requested.",
    );
  });

  it("says who rejected, and that nothing was built", () => {
    expect(
      at({
        status: "rejected",
        decision: { kind: "rejected", by: "U0APPROVER", at: STAGE },
      }),
    ).toBe(`Rejected by <@U0APPROVER>: nothing was built and GitLab ${LINK} was canceled.`);
  });

  it("reads durations as a clock does", () => {
    expect(duration(42_000)).toBe("0:42");
    expect(duration(725_000)).toBe("12:05");
    expect(duration(3_729_000)).toBe("1:02:09");
  });
});
