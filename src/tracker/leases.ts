import type { webApi } from "@slack/bolt";
import { PostedResultSchema } from "../effect-results.js";
import type { Access } from "../access.js";
import type { Config } from "../config.js";
import { longerLeaseMs, mayAskLonger } from "../extend/ask.js";
import type { Effects } from "../effects.js";
import type { Logger } from "../logger.js";
import type { AsyncStore } from "../store/async.js";
import { inFlight, openDestroyRequest } from "../commands/destroy.js";
import { LEASE_EVENT_TYPE } from "../ids.js";
import { findDirectMessage } from "../slack/find.js";
import { metadataOf } from "../slack/metadata.js";
import { LEASE_EXPIRED_REASON, leaseExpiredNote, leaseReminder } from "../views/lease.js";
import type { RequestStarter } from "./starter.js";

/**
 * Leases, on every tracker pass: the owner is reminded by direct message before the end (once
 * per reminder in VM_LEASE_WARN, through the effects journal), and at the end vmbot opens a
 * destroy request for approval on the owner's behalf, once per lease: its key is the lease's end,
 * so a restart or a second pass finds the request already made. With VM_LEASE_ON_EXPIRY=destroy
 * the request is made approved by vmbot, and the tracker plays its destroy job without approval.
 */

export interface LeaseKeeperDeps {
  config: Config;
  /** The policy: whether a reminder offers to ask for a lease past the maximum. */
  access?: Pick<Access, "policy">;
  store: AsyncStore;
  client: webApi.WebClient;
  effects: Effects;
  starter: RequestStarter;
  log: Logger;
  now: () => Date;
}

type LeasedVm = Awaited<ReturnType<AsyncStore["inventory"]["list"]>>[number];

/** What the reminder offers past the maximum, where the policy's `extend` rule lets the owner ask. */
function longerOf(deps: LeaseKeeperDeps, vm: LeasedVm) {
  const { lease } = deps.config;
  const ms = longerLeaseMs(lease);
  if (ms === null || lease.maxMs === null || deps.access === undefined) return undefined;
  return mayAskLonger(deps.access.policy(), lease, vm) ? { ms, maxMs: lease.maxMs } : undefined;
}

async function remind(deps: LeaseKeeperDeps, vm: LeasedVm, until: string) {
  const { store, config } = deps;
  const left = Date.parse(until) - deps.now().getTime();
  // Only the nearest reminder due: one missed while vmbot was down is not sent late as well.
  const due = config.lease.warnMs.filter((warn) => left <= warn).at(-1);
  if (due === undefined) return;
  const subject = `lease:${vm.name}`;
  const step = `lease_reminder:${until}:${due}`;
  const payload = { name: vm.name, until, warn: due };
  await deps.effects.once(subject, step, {
    result: PostedResultSchema,
    detail: { owner: vm.owner },
    // After a crash: the reminder is looked for in the owner's direct messages first.
    reconcile: async () => {
      const since = Date.parse((await store.effect(subject, step))?.intendedAt ?? until) - 60_000;
      return findDirectMessage(deps.client, vm.owner, String(since / 1000), (message) => {
        const metadata = metadataOf(message);
        return (
          metadata?.eventType === LEASE_EVENT_TYPE &&
          metadata.payload.name === payload.name &&
          metadata.payload.until === payload.until &&
          metadata.payload.warn === payload.warn
        );
      });
    },
    act: async () => {
      const posted = await deps.client.chat.postMessage({
        channel: vm.owner,
        ...leaseReminder(vm, until, config.lease.onExpiry, longerOf(deps, vm)),
        metadata: { event_type: LEASE_EVENT_TYPE, event_payload: payload },
      });
      await store.audit({
        requestId: null,
        actor: "vmbot",
        action: "lease_reminded",
        detail: { name: vm.name, owner: vm.owner, until },
      });
      return { ts: posted.ts ?? "" };
    },
  });
}

async function expire(deps: LeaseKeeperDeps, vm: LeasedVm, until: string) {
  const { store, config, log } = deps;
  if ((await inFlight(store, vm.name)) !== undefined) return;
  // The pass read the VMs before: the owner may have extended the lease since.
  const current = await store.inventory.get(vm.name);
  if (current?.status !== "live" || current.leaseUntil !== until) return;
  const channel = config.slack.channel ?? (await store.getRequest(vm.requestId))?.channel;
  if (channel === undefined) {
    log.warn({ name: vm.name }, "a lease ended, but vmbot knows no channel to ask in");
    return;
  }
  const { onExpiry } = config.lease;
  // VM_LEASE_ON_EXPIRY=destroy: decided here, in the same write as the request, so that the
  // tracker plays its destroy job once it waits, without an approver.
  const decision =
    onExpiry === "destroy"
      ? {
          kind: "approved" as const,
          by: "vmbot",
          at: deps.now().toISOString(),
          reason: LEASE_EXPIRED_REASON,
        }
      : undefined;
  const opened = await openDestroyRequest(deps, {
    vm,
    requester: vm.owner,
    channel,
    log: log.child({ name: vm.name }),
    key: `lease:${vm.name}:${until}`,
    notes: [leaseExpiredNote(until, onExpiry)],
    actor: "vmbot",
    ...(decision === undefined ? {} : { decision }),
    leaseUntil: until,
  });
  if (opened === "not_due") {
    log.info({ name: vm.name, until }, "the lease moved before its end was acted on");
    return;
  }
  if (opened === "not_recorded") return;
  if (opened.created) {
    await store.audit({
      requestId: opened.request.id,
      actor: "vmbot",
      action: "lease_expired",
      detail: { name: vm.name, owner: vm.owner, until, onExpiry },
    });
  }
  // A request a crash left unstarted is started by the starter's own resume.
  if (opened.created) await deps.starter.start(opened.request);
}

export function createLeaseKeeper(deps: LeaseKeeperDeps) {
  const { store, log } = deps;
  return {
    async check(): Promise<void> {
      const now = deps.now().getTime();
      for (const vm of await store.inventory.list()) {
        const until = vm.leaseUntil;
        if (until === null || vm.status !== "live") continue;
        try {
          if (Date.parse(until) <= now) await expire(deps, vm, until);
          else await remind(deps, vm, until);
        } catch (error) {
          log.warn(
            { err: error, name: vm.name },
            "could not follow a VM's lease; trying next pass",
          );
        }
      }
    },
  };
}
