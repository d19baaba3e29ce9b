import { afterEach, describe, expect, it } from "vitest";
import { createEffects } from "../../src/effects.js";
import { createGitlab } from "../../src/gitlab/gitlab.js";
import { createLogger } from "../../src/logger.js";
import { createRedactor } from "../../src/redact.js";
import { asAsyncStore } from "../../src/store/async.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/store.js";
import { createUnlockService, type UnlockService } from "../../src/unlock/service.js";
import type { Reply } from "../../src/views/unlock.js";
import { startFakeGitlab, type FakeGitlab } from "../../sandbox/simulators/gitlab/index.js";
import { ADMIN, PROJECT_PATH } from "../support/harness.js";
import { captureLogs } from "../support/logs.js";
import { TEST_SECRETS } from "../support/secrets.js";
import { waitFor } from "../support/wait.js";

/**
 * The unlock service alone, given only what it uses: GitLab's states (the real client against
 * the simulator), the store, the effects journal, who is an admin, and where to announce.
 */

const HOUR = 3_600_000;
const LOCK = /\/terraform\/state\/general\/lock$/;
const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** The first DELETE of the lock has reached GitLab (where it is held). */
async function atGitlab(w: { fake: FakeGitlab }): Promise<void> {
  await waitFor(
    () => (w.fake.requestsTo("DELETE", LOCK).length > 0 ? true : undefined),
    "the unlock to reach GitLab",
  );
}

async function world() {
  const fake = await startFakeGitlab({
    token: TEST_SECRETS.gitlabToken,
    projects: [{ id: 42, path: PROJECT_PATH, role: "maintainer" }],
  });
  closers.push(() => fake.close());
  fake.addUser({ username: "alice", name: "Alice Ops" });
  fake.addTerraformState(PROJECT_PATH, "general", {
    lockedBy: "alice",
    lockedAt: new Date(Date.now() - 3 * HOUR),
  });
  const gitlab = createGitlab({
    url: fake.url,
    token: TEST_SECRETS.gitlabToken,
    project: PROJECT_PATH,
    ref: "main",
    pipelineParams: "inputs",
  });
  // The lock as GitLab shows it, as the prompt's button carries it.
  const [state] = await gitlab.terraformStates();
  return { fake, gitlab, lockedAt: state?.lockedAt ?? "" };
}

function service(
  w: Awaited<ReturnType<typeof world>>,
  announced: { channel: string; message: Reply }[] = [],
  options: { store?: Store; onCrashPoint?: (point: string) => void } = {},
): { unlock: UnlockService; store: Store } {
  const store = options.store ?? openSqliteStore(":memory:");
  if (options.store === undefined) {
    closers.push(() => {
      store.close();
    });
  }
  const unlock = createUnlockService({
    gitlab: w.gitlab,
    store: asAsyncStore(store),
    effects: createEffects({
      store: asAsyncStore(store),
      ...(options.onCrashPoint === undefined ? {} : { onCrashPoint: options.onCrashPoint }),
    }),
    access: { may: (_action, user) => Promise.resolve(user === ADMIN), who: () => [ADMIN] },
    log: createLogger({
      level: "info",
      redactor: createRedactor(),
      destination: captureLogs().stream,
    }),
    sharedState: "general",
    project: PROJECT_PATH,
    announce: (channel, message) => {
      announced.push({ channel, message });
      return Promise.resolve();
    },
  });
  return { unlock, store };
}

/**
 * The bot stops (here: throws) with the unlock of `w`'s lock intended and not yet sent: the
 * store it leaves, which a restarted service resumes from.
 */
async function stoppedBeforeUnlock(w: Awaited<ReturnType<typeof world>>): Promise<Store> {
  const store = openSqliteStore(":memory:");
  closers.push(() => {
    store.close();
  });
  const crashed = service(w, [], {
    store,
    onCrashPoint: (point) => {
      if (point === "unlock:before") throw new Error("the bot stopped");
    },
  });
  await crashed.unlock.unlock(ADMIN, { state: "general", lockedAt: w.lockedAt }, "C1");
  return store;
}

describe("the unlock service", () => {
  it("turns a second confirmation away while its own unlock of the state is in hand", async () => {
    const w = await world();
    const { unlock, store } = service(w);
    let release: () => void = () => undefined;
    w.fake.failNext(
      { method: "DELETE", path: LOCK },
      { until: new Promise<void>((resolve) => (release = resolve)) },
    );
    const target = { state: "general", lockedAt: w.lockedAt };
    const first = unlock.unlock(ADMIN, target, "C1");
    // The first is at GitLab (its DELETE held there) before the second is asked.
    await atGitlab(w);
    const second = await unlock.unlock(ADMIN, target, "C1");
    expect(second.inPlace).toBe(false);
    expect(second.reply.text).toContain("An unlock of `general` is already under way.");
    release();
    const answer = await first;
    expect(answer.notice).toBeDefined();
    expect(store.listAudit().map((entry) => entry.action)).toEqual([
      "unlock_requested",
      "unlocked",
    ]);
    expect(w.fake.requestsTo("DELETE", LOCK)).toHaveLength(1);
  });

  it("keeps no state between two services: each has its own unlocks in hand", async () => {
    const w = await world();
    const a = service(w);
    const b = service(w);
    let release: () => void = () => undefined;
    w.fake.failNext(
      { method: "DELETE", path: LOCK },
      { until: new Promise<void>((resolve) => (release = resolve)) },
    );
    const target = { state: "general", lockedAt: w.lockedAt };
    const first = a.unlock.unlock(ADMIN, target, "C1");
    await atGitlab(w);
    // With the first service's unlock held at GitLab, another service (another bot, its own
    // store) is not told that the state is being unlocked: it reads GitLab itself and unlocks.
    const second = await b.unlock.unlock(ADMIN, target, "C1");
    expect(second.reply.text).not.toContain("already under way");
    expect(second.notice).toBeDefined();
    expect(b.store.listAudit().map((entry) => entry.action)).toEqual([
      "unlock_requested",
      "unlocked",
    ]);
    release();
    await first;
  });

  it("records a refused unlock as failed: a restart does not try it again, a second confirmation does", async () => {
    const w = await world();
    const announced: { channel: string; message: Reply }[] = [];
    const { unlock, store } = service(w, announced);
    w.fake.failNext({ method: "DELETE", path: LOCK }, { status: 403 });
    const target = { state: "general", lockedAt: w.lockedAt };

    const refused = await unlock.unlock(ADMIN, target, "C1");
    expect(refused.reply.text).toMatch(/^:warning: /);
    expect(refused.notice).toBeUndefined();
    expect(store.pendingEffects()).toEqual([]);

    // A restart finds nothing left to finish: the lock the admin was told is still there stays.
    await unlock.resume();
    expect(w.fake.requestsTo("DELETE", LOCK)).toHaveLength(1);
    expect(announced).toEqual([]);
    expect((await w.gitlab.terraformStates())[0]?.lockedAt).toBe(w.lockedAt);

    // The admin confirms again: a new attempt, not the failure before.
    const again = await unlock.unlock(ADMIN, target, "C1");
    expect(again.notice).toBeDefined();
    expect(w.fake.requestsTo("DELETE", LOCK)).toHaveLength(2);
    expect(store.listAudit().map((entry) => entry.action)).toEqual([
      "unlock_requested",
      "unlock_failed",
      "unlock_requested",
      "unlocked",
    ]);
  });

  it("tells the channel once when an unlock a restart interrupted fails as it is finished", async () => {
    const w = await world();
    const store = await stoppedBeforeUnlock(w);
    expect(w.fake.requestsTo("DELETE", LOCK)).toHaveLength(0);
    expect(store.pendingEffects()).toHaveLength(1);

    const announced: { channel: string; message: Reply }[] = [];
    const restarted = service(w, announced, { store });
    // Reading the lock's ID is refused: the token lost its Maintainer role meanwhile.
    w.fake.failNext({ method: "POST", path: LOCK }, { status: 403 });
    await restarted.unlock.resume();
    expect(w.fake.requestsTo("POST", LOCK)).toHaveLength(1);
    const lockCalls = () =>
      w.fake.requestsTo("POST", LOCK).length + w.fake.requestsTo("DELETE", LOCK).length;
    const calledAfterFirst = lockCalls();
    expect(announced.map((a) => [a.channel, a.message.text])).toEqual([
      [
        "C1",
        expect.stringMatching(
          /^:warning: The force-unlock of `general` that <@U0ADMIN> confirmed before vmbot restarted did not go through: /,
        ),
      ],
    ]);
    const audited = store.listAudit().at(-1);
    expect(audited).toMatchObject({
      action: "unlock_failed",
      detail: { state: "general", foundAfterRestart: true },
    });
    expect(audited?.detail.failed).toBe("gitlab_forbidden");

    expect((await w.gitlab.terraformStates())[0]?.lockedAt).toBe(w.lockedAt);

    // Told once: the next start does not try again.
    await restarted.unlock.resume();
    expect(lockCalls()).toBe(calledAfterFirst);
    expect(announced).toHaveLength(1);
    expect(store.pendingEffects()).toEqual([]);
  });

  it("releases after a restart the lock its reading of the lock's ID took, when the bot stopped holding it", async () => {
    const w = await world();
    const store = await stoppedBeforeUnlock(w);
    // As if the bot had stopped with its reading holding the state, freed just before it.
    w.fake.unlockTerraformState(PROJECT_PATH, "general");
    w.fake.lockTerraformState(PROJECT_PATH, "general", {
      lockedBy: "vmbot",
      info: { ID: `vmbot-unlock:${w.lockedAt}` },
    });

    const announced: { channel: string; message: Reply }[] = [];
    await service(w, announced, { store }).unlock.resume();
    expect(w.fake.terraformState(PROJECT_PATH, "general")?.lock).toBeNull();
    expect(store.pendingEffects()).toEqual([]);
    expect(store.listAudit().at(-1)).toMatchObject({
      action: "unlocked",
      detail: { state: "general", foundAfterRestart: true },
    });
  });

  it("leaves no empty state behind when the state was deleted before a restart finished its unlock", async () => {
    const w = await world();
    const store = await stoppedBeforeUnlock(w);
    // Unlocked and deleted in GitLab while the bot was down.
    w.fake.unlockTerraformState(PROJECT_PATH, "general");
    w.fake.deleteTerraformState(PROJECT_PATH, "general");

    await service(w, [], { store }).unlock.resume();
    // GitLab's lock and unlock endpoints make a missing state: neither was called.
    expect(w.fake.terraformState(PROJECT_PATH, "general")).toBeUndefined();
    expect(w.fake.requestsTo("POST", LOCK)).toHaveLength(0);
    expect(w.fake.requestsTo("DELETE", LOCK)).toHaveLength(0);
    expect(store.pendingEffects()).toEqual([]);
  });

  it("reads the state before the lock's ID: one deleted since the admin's check is not made again", async () => {
    const w = await world();
    const store = await stoppedBeforeUnlock(w);
    // The restart's reconciling reads the state and finds the lock still there; the state is
    // deleted just before the next read, the unlock's own.
    const terraformStates = w.gitlab.terraformStates.bind(w.gitlab);
    let reads = 0;
    const seam: { terraformStates: typeof terraformStates } = w.gitlab;
    seam.terraformStates = async () => {
      reads += 1;
      if (reads === 2) {
        w.fake.unlockTerraformState(PROJECT_PATH, "general");
        w.fake.deleteTerraformState(PROJECT_PATH, "general");
      }
      return terraformStates();
    };
    await service(w, [], { store }).unlock.resume();
    expect(w.fake.terraformState(PROJECT_PATH, "general")).toBeUndefined();
    expect(w.fake.requestsTo("POST", LOCK)).toHaveLength(0);
  });
});
