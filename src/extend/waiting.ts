import type { Access } from "../access.js";
import { waitingApprovals } from "../policy/approval-step.js";
import type { AsyncStore } from "../store/async.js";
import type { RequestRecord } from "../store/store.js";

/**
 * An extension request, once its message is in the channel, waits for approval: who may approve
 * it (the rule's groups) and the tally it shows are recorded with the move, as a destroy's are
 * when its job waits. Run right after the request is posted, and by the tracker's pass for one a
 * crash left posted but not yet waiting.
 */

export interface ExtensionWaitingDeps {
  access: Pick<Access, "policy" | "groupsOf">;
  store: AsyncStore;
}

/** The request waiting for approval, or undefined when it had moved already. */
export async function awaitExtensionApproval(
  deps: ExtensionWaitingDeps,
  request: RequestRecord,
  now: Date,
): Promise<RequestRecord | undefined> {
  if (request.kind !== "extend" || request.status !== "queued" || request.messageTs === null) {
    return undefined;
  }
  const { approvers, approvals } = await waitingApprovals(deps, request, now);
  const moved = await deps.store.transition(request.id, ["queued"], "awaiting_approval", {
    approvals: approvals ?? { tally: "", by: [], notes: [], approvers },
  });
  if (moved) {
    await deps.store.audit({ requestId: request.id, actor: "vmbot", action: "awaiting_approval" });
  }
  return moved;
}

/** The tracker's pass: extension requests posted but not yet waiting (a crash in between). */
export async function awaitPostedExtensions(
  deps: ExtensionWaitingDeps,
  now: Date,
): Promise<RequestRecord[]> {
  const posted = (await deps.store.listByStatus(["queued"])).filter(
    (request) => request.kind === "extend" && request.messageTs !== null,
  );
  const moved: RequestRecord[] = [];
  for (const request of posted) {
    const waiting = await awaitExtensionApproval(deps, request, now);
    if (waiting) moved.push(waiting);
  }
  return moved;
}
