/**
 * Writes that race over one VM, on two replicas at once: of a lease's end and its owner's
 * extension exactly one happens, of two destroys asked for at once one request is made, and of two
 * create requests for one name or one address one is made, whichever replica gets there first.
 * Each takes the VM's row (a create request, the advisory lock every create request takes) before
 * its check; without that, both checks pass on what the other has not committed yet, and a VM its
 * owner was told they keep is destroyed, or destroyed twice, or two VMs get one address.
 */
import { afterEach, expect, it } from "vitest";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/store.js";
import type { NewRequest } from "../../../src/store/store.js";
import { SAMPLE_SPEC } from "../../support/requests.js";
import { holdGuard } from "../../../src/vm/conflicts.js";
import { parsePolicy } from "../../../src/policy/schema.js";
import { quotaGuardOf } from "../../../src/policy/usage.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";

const ENDED = "2026-12-02T09:00:00.000Z";
const LATER = "2026-12-09T10:00:00.000Z";

/** A destroy request for the VM `name`, under the submission `key`. */
const destroyOf = (name: string, key: string): NewRequest => ({
  kind: "destroy",
  requester: "U0REQ",
  spec: { ...SAMPLE_SPEC, name },
  notes: [],
  channel: "C0CHAN",
  submissionKey: key,
});

/** Live VMs of these names, their leases ended. */
async function recordVms(store: PostgresStore, names: readonly string[]) {
  for (const name of names) {
    await store.inventory.record({
      name,
      requestId: `vm-${name}`,
      owner: "U0REQ",
      spec: { ...SAMPLE_SPEC, name },
      stateName: `vm-${name}`,
      address: null,
      pipelineId: null,
      approvedBy: null,
      leaseUntil: ENDED,
    });
  }
}

describeWithPostgres("creates, destroys and extensions raced on PostgreSQL", () => {
  const database = useDatabase();
  const opened: PostgresStore[] = [];
  const replica = async (name: string) => {
    const store = await openPostgresStore(database.url(), { replica: name });
    opened.push(store);
    return store;
  };
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  it("either opens the destroy or moves the lease, never both, for 40 VMs raced at once", async () => {
    const [ending, extending] = [await replica("lease-a"), await replica("lease-b")];
    const names = Array.from({ length: 40 }, (_, i) => `race-${String(i).padStart(2, "0")}`);
    await recordVms(ending, names);
    const outcomes = await Promise.all(
      names.map(async (name) => {
        const [request, extension] = await Promise.all([
          ending.createDestroyRequest(destroyOf(name, `lease:${name}:${ENDED}`), {
            name,
            leaseUntil: ENDED,
          }),
          extending.inventory.extendLease(name, LATER),
        ]);
        const lease = (await ending.inventory.get(name))?.leaseUntil;
        return { name, opened: request?.created === true, extension, lease };
      }),
    );
    for (const outcome of outcomes) {
      // One of the two, and the lease says which.
      expect(outcome, outcome.name).toSatisfy(
        (o: typeof outcome) =>
          (o.opened && o.extension === "destroying" && o.lease === ENDED) ||
          (!o.opened && o.extension === "extended" && o.lease === LATER),
      );
    }
    const destroys = await ending.listByStatus(["queued"]);
    expect(destroys).toHaveLength(outcomes.filter((o) => o.opened).length);
  });

  it("makes one destroy request of two asked at once on two replicas (a confirmation and a lease's end, say), for 40 VMs", async () => {
    const [one, two] = [await replica("destroy-a"), await replica("destroy-b")];
    const names = Array.from({ length: 40 }, (_, i) => `both-${String(i).padStart(2, "0")}`);
    await recordVms(one, names);
    const made = await Promise.all(
      names.map(async (name) => {
        const [first, second] = await Promise.all([
          one.createDestroyRequest(destroyOf(name, `destroy:${name}:a`), { name }),
          two.createDestroyRequest(destroyOf(name, `lease:${name}:${ENDED}`), {
            name,
            leaseUntil: ENDED,
          }),
        ]);
        return [first, second].filter((stored) => stored?.created === true).length;
      }),
    );
    expect(made).toEqual(names.map(() => 1));
    const queued = (await one.listByStatus(["queued"])).filter((r) => names.includes(r.spec.name));
    expect(queued).toHaveLength(names.length);
  });

  it("makes one create request of two asked at once on two replicas for one name, or for one address, 40 times", async () => {
    const [one, two] = [await replica("create-a"), await replica("create-b")];
    const ask = (name: string, ip: string, key: string): NewRequest => ({
      requester: "U0REQ",
      spec: { ...SAMPLE_SPEC, name, ip },
      notes: [],
      channel: "C0CHAN",
      submissionKey: key,
    });
    const made = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        // Even: one name, two addresses; odd: two names, one address.
        const name = `same-${i}`;
        const [a, b] =
          i % 2 === 0
            ? [ask(name, `10.1.${i}.1/24`, `view:${i}a`), ask(name, `10.1.${i}.2/24`, `view:${i}b`)]
            : [
                ask(name, `10.1.${i}.1/24`, `view:${i}a`),
                ask(`${name}b`, `10.1.${i}.1/24`, `view:${i}b`),
              ];
        const [first, second] = await Promise.all([
          one.createVmRequest(a, holdGuard(a.spec)),
          two.createVmRequest(b, holdGuard(b.spec)),
        ]);
        return [first, second].filter((stored) => stored?.created === true).length;
      }),
    );
    expect(made).toEqual(made.map(() => 1));
    const queued = await one.listByStatus(["queued"]);
    expect(queued.filter((r) => r.spec.name.startsWith("same-"))).toHaveLength(40);
  });

  it("makes one create request of two asked at once that only one fits in a quota, by one person or by two of one group, 40 times", async () => {
    const [one, two] = [await replica("quota-a"), await replica("quota-b")];
    const parsed = parsePolicy(`
version: 1
groups:
  ops: [U0OPS1, U0OPS2]
roles: { requesters: [everyone], approvers: [ops], admins: [ops] }
quotas:
  - { group: everyone, per: person, max: { vms: 1 } }
  - { group: ops, per: group, max: { vms: 1 } }
`);
    if (!parsed.ok) throw new Error(parsed.problems.join("; "));
    const policy = { ...parsed.policy, source: "test" };
    const members = new Map([["ops", new Set(["U0OPS1", "U0OPS2"])]]);
    const groupsOf = (person: string) => (members.get("ops")?.has(person) ? ["ops"] : []);
    const ask = async (store: PostgresStore, requester: string, name: string, ip: string) => {
      const spec = { ...SAMPLE_SPEC, name, ip };
      const guard = quotaGuardOf(policy, requester, groupsOf(requester), spec, members);
      const request = { requester, spec, notes: [], channel: "C0CHAN", submissionKey: name };
      return (await store.createVmRequest(request, { ...holdGuard(spec), quota: guard }))?.created;
    };
    // 20 people, each sending two forms at once; then the ops group's two members, 20 times.
    const mine = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const made = await Promise.all([
          ask(one, `U0DEV${i}`, `dev-${i}-a`, `10.2.${i}.1/24`),
          ask(two, `U0DEV${i}`, `dev-${i}-b`, `10.2.${i}.2/24`),
        ]);
        return made.filter(Boolean).length;
      }),
    );
    expect(mine).toEqual(mine.map(() => 1));
    const shared = [];
    for (let round = 0; round < 20; round += 1) {
      const made = await Promise.all([
        ask(one, "U0OPS1", `ops-${round}-a`, `10.3.${round}.1/24`),
        ask(two, "U0OPS2", `ops-${round}-b`, `10.3.${round}.2/24`),
      ]);
      shared.push(made.filter(Boolean).length);
      // The group's request is withdrawn, which frees the group's room for the next round.
      for (const request of await one.listByStatus(["queued"])) {
        if (request.spec.name.startsWith("ops-"))
          await one.transition(request.id, ["queued"], "withdrawn");
      }
    }
    expect(shared).toEqual(shared.map(() => 1));
  });

  it("either reruns a VM's configure job or opens its destroy, never both, on two replicas, for 40 VMs", async () => {
    const [retrying, destroying] = [await replica("retry-a"), await replica("retry-b")];
    const names = Array.from({ length: 40 }, (_, i) => `conf-${String(i).padStart(2, "0")}`);
    const made = new Map<string, string>();
    for (const name of names) {
      const request = {
        requester: "U0REQ",
        spec: { ...SAMPLE_SPEC, name, ip: `10.4.${names.indexOf(name)}.1/24` },
        notes: [],
        channel: "C0CHAN",
        submissionKey: `view:${name}`,
      };
      const { request: stored } = await retrying.createRequest(request);
      // Its VM was made; its configure job failed.
      for (const to of [
        "planning",
        "awaiting_approval",
        "applying",
        "configuring",
        "failed",
      ] as const) {
        const from = (await retrying.getRequest(stored.id))?.status ?? "queued";
        await retrying.transition(stored.id, [from], to);
      }
      await retrying.inventory.record({
        name,
        requestId: stored.id,
        owner: "U0REQ",
        spec: request.spec,
        stateName: `vm-${name}`,
        address: null,
        pipelineId: null,
        approvedBy: null,
        leaseUntil: null,
      });
      made.set(name, stored.id);
    }
    const outcomes = await Promise.all(
      names.map(async (name) => {
        const id = made.get(name) ?? "";
        const [retried, destroy] = await Promise.all([
          retrying.transitionOnLiveVm(name, id, ["failed"], "configuring"),
          destroying.createDestroyRequest(destroyOf(name, `destroy:${name}`), { name }),
        ]);
        return { name, retried: typeof retried === "object", opened: destroy?.created === true };
      }),
    );
    for (const outcome of outcomes) {
      expect(outcome, outcome.name).toSatisfy((o: typeof outcome) => o.retried !== o.opened);
    }
  });
});
