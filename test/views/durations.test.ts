import { describe, expect, it } from "vitest";
import { durationsLine, requestMessage } from "../../src/views/request-message.js";
import { sampleRequest } from "../support/requests.js";

const created = "2026-12-02T10:00:00.000Z";

describe("a finished request's durations", () => {
  it("shows the total and each stage: planning, waiting for approval, applying, configuring", () => {
    const ready = sampleRequest({
      status: "ready",
      createdAt: created,
      stageAt: "2026-12-02T10:20:30.000Z",
      stageTimes: {
        planning: "2026-12-02T10:00:05.000Z",
        awaiting_approval: "2026-12-02T10:01:42.000Z",
        applying: "2026-12-02T10:15:00.000Z",
        configuring: "2026-12-02T10:17:10.000Z",
        ready: "2026-12-02T10:20:30.000Z",
      },
    });
    expect(durationsLine(ready)).toBe(
      ":hourglass: 20:30 in all: planning 1:42 · waiting for approval 13:18 · applying 2:10 · configuring 3:20.",
    );
    expect(JSON.stringify(requestMessage(ready).blocks)).toContain("20:30 in all: planning 1:42");
  });

  it("stops at the stage a failed request ended in", () => {
    const failed = sampleRequest({
      status: "failed",
      createdAt: created,
      stageAt: "2026-12-02T10:03:00.000Z",
      stageTimes: { planning: "2026-12-02T10:00:05.000Z", failed: "2026-12-02T10:03:00.000Z" },
    });
    expect(durationsLine(failed)).toBe(":hourglass: 3:00 in all: planning 3:00.");
  });

  it("shows nothing while the request is under way", () => {
    expect(durationsLine(sampleRequest({ status: "applying" }))).toBeUndefined();
  });
});
