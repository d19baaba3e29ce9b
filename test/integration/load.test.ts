import { describe, expect, it } from "vitest";
import { harnessPerTest } from "../support/harness.js";
import { runLoad } from "../support/load.js";

const start = harnessPerTest();
const COUNT = 50;

describe("a burst of Slack traffic (counts only; `npm run bench` measures 200)", () => {
  it(`acknowledges ${COUNT} concurrent /vm create commands and ${COUNT} concurrent submissions, and loses none`, async () => {
    const h = await start();
    const result = await runLoad(
      {
        slack: h.slack,
        gitlab: h.gitlab,
        signer: h.signer,
        requestsWithPipeline: async () =>
          (await h.bot.store.listActive()).filter((request) => request.pipelineId !== null).length,
      },
      COUNT,
    );
    expect(result).toMatchObject({
      commands: COUNT,
      commandsAcked: COUNT,
      formsOpened: COUNT,
      formsRefused: [],
      submissions: COUNT,
      submissionsAcked: COUNT,
      pipelines: COUNT,
      requestsWithPipeline: COUNT,
    });
    // One request per form, each with its own pipeline.
    const pipelineIds = new Set(
      (await h.bot.store.listActive()).map((request) => request.pipelineId),
    );
    expect(pipelineIds.size).toBe(COUNT);
  }, 120_000);
});
