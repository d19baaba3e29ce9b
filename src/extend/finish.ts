import { z } from "zod";
import type { Effects } from "../effects.js";
import type { Logger } from "../logger.js";
import type { AsyncStore } from "../store/async.js";
import type { RequestRecord } from "../store/store.js";
import { extensionDestroyingWords, extensionEnd, extensionVmGoneWords } from "../views/extend.js";

/**
 * An approved extension moves the lease once. The approval that meets the rule claims the request
 * (awaiting approval → applying) and records, in the same write, the intent: the lease's end
 * before and after, and who approved. The lease is then set to that end (setting it again after
 * a crash changes nothing) and the request ends ready, audited `lease_extended` in that one
 * conditional move: a second finisher (the tracker's pass, another click) finds nothing to do.
 */

export const EXTEND_STEP = "extend_lease";

/** The lease moved, or why it was not: the VM gone, or a destroy of it in flight. */
const LeaseSetSchema = z.union([
  z.object({ leaseUntil: z.string() }),
  z.object({ refused: z.enum(["gone", "destroying"]) }),
]);

export interface FinishDeps {
  store: AsyncStore;
  effects: Effects;
  log: Logger;
}

const IntentSchema = z.object({
  name: z.string(),
  from: z.string().nullable(),
  to: z.string(),
  rule: z.string(),
  approvers: z.array(z.string()),
});

/**
 * Claims an extension whose rule is met: one conditional move, with the intent. Undefined when
 * another click (or Reject, or the expiry) got there first.
 */
export async function claimExtension(
  store: AsyncStore,
  request: RequestRecord,
  decision: { kind: "approved"; by: string; at: string },
  approval: { rule: string; tally: string; by: readonly string[] },
): Promise<RequestRecord | undefined> {
  const to = extensionEnd({ ...request, decision });
  if (to === undefined) return undefined;
  const vm = await store.inventory.get(request.spec.name);
  const intent = {
    name: request.spec.name,
    from: vm?.leaseUntil ?? null,
    to,
    rule: approval.rule,
    approvers: [...new Set([...approval.by, decision.by])],
  };
  return await store.transition(
    request.id,
    ["awaiting_approval"],
    "applying",
    { decision },
    { step: EXTEND_STEP, detail: intent },
    {
      actor: decision.by,
      action: "approved",
      detail: { rule: approval.rule, tally: approval.tally },
    },
  );
}

/**
 * Moves the lease of a claimed extension (through the effects journal: a crash point on each
 * side, and a write that changes nothing when made again) and ends the request; the request as
 * it ended, or undefined when it had already ended (another finisher). Safe to run again after
 * a crash.
 */
export async function finishExtension(
  deps: FinishDeps,
  request: RequestRecord,
): Promise<RequestRecord | undefined> {
  const { store } = deps;
  if (request.kind !== "extend" || request.status !== "applying") return undefined;
  const recorded = IntentSchema.safeParse((await store.effect(request.id, EXTEND_STEP))?.intent);
  const vm = await store.inventory.get(request.spec.name);
  if (!recorded.success || vm?.status !== "live") {
    await store.complete(request.id, EXTEND_STEP, { abandoned: "no VM" });
    return await store.transition(
      request.id,
      ["applying"],
      "failed",
      { error: extensionVmGoneWords(request.spec.name) },
      undefined,
      { actor: "vmbot", action: "extension_failed", detail: { name: request.spec.name } },
    );
  }
  const intent = recorded.data;
  const moved = await deps.effects.once(request.id, EXTEND_STEP, {
    result: LeaseSetSchema,
    fresh: true,
    act: async () => {
      // The same end again after a crash: the lease moves once, whatever runs this twice.
      if ((await store.inventory.get(vm.name))?.leaseUntil === intent.to) {
        return { leaseUntil: intent.to };
      }
      // Checked in the same write: a destroy opened since (the lease's end) keeps the lease.
      const extended = await store.inventory.extendLease(vm.name, intent.to);
      return extended === "extended" ? { leaseUntil: intent.to } : { refused: extended };
    },
  });
  if ("refused" in moved) {
    const words =
      moved.refused === "destroying"
        ? extensionDestroyingWords(request.spec.name)
        : extensionVmGoneWords(request.spec.name);
    return await store.transition(request.id, ["applying"], "failed", { error: words }, undefined, {
      actor: "vmbot",
      action: "extension_failed",
      detail: { name: request.spec.name, refused: moved.refused },
    });
  }
  const ended = await store.transition(request.id, ["applying"], "ready", {}, undefined, {
    actor: request.decision?.by ?? "vmbot",
    action: "lease_extended",
    detail: intent,
  });
  if (ended) {
    deps.log.info({ requestId: request.id, name: vm.name, to: intent.to }, "lease extended");
  }
  return ended;
}

/** The tracker's pass: extensions a crash left claimed but not finished. */
export async function finishClaimedExtensions(deps: FinishDeps): Promise<RequestRecord[]> {
  const claimed = (await deps.store.listByStatus(["applying"])).filter(
    (request) => request.kind === "extend",
  );
  const ended: RequestRecord[] = [];
  for (const request of claimed) {
    const done = await finishExtension(deps, request);
    if (done) ended.push(done);
  }
  return ended;
}
