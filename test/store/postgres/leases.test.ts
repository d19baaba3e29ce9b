/**
 * A lease's end and its owner's extension on two replicas at once: of the destroy request the end
 * opens and the extension's move of the lease, exactly one happens for each VM, whichever replica
 * gets there first. Each takes the VM's row before its check; without that, both checks pass on
 * what the other has not committed yet, and a VM its owner was told they keep is destroyed.
 */
import { afterEach, expect, it } from "vitest";
import { openPostgresStore, type PostgresStore } from "../../../src/store/postgres/store.js";
import { SAMPLE_SPEC } from "../../support/requests.js";
import { describeWithPostgres, useDatabase } from "../../support/postgres.js";

const ENDED = "2026-12-02T09:00:00.000Z";
const LATER = "2026-12-09T10:00:00.000Z";

describeWithPostgres("a lease's end against its extension on PostgreSQL", () => {
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
    for (const name of names) {
      await ending.inventory.record({
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
    const outcomes = await Promise.all(
      names.map(async (name) => {
        const [request, extension] = await Promise.all([
          ending.createLeaseEndRequest(
            {
              kind: "destroy",
              requester: "U0REQ",
              spec: { ...SAMPLE_SPEC, name },
              notes: [],
              channel: "C0CHAN",
              submissionKey: `lease:${name}:${ENDED}`,
            },
            { name, until: ENDED },
          ),
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
});
