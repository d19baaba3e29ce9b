import type { AsyncApprovals, AsyncInventory, AsyncStore } from "../store/async.js";
import type { RequestRecord, RequestStatus } from "../store/store.js";

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

function watchInventory(
  inventory: AsyncInventory,
  tell: (users: string[]) => void,
): AsyncInventory {
  const ownerOf = async (name: string) => {
    const owner = (await inventory.get(name))?.owner;
    return owner === undefined ? [] : [owner];
  };
  return {
    ...inventory,
    async record(vm) {
      const before = await ownerOf(vm.name);
      const recorded = await inventory.record(vm);
      tell([...before, recorded.owner]);
      return recorded;
    },
    async remove(name, askedAt) {
      const before = await ownerOf(name);
      await inventory.remove(name, askedAt);
      tell(before);
    },
    async setLease(name, until) {
      await inventory.setLease(name, until);
      tell(await ownerOf(name));
    },
    async extendLease(name, until) {
      const extended = await inventory.extendLease(name, until);
      if (extended === "extended") tell(await ownerOf(name));
      return extended;
    },
    async mark(name, status, note) {
      await inventory.mark(name, status, note);
      tell(await ownerOf(name));
    },
    async note(name, note) {
      await inventory.note(name, note);
      tell(await ownerOf(name));
    },
  };
}

function watchApprovals(
  approvals: AsyncApprovals,
  store: AsyncStore,
  sink: HomeChangeSink,
): AsyncApprovals {
  const tell = async (requestId: string) => {
    const requester = (await store.getRequest(requestId))?.requester;
    sink({ users: requester === undefined ? [] : [requester], approvers: true });
  };
  return {
    ...approvals,
    async add(approval) {
      const added = await approvals.add(approval);
      if (added) await tell(approval.requestId);
      return added;
    },
    async remove(requestId, planJobId, users) {
      await approvals.remove(requestId, planJobId, users);
      await tell(requestId);
    },
  };
}

/**
 * The store, telling `sink` after each write that changes what someone's Home shows. The sink
 * only notes who is concerned: nothing is published on the caller's path.
 */
export function watchStore(store: AsyncStore, sink: HomeChangeSink): AsyncStore {
  const told = (request: RequestRecord | undefined, approvers: boolean) => {
    if (request !== undefined) sink({ users: [request.requester], approvers });
  };
  return {
    ...store,
    inventory: watchInventory(store.inventory, (users) => {
      if (users.length > 0) sink({ users, approvers: false });
    }),
    approvals: watchApprovals(store.approvals, store, sink),
    async createRequest(request, audit) {
      const stored = await store.createRequest(request, audit);
      if (stored.created) told(stored.request, false);
      return stored;
    },
    async createVmRequest(request, guard, audit) {
      const stored = await store.createVmRequest(request, guard, audit);
      if (stored?.created === true) told(stored.request, false);
      return stored;
    },
    async createDestroyRequest(request, guard, audit) {
      const stored = await store.createDestroyRequest(request, guard, audit);
      if (stored?.created === true) told(stored.request, false);
      return stored;
    },
    async updateRequest(id, patch) {
      const updated = await store.updateRequest(id, patch);
      told(updated, waiting(updated.status));
      return updated;
    },
    async transitionOnLiveVm(vm, id, from, to, patch, intent, audit) {
      const moved = await store.transitionOnLiveVm(vm, id, from, to, patch, intent, audit);
      if (typeof moved === "object") told(moved, waiting(to) || from.some(waiting));
      return moved;
    },
    async transition(id, from, to, patch, intent, audit) {
      const moved = await store.transition(id, from, to, patch, intent, audit);
      told(moved, waiting(to) || from.some(waiting));
      return moved;
    },
  };
}
