import type { Config } from "../config.js";
import type { Job } from "../gitlab/gitlab.js";
import type { Logger } from "../logger.js";
import type { AsyncStore } from "../store/async.js";
import type { RequestRecord, RequestStatus, TransitionIntent } from "../store/store.js";
import { destroyWatch } from "./closure.js";
import { destroyedSinceError } from "../views/failure.js";
import {
  destroyedWords,
  destroyFailedNote,
  destroyFailedWords,
  noDestroyJobWords,
} from "../views/destroy.js";
import { playStep, type ApprovalFinisher } from "./play.js";

/**
 * A destroy request through its `action=destroy` pipeline: queued until the destroy job waits
 * as `manual`, then awaiting approval; applying once it is played (here or in GitLab); ready
 * ("destroyed") when it succeeded, and only then out of the inventory. A failed destroy leaves
 * the VM listed with the failure and the job's link.
 */

const RUNNING = new Set(["created", "waiting_for_resource", "preparing", "pending", "running"]);
const STOPPED = new Set(["failed", "canceled", "skipped"]);

export interface DestroyAdvanceDeps {
  config: Config;
  store: AsyncStore;
  log: Logger;
  approvals: ApprovalFinisher;
  /** What a destroy request records as it starts waiting: who may approve, what it needs. */
  waiting: (request: RequestRecord) => Promise<Parameters<AsyncStore["transition"]>[3]>;
  /** Moves the request (conditionally, audited) and renders it. */
  move: (
    request: RequestRecord,
    to: RequestStatus,
    patch?: Parameters<AsyncStore["transition"]>[3],
    intent?: TransitionIntent,
  ) => Promise<RequestRecord | undefined>;
  /** A reply in the request's thread, posted once. */
  postResult: (request: RequestRecord, step: string, text: string) => Promise<void>;
  /** Renders the request message. */
  render: (request: RequestRecord) => Promise<void>;
}

/**
 * The create request that made the VM, when its configure job had failed: its message loses the
 * Retry configure button, and says the VM was destroyed since.
 */
async function noRetryLeft(deps: DestroyAdvanceDeps, destroy: RequestRecord): Promise<void> {
  const vm = await deps.store.inventory.get(destroy.spec.name);
  // The VM this destroy was asked for, not one made under its name since (a crash may have left
  // this step to a later pass): as the inventory's removal checks.
  if (vm === undefined || vm.createdAt > destroy.createdAt) return;
  const made = await deps.store.getRequest(vm.requestId);
  const failure = made?.failure;
  if (made?.status !== "failed" || failure?.stage !== "configure") return;
  if (failure.destroyedBy !== undefined) return;
  const told = await deps.store.transition(made.id, ["failed"], "failed", {
    error: destroyedSinceError(made),
    failure: { ...failure, destroyedBy: destroy.id },
  });
  if (told !== undefined) await deps.render(told);
}

/**
 * The destroy failed: the VM is still there, so it stays listed, with what happened to its
 * destroy. Its pipeline stays followed: a destroy job played again by hand in GitLab is reported.
 */
async function failDestroy(
  deps: DestroyAdvanceDeps,
  request: RequestRecord,
  job: Job,
  destroy: Job | undefined,
): Promise<void> {
  await deps.store.inventory.note(request.spec.name, destroyFailedNote(job));
  await deps.move(request, "failed", { error: destroyFailedWords(job) }, destroyWatch(destroy?.id));
}

export function createDestroyAdvance(deps: DestroyAdvanceDeps) {
  const { store, config } = deps;
  const jobName = () => config.gitlab.jobs.destroy;

  /**
   * A destroy decided when it was made (a lease's end, VM_LEASE_ON_EXPIRY=destroy): the move to
   * applying records the intent to play in the same write, audited as vmbot's, then the job is
   * played once. After a crash, the applying step plays it if it still waits, else settles it.
   */
  async function playUnapproved(request: RequestRecord, destroy: Job): Promise<void> {
    const claimed = await store.transition(
      request.id,
      [request.status],
      "applying",
      {},
      { step: playStep(request) },
      {
        actor: "vmbot",
        action: "destroy_without_approval",
        detail: { jobId: destroy.id, reason: request.decision?.reason ?? null },
      },
    );
    if (claimed === undefined) return;
    await deps.render(claimed);
    await deps.approvals.playApproved(claimed, destroy);
  }

  return async function advanceDestroy(request: RequestRecord, jobs: Job[]): Promise<void> {
    const destroy = jobs.find((job) => job.name === jobName());
    if (request.status === "queued" || request.status === "planning") {
      if (destroy === undefined) {
        await deps.move(request, "failed", { error: noDestroyJobWords(jobName()) });
        return;
      }
      if (destroy.status === "manual" && request.decision?.kind === "approved") {
        await playUnapproved(request, destroy);
      } else if (destroy.status === "manual") {
        await deps.move(request, "awaiting_approval", await deps.waiting(request));
      } else if (destroy.status === "skipped" || STOPPED.has(destroy.status)) {
        // A job before it (notify:destroy) failed, so GitLab skipped the destroy job.
        const cause = jobs.find((job) => job.status === "failed") ?? destroy;
        await failDestroy(deps, request, cause, destroy);
      } else if (!RUNNING.has(destroy.status)) {
        // Played in GitLab itself before anyone approved here: follow it.
        await deps.move(request, "applying");
      }
      return;
    }
    if (destroy === undefined) return;
    if (request.status === "awaiting_approval") {
      if (STOPPED.has(destroy.status)) {
        await deps.move(
          request,
          "canceled",
          {
            error: `The destroy job was ${destroy.status} in GitLab before anyone approved here; ${request.spec.name} stays.`,
          },
          destroyWatch(destroy.id),
        );
      } else if (destroy.status !== "manual") {
        await deps.move(request, "applying");
      }
      return;
    }
    if (request.status !== "applying") return;
    if (destroy.status !== "manual") await deps.approvals.settle(request, destroy);
    if (destroy.status === "success") {
      // The reply first, then the VM's own request told, then out of the inventory, then the
      // move: a crash anywhere in between finds the reply posted, the request told, and removes
      // (again) a VM already removed.
      await deps.postResult(request, "destroyed", destroyedWords(request, destroy));
      await noRetryLeft(deps, request);
      await store.inventory.remove(request.spec.name, request.createdAt);
      await store.audit({
        requestId: request.id,
        actor: "vmbot",
        action: "vm_destroyed",
        detail: { jobId: destroy.id, name: request.spec.name },
      });
      await deps.move(request, "ready");
    } else if (STOPPED.has(destroy.status)) {
      await failDestroy(deps, request, destroy, destroy);
    } else if (destroy.status === "manual" && request.decision?.kind === "approved") {
      // Approved here, but GitLab has not started the job (a crash, a lost answer): finish it.
      await deps.approvals.playApproved(request, destroy);
    }
  };
}
