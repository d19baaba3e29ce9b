import type { RequestRecord } from "../store/store.js";
import type { AsyncStore } from "../store/async.js";
import type { Closure } from "./closure.js";
import { finishNotices, type Notifier } from "./notify.js";
import type { RequestStarter } from "./starter.js";

/**
 * What every pass finishes before it follows pipelines: the work a crash or an unanswered call
 * left half done (requests without their message or pipeline, cancels and plan deletions, notices
 * not posted, pipelines GitLab made visible late). After a restart, the first pass is the
 * recovery; on later passes there is usually nothing to do.
 */
export interface RecoveryDeps {
  store: AsyncStore;
  starter: RequestStarter;
  closure: Closure;
  notify: Notifier;
  latePipelines: { sweep(): Promise<void> };
}

export function createRecovery(deps: RecoveryDeps): {
  /** Finishes what `unfinished` (the store's unfinished requests, as they stand) left undone. */
  sweep(unfinished: readonly RequestRecord[]): Promise<void>;
} {
  return {
    async sweep(unfinished) {
      await deps.starter.resume(unfinished);
      await deps.closure.finishPending();
      await finishNotices(deps.store, deps.notify);
      await deps.latePipelines.sweep();
    },
  };
}
