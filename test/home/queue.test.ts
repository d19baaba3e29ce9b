import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { approvalQueue } from "../../src/home/queue.js";
import { EXTENSION_KEY } from "../../src/policy/approval-step.js";
import { parsePolicy, type Policy } from "../../src/policy/schema.js";
import { asAsyncStore } from "../../src/store/async.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/store.js";
import { SAMPLE_SPEC } from "../support/requests.js";

/** Who sees a waiting request in their Home's queue: the rule's groups, places still open. */

const OWNER = "U0OWNER";
const DEV = "U0DEV";
const PLATFORM = ["U0PLAT1", "U0PLAT2"];
const SEC = "U0SEC1";
const OUTSIDER = "U0OUTSIDE";

const parsed = parsePolicy(`
version: 1
groups:
  devs: [${OWNER}, ${DEV}]
  platform: [${PLATFORM.join(", ")}]
  security: [${SEC}]
roles:
  approvers: [devs, platform, security]
  admins: [platform]
approvals:
  - name: long leases
    action: extend
    require: [{ group: platform }, { group: security }]
`);
if (!parsed.ok) throw new Error(parsed.problems.join("; "));
const policy: Policy = { ...parsed.policy, source: "test" };

const groupsOf = (user: string) =>
  Promise.resolve(
    Object.entries(policy.groups)
      .filter(([, ids]) => ids.includes(user))
      .map(([name]) => name),
  );

let store: Store;
beforeEach(() => {
  store = openSqliteStore(":memory:");
});
afterEach(() => {
  store.close();
});

const NOW = new Date();
const queueOf = async (user: string) =>
  (
    await approvalQueue(
      { store: asAsyncStore(store), access: { policy: () => policy, groupsOf } },
      user,
      NOW,
    )
  )?.map((request) => request.spec.name);

/** OWNER asks for a longer lease of web-01; it waits for approval. */
function waiting() {
  const { request } = store.createRequest({
    kind: "extend",
    requester: OWNER,
    spec: { ...SAMPLE_SPEC, name: "web-01", leaseMs: 240_000 },
    notes: [],
    channel: "C0CHAN",
    submissionKey: "extend:web-01",
  });
  store.transition(request.id, ["queued"], "awaiting_approval");
  return request.id;
}

describe("the Home's approval queue", () => {
  it("lists a request to the rule's groups only, never to its requester nor to a non-approver", async () => {
    waiting();
    expect(await queueOf(PLATFORM[0]!)).toEqual(["web-01"]);
    expect(await queueOf(SEC)).toEqual(["web-01"]);
    expect(await queueOf(DEV)).toEqual([]);
    expect(await queueOf(OWNER)).toEqual([]);
    expect(await queueOf(OUTSIDER)).toBeUndefined();
  });

  it("drops it for whoever approved, and for the rest of a group whose place is filled", async () => {
    const id = waiting();
    store.approvals.add({
      requestId: id,
      planJobId: EXTENSION_KEY,
      user: PLATFORM[0]!,
      groups: ["platform"],
      at: NOW.toISOString(),
    });
    expect(await queueOf(PLATFORM[0]!)).toEqual([]);
    expect(await queueOf(PLATFORM[1]!)).toEqual([]);
    expect(await queueOf(SEC)).toEqual(["web-01"]);
  });
});
