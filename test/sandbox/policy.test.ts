/**
 * The sandbox runs with the example request policy (examples/policy/policy.yaml), whose groups
 * name the sandbox's people: what a person trying it in the browser sees, through the page
 * server's own endpoints.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CREATE_FIELDS, CREATE_MODAL, PLAN_ACTIONS_BLOCK, PLAN_APPROVE } from "../../src/ids.js";
import { examplePolicyPath, PEOPLE } from "../../sandbox/platform.js";
import { startSandbox, type RunningSandbox } from "../../sandbox/sandbox.js";
import type { FakeMessage } from "../../sandbox/simulators/slack/index.js";
import { captureLogs } from "../support/logs.js";
import { waitFor } from "../support/wait.js";

let dir: string | undefined;
let sandbox: RunningSandbox | undefined;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function start(): Promise<RunningSandbox> {
  dir = mkdtempSync(join(tmpdir(), "vmbot-sandbox-policy-"));
  sandbox = await startSandbox({
    port: 0,
    dbPath: join(dir, "sandbox.sqlite"),
    logLevel: "debug",
    paceMs: 100,
    logDestination: captureLogs().stream,
  });
  return sandbox;
}

type Person = keyof typeof PEOPLE;

async function post(s: RunningSandbox, path: string, body: unknown) {
  const response = await fetch(`http://127.0.0.1:${String(s.port)}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { status: number; errors?: Record<string, string> };
}

/** `/vm create <vm>` as `as` on the page, then the form sent with `values`: the bot's answer. */
async function ask(s: RunningSandbox, vm: string, values: Record<string, string>, as: Person) {
  const views = s.platform.slack.views.length;
  expect(await post(s, "/sandbox/command", { as, text: `/vm create ${vm}` })).toMatchObject({
    status: 200,
  });
  const view = await waitFor(
    () => s.platform.slack.views.slice(views).find((v) => v.callback_id === CREATE_MODAL),
    "the create form",
  );
  return post(s, "/sandbox/submit", { as, view: view.id, values });
}

const blocksOf = (message: FakeMessage | undefined) => JSON.stringify(message?.blocks ?? []);

/** The request message of `vm` once it shows `words`. */
const showing = (s: RunningSandbox, vm: string, words: string) =>
  waitFor(
    () =>
      s.platform.slack.messages.find(
        (m) =>
          m.thread_ts === undefined &&
          m.text.startsWith(`VM ${vm} `) &&
          blocksOf(m).includes(words),
      ),
    `the message of ${vm} showing "${words}"`,
    { timeoutMs: 30_000 },
  );

const click = (s: RunningSandbox, as: Person, ts: string) =>
  post(s, "/sandbox/action", { as, action: PLAN_APPROVE, block: PLAN_ACTIONS_BLOCK, ts });

describe("the sandbox's request policy", () => {
  it("is the example policy, so a big VM of Robin's needs Alex (platform) and Sam (security), and plays once", async () => {
    const s = await start();
    expect(await s.bot.health()).not.toHaveProperty("policy");
    expect(examplePolicyPath()).toMatch(/examples[/\\]policy[/\\]policy\.yaml$/);
    const answer = await ask(
      s,
      "big-01",
      { [CREATE_FIELDS.ip]: "192.168.1.81/24", [CREATE_FIELDS.cores]: "20" },
      "requester",
    );
    expect(answer.errors).toBeUndefined();
    const planned = await showing(
      s,
      "big-01",
      "0 of 2 approvals: 0 of 1 from platform, 0 of 1 from security",
    );
    // Alex and Sam are called in: the rule's groups, not a list of approvers.
    expect(blocksOf(planned)).toContain(
      `by <@${PEOPLE.approver.id}> or <@${PEOPLE.admin.id}>; after that it expires`,
    );
    await click(s, "approver", planned.ts);
    await showing(s, "big-01", `approved so far by <@${PEOPLE.approver.id}>`);
    const request = (await s.bot.store.listActive()).find((r) => r.spec.name === "big-01")!;
    expect(request.status).toBe("awaiting_approval");

    await click(s, "admin", planned.ts);
    await waitFor(
      async () =>
        (await s.bot.store.listAudit(request.id)).some((e) => e.action === "apply_started")
          ? true
          : undefined,
      "the apply started",
      { timeoutMs: 30_000 },
    );
    expect(s.platform.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(1);
    const approved = (await s.bot.store.listAudit(request.id)).filter(
      (e) => e.action === "approved",
    );
    expect(approved).toEqual([
      expect.objectContaining({
        actor: PEOPLE.admin.id,
        detail: expect.objectContaining({ rule: "big VMs" }) as unknown,
      }),
    ]);
  }, 60_000);

  it("refuses Robin's request over the quota and for a template devs may not use, on the field, and starts nothing", async () => {
    const s = await start();
    const over = await ask(
      s,
      "huge-01",
      { [CREATE_FIELDS.ip]: "192.168.1.82/24", [CREATE_FIELDS.cores]: "26" },
      "requester",
    );
    expect(over.errors).toEqual({
      [CREATE_FIELDS.cores]: expect.stringMatching(
        /^Over quota: you may hold at most 24 cores in all, and you hold 0 VMs .*this VM would make it 26 cores\. Destroy a VM you no longer need, or ask someone in security\.$/,
      ) as string,
    });
    const debian = await ask(
      s,
      "deb-01",
      { [CREATE_FIELDS.ip]: "192.168.1.83/24", [CREATE_FIELDS.template]: "9001" },
      "requester",
    );
    expect(debian.errors).toEqual({
      [CREATE_FIELDS.template]:
        "You may not ask for the debian-12 template: you may use ubuntu-24.04. Ask someone in security if you need it.",
    });
    // Alex (platform) may: the form goes through, which also shows the bot had its chance above.
    const alex = await ask(
      s,
      "deb-02",
      { [CREATE_FIELDS.ip]: "192.168.1.84/24", [CREATE_FIELDS.template]: "9001" },
      "approver",
    );
    expect(alex.errors).toBeUndefined();
    await waitFor(
      async () => ((await s.bot.store.listActive()).length === 1 ? true : undefined),
      "Alex's request",
    );
    expect((await s.bot.store.listActive()).map((r) => [r.requester, r.spec.name])).toEqual([
      [PEOPLE.approver.id, "deb-02"],
    ]);
    expect(
      (await s.bot.store.listAudit())
        .filter((e) => e.action === "policy_denied")
        .map((e) => e.detail.rule),
    ).toEqual(["quotas.0", "requests.0"]);
  }, 60_000);
});
