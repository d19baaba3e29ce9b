import type { GitlabPort } from "../gitlab/gitlab.js";
import type { Logger } from "../logger.js";
import type { AsyncStore } from "../store/async.js";
import { stateRemovedWords } from "../views/request-notes.js";

export interface InventoryCheckDeps {
  store: AsyncStore;
  gitlab: Pick<GitlabPort, "terraformStates">;
  log: Logger;
  /** The shared state of VMs made before each VM had one of its own (TF_STATE_NAME). */
  sharedState: string;
  /** Time between two checks; the first comes one interval after the start, or `firstMs`. */
  intervalMs: number;
  firstMs?: number;
}

export interface InventoryCheck {
  /** Compares the inventory with the project's Terraform states once. */
  check(): Promise<void>;
  /** Checks after `firstMs`, then every `intervalMs`. */
  start(): void;
  /** Stops checking and waits for a check in progress. */
  stop(): Promise<void>;
}

/**
 * Compares the VMs vmbot made with the project's Terraform states, on a slow timer: a VM whose
 * state is gone from GitLab is marked gone (and live again if it comes back), never dropped;
 * states no VM or request names are kept for admins to see, never adopted.
 */
export function createInventoryCheck(deps: InventoryCheckDeps): InventoryCheck {
  const { store, log } = deps;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  async function check(): Promise<void> {
    const states = new Set((await deps.gitlab.terraformStates()).map((state) => state.name));
    await store.inventory.seeStates([...states]);
    const vms = await store.inventory.list();
    for (const vm of vms) {
      const state = vm.stateName ?? deps.sharedState;
      const present = states.has(state);
      if (vm.status === "live" && !present) {
        log.warn({ vm: vm.name, state }, "a VM's Terraform state is gone from GitLab");
        await store.inventory.mark(vm.name, "gone", stateRemovedWords(state));
      } else if (vm.status === "gone" && present) {
        log.info({ vm: vm.name, state }, "a VM's Terraform state is back in GitLab");
        await store.inventory.mark(vm.name, "live", null);
      }
    }
    await store.inventory.checked(vms.map((vm) => vm.name));
  }

  function guarded(): Promise<void> {
    running ??= check()
      .catch((error: unknown) => {
        log.warn({ err: error }, "could not compare the VMs with GitLab's Terraform states");
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  function schedule(delayMs: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      void guarded().finally(() => {
        schedule(deps.intervalMs);
      });
    }, delayMs);
    timer.unref();
  }

  return {
    check,
    start() {
      // Started again after a stop when a replica takes the lead once more (leadership.ts).
      stopped = false;
      clearTimeout(timer);
      schedule(deps.firstMs ?? deps.intervalMs);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
