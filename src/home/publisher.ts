import type { webApi } from "@slack/bolt";
import type { Access } from "../access.js";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import { longerLeaseMs, mayAskLonger } from "../extend/ask.js";
import type { AsyncStore } from "../store/async.js";
import type { VmRecord } from "../store/inventory.js";
import type { RequestRecord } from "../store/store.js";
import { homeView, type HomeView, type PendingApproval } from "../views/home.js";
import type { HomeChange } from "./changes.js";
import { approvalQueue, queueSignature } from "./queue.js";

/**
 * Publishes each person's Home tab: at once when they open it, and again, a moment later and
 * once per burst of changes, when something it shows changes. Only for people who have opened
 * it (the store remembers them). A publish Slack refuses or does not answer is logged and tried
 * again later with a growing delay; it never stops the change that asked for it.
 */
export interface HomePublisher {
  /** Someone opened their Home: remembered, and published now. */
  opened(user: string): Promise<void>;
  /** Something changed: the Homes of those concerned are published again soon. */
  changed(change: HomeChange): void;
  /** Publishes what is due now, waiting for it (tests, shutdown). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

export interface HomePublisherDeps {
  store: AsyncStore;
  client: Pick<webApi.WebClient, "views" | "auth">;
  access: Access;
  config: Config;
  log: Logger;
  now: Clock;
  /** How long a burst of changes is gathered before publishing (1 s by default). */
  debounceMs?: number;
  /** The first delay before a refused publish is tried again; doubles up to 5 minutes. */
  retryMs?: number;
}

const MAX_RETRY_MS = 5 * 60_000;

/** The VMs whose owner may ask for a lease past the maximum, with the length offered. */
function longerLeases(deps: HomePublisherDeps, vms: readonly VmRecord[]) {
  const { lease } = deps.config;
  const ms = longerLeaseMs(lease);
  if (ms === null || lease.maxMs === null) return undefined;
  const maxMs = lease.maxMs;
  const policy = deps.access.policy();
  return new Map(
    vms.filter((vm) => mayAskLonger(policy, lease, vm)).map((vm) => [vm.name, { ms, maxMs }]),
  );
}

/** The Home's content for `user`, read afresh from the store. */
async function homeFor(
  deps: HomePublisherDeps,
  user: string,
  linkTo: (request: RequestRecord) => string | undefined,
  shown: Map<string, string>,
): Promise<HomeView> {
  const { store } = deps;
  const active = await store.listActive();
  const requests = active.filter((r) => r.requester === user).reverse();
  // Only what this person may approve and would still fill a place in (the rule's groups).
  const queue = await approvalQueue(deps, user, deps.now());
  shown.set(user, queueSignature(queue));
  const approvals: PendingApproval[] | undefined = queue?.map((request) => ({
    request,
    link: linkTo(request),
  }));
  const links = new Map(
    requests.flatMap((r) => {
      const url = linkTo(r);
      return url === undefined ? [] : [[r.id, url] as const];
    }),
  );
  const vms = await store.inventory.list({ owner: user });
  return homeView({
    vms,
    longer: longerLeases(deps, vms),
    requests,
    approvals,
    links,
    now: deps.now(),
  });
}

/** Publishes one person's Home, true when Slack took it; links to request messages included. */
function createPublish(
  deps: HomePublisherDeps,
  shown: Map<string, string>,
): (user: string) => Promise<boolean> {
  const { client, log } = deps;
  /** The workspace's address (auth.test), for links to request messages; asked once. */
  let workspace: Promise<string | undefined> | undefined;
  const workspaceUrl = () =>
    (workspace ??= client.auth.test().then(
      (answer) => (typeof answer.url === "string" ? answer.url : undefined),
      (error: unknown) => {
        log.debug({ err: error }, "could not learn the workspace's address for Home links");
        workspace = undefined;
        return undefined;
      },
    ));
  return async (user) => {
    const base = await workspaceUrl();
    const linkTo = (request: RequestRecord) =>
      base === undefined || request.messageTs === null
        ? undefined
        : `${base}archives/${request.channel}/p${request.messageTs.replace(".", "")}`;
    try {
      return await publishNewest(deps, user, () => homeFor(deps, user, linkTo, shown));
    } catch (error) {
      log.warn({ err: error, user }, "could not publish a Home tab; trying again later");
      return false;
    }
  };
}

/** How many times a publish overtaken by another replica's reads the store again. */
const OVERTAKEN_TRIES = 3;

const overtaken = (error: unknown) =>
  (error as { data?: { error?: unknown } }).data?.error === "hash_conflict";

/**
 * Publishes `user`'s Home as `read` makes it, sending the hash of the Home Slack took last (from
 * any replica), read before the Home's content: Slack refuses the publish (`hash_conflict`) when
 * another one landed since, whose content may be newer, and the Home is read and published again.
 * The same stored hash refused twice was written by no one since: it is only out of date (a save
 * that lost a race, a Home published by hand), and the Home is published without it. True when
 * Slack took it; false when other publishes kept overtaking it (tried again later).
 */
async function publishNewest(
  deps: HomePublisherDeps,
  user: string,
  read: () => Promise<HomeView>,
): Promise<boolean> {
  const { store, client } = deps;
  let refused: string | undefined | null = null;
  for (let tries = 0; tries < OVERTAKEN_TRIES; tries += 1) {
    const hash = await store.homes.viewHash(user);
    const view = await read();
    const guard = hash === refused ? undefined : hash;
    try {
      const answer = await client.views.publish({
        user_id: user,
        view,
        ...(guard === undefined ? {} : { hash: guard }),
      });
      if (answer.view?.hash !== undefined) await store.homes.published(user, answer.view.hash);
      return true;
    } catch (error) {
      if (!overtaken(error)) throw error;
      deps.log.debug({ user }, "another publish of this Home landed first; reading it again");
      refused = hash;
    }
  }
  return false;
}

/**
 * Who is due a publish: people named by changes, and, when a change concerns the approvers, each
 * approver whose queue is no longer what their Home last showed (`shown`: a request entered or
 * left it).
 */
function createDue(deps: HomePublisherDeps, shown: Map<string, string>) {
  const users = new Set<string>();
  let approvers = false;
  return {
    add(change: HomeChange) {
      for (const user of change.users) users.add(user);
      if (change.approvers) approvers = true;
    },
    /** Someone just published needs nothing more for the changes so far. */
    drop(user: string) {
      users.delete(user);
    },
    pending: () => users.size > 0 || approvers,
    /**
     * Those due now, among the people who have a Home; the list starts again empty. When the
     * store cannot say who is due, what was due stays due, for the retry.
     */
    async take(): Promise<string[]> {
      const wanted = [...users];
      const forApprovers = approvers;
      users.clear();
      approvers = false;
      try {
        const homes = new Set(await deps.store.homes.list());
        const taken = new Set(wanted.filter((user) => homes.has(user)));
        if (!forApprovers) return [...taken];
        for (const user of homes) {
          if (taken.has(user)) continue;
          const queue = await approvalQueue(deps, user, deps.now());
          if (queue !== undefined && queueSignature(queue) !== shown.get(user)) taken.add(user);
        }
        return [...taken];
      } catch (error) {
        for (const user of wanted) users.add(user);
        approvers ||= forApprovers;
        throw error;
      }
    },
  };
}

/**
 * One publish at a time for each Home: each reads the store when its turn comes, so the Home
 * Slack shows last is the newest. Without it a publish on opening the Home could land before a
 * slower one of a burst read earlier, which would then put the older Home back.
 */
function oneAtATimePerHome(
  publish: (user: string) => Promise<boolean>,
): (user: string) => Promise<boolean> {
  const inLine = new Map<string, Promise<boolean>>();
  return (user) => {
    const mine = (inLine.get(user) ?? Promise.resolve(true)).then(() => publish(user));
    inLine.set(user, mine);
    void mine.finally(() => {
      if (inLine.get(user) === mine) inLine.delete(user);
    });
    return mine;
  };
}

export function createHomePublisher(deps: HomePublisherDeps): HomePublisher {
  const debounceMs = deps.debounceMs ?? 1_000;
  const firstRetryMs = deps.retryMs ?? 10_000;
  /** Each Home's approval queue as last published (its requests), in this process. */
  const shown = new Map<string, string>();
  const publish = oneAtATimePerHome(createPublish(deps, shown));
  const due = createDue(deps, shown);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let retryMs = firstRetryMs;
  let stopped = false;

  function schedule(delayMs: number): void {
    if (stopped || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, delayMs);
    timer.unref();
  }

  /** After a refusal, tried again later and later; after a success, changes meanwhile soon. */
  function next(failed: boolean): void {
    if (failed) {
      schedule(retryMs);
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      return;
    }
    retryMs = firstRetryMs;
    if (due.pending()) schedule(debounceMs);
  }

  async function publishDue(): Promise<void> {
    let failed = false;
    for (const user of await due.take()) {
      if (!(await publish(user))) {
        due.add({ users: [user], approvers: false });
        failed = true;
      }
    }
    next(failed);
  }

  function flush(): Promise<void> {
    running ??= publishDue()
      .catch((error: unknown) => {
        deps.log.warn({ err: error }, "could not publish the Home tabs due; trying again later");
        next(true);
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    async opened(user) {
      await deps.store.homes.opened(user);
      due.drop(user);
      if (!(await publish(user))) {
        due.add({ users: [user], approvers: false });
        next(true);
      }
    },
    changed(change) {
      due.add(change);
      schedule(debounceMs);
    },
    async flush() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await running;
      await flush();
    },
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
