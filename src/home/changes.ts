import type { Approvals } from "../store/approvals.js";
import type { Inventory } from "../store/inventory.js";
import type { RequestRecord, RequestStatus, Store } from "../store/store.js";

/**
 * Whose Home tab a change in the store concerns: a request's requester, a VM's owner, and the
 * approvers when a request enters or leaves their queue (or gets an approval).
 */
export interface HomeChange {
  users: readonly string[];
  approvers: boolean;
}

export type HomeChangeSink = (change: HomeChange) => void;

const waiting = (status: RequestStatus) => status === "awaiting_approval";

function watchInventory(inventory: Inventory, tell: (users: string[]) => void): Inventory {
  const ownerOf = (name: string) => {
    const owner = inventory.get(name)?.owner;
    return owner === undefined ? [] : [owner];
  };
  return {
    ...inventory,
    record(vm) {
      const before = ownerOf(vm.name);
      const recorded = inventory.record(vm);
      tell([...before, recorded.owner]);
      return recorded;
    },
    remove(name, askedAt) {
      const before = ownerOf(name);
      inventory.remove(name, askedAt);
      tell(before);
    },
    setLease(name, until) {
      inventory.setLease(name, until);
      tell(ownerOf(name));
    },
    mark(name, status, note) {
      inventory.mark(name, status, note);
      tell(ownerOf(name));
    },
    note(name, note) {
      inventory.note(name, note);
      tell(ownerOf(name));
    },
  };
}

function watchApprovals(approvals: Approvals, store: Store, sink: HomeChangeSink): Approvals {
  const tell = (requestId: string) => {
    const requester = store.getRequest(requestId)?.requester;
    sink({ users: requester === undefined ? [] : [requester], approvers: true });
  };
  return {
    ...approvals,
    add(approval) {
      const added = approvals.add(approval);
      if (added) tell(approval.requestId);
      return added;
    },
    remove(requestId, planJobId, users) {
      approvals.remove(requestId, planJobId, users);
      tell(requestId);
    },
  };
}

/**
 * The store, telling `sink` after each write that changes what someone's Home shows. The sink
 * only notes who is concerned: nothing is published on the caller's path.
 */
export function watchStore(store: Store, sink: HomeChangeSink): Store {
  const told = (request: RequestRecord | undefined, approvers: boolean) => {
    if (request !== undefined) sink({ users: [request.requester], approvers });
  };
  return {
    ...store,
    inventory: watchInventory(store.inventory, (users) => {
      if (users.length > 0) sink({ users, approvers: false });
    }),
    approvals: watchApprovals(store.approvals, store, sink),
    createRequest(request, audit) {
      const stored = store.createRequest(request, audit);
      if (stored.created) told(stored.request, false);
      return stored;
    },
    updateRequest(id, patch) {
      const updated = store.updateRequest(id, patch);
      told(updated, waiting(updated.status));
      return updated;
    },
    transition(id, from, to, patch, intent, audit) {
      const moved = store.transition(id, from, to, patch, intent, audit);
      told(moved, waiting(to) || from.some(waiting));
      return moved;
    },
  };
}
