import { mkdtempSync, openSync, rmSync, writeSync, closeSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { StoreOwnedError } from "../../src/store/owner.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import { StoreWriteError, type NewRequest } from "../../src/store/store.js";
import { SAMPLE_SPEC } from "../support/requests.js";

const newRequest = (submissionKey = "view:V1"): NewRequest => ({
  requester: "U0REQ",
  spec: SAMPLE_SPEC,
  notes: [],
  channel: "C0CHAN",
  submissionKey,
});

const dirs: string[] = [];
function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), "vmbot-owner-"));
  dirs.push(dir);
  return join(dir, "vmbot.sqlite");
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("one owner per store", () => {
  it("refuses a second open of the same file while the first is open, naming the store", () => {
    const path = tempDb();
    const first = openSqliteStore(path);
    expect(() => openSqliteStore(path)).toThrow(StoreOwnedError);
    expect(() => openSqliteStore(path)).toThrow(`another vmbot process is using the store ${path}`);
    // The owner carries on.
    expect(first.createRequest(newRequest()).created).toBe(true);
    expect(first.writable()).toEqual({ ok: true });
    first.close();
    const second = openSqliteStore(path);
    expect(second.listActive()).toHaveLength(1);
    second.close();
  });

  it("lets a reader look at a store its owner holds, and refuses the reader's writes", () => {
    const path = tempDb();
    const owner = openSqliteStore(path);
    const { request } = owner.createRequest(newRequest());
    const reader = openSqliteStore(path, { readOnly: true });
    expect(reader.getRequest(request.id)?.id).toBe(request.id);
    expect(() => {
      reader.audit({ requestId: null, actor: "U0X", action: "x" });
    }).toThrow(StoreWriteError);
    reader.close();
    owner.close();
  });
});

describe("a store that cannot be trusted or written", () => {
  it("refuses a damaged file at open, saying so and what to do", () => {
    const path = tempDb();
    const store = openSqliteStore(path);
    for (let i = 0; i < 40; i += 1) store.createRequest(newRequest(`view:${i}`));
    store.close();
    // Scribble over the second page (a table's b-tree page), as a torn write would.
    const size = statSync(path).size;
    expect(size).toBeGreaterThan(8192);
    const fd = openSync(path, "r+");
    writeSync(fd, Buffer.alloc(512, 0xa5), 0, 512, 4096);
    closeSync(fd);
    expect(() => openSqliteStore(path)).toThrow(/is damaged .*Restore it from a backup/);
  });

  it("refuses a file that is not a database at all", () => {
    const path = tempDb();
    openSqliteStore(path).close();
    rmSync(path);
    const fd = openSync(path, "w");
    writeSync(fd, "this is not a database, it is a shopping list\n".repeat(200));
    closeSync(fd);
    expect(() => openSqliteStore(path)).toThrow(/is damaged/);
  });

  it("reports a store it cannot write, and turns a refused write into a StoreWriteError", () => {
    const path = tempDb();
    let now = new Date("2026-12-03T10:00:00Z");
    const store = openSqliteStore(path, { clock: () => now });
    const { request } = store.createRequest(newRequest());
    expect(store.writable()).toEqual({ ok: true });
    // Another program holds the write lock (an open transaction in a sqlite3 shell).
    const other = new Database(path);
    other.exec("BEGIN IMMEDIATE");
    try {
      now = new Date(now.getTime() + 5_000);
      expect(store.writable()).toEqual({
        ok: false,
        reason: "the store cannot be written: another program holds its write lock",
      });
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    expect(store.writable()).toEqual({ ok: true });
    store.close();
    expect(store.writable()).toEqual({ ok: false, reason: "the store is closed" });
    expect(() => store.updateRequest(request.id, { error: "x" })).toThrow(StoreWriteError);
  });
});

describe("what the request message shows", () => {
  it("counts revisions and lists the requests whose message is behind", () => {
    const store = openSqliteStore(":memory:");
    const { request } = store.createRequest(newRequest());
    expect(request).toMatchObject({ revision: 0, renderedRevision: 0 });
    // No message yet: nothing to catch up.
    store.transition(request.id, ["queued"], "planning");
    expect(store.listBehind(10)).toEqual([]);
    const posted = store.updateRequest(request.id, { messageTs: "1.2" });
    expect(posted.revision).toBe(2);
    expect(store.listBehind(10).map((r) => r.id)).toEqual([request.id]);
    store.markRendered(request.id, posted.revision, "digest");
    expect(store.listBehind(10)).toEqual([]);
    expect(store.getRequest(request.id)).toMatchObject({
      renderedRevision: 2,
      renderedHash: "digest",
      // Recording what the message shows is not a change of the request.
      revision: 2,
      updatedAt: posted.updatedAt,
    });
    store.transition(request.id, ["planning"], "awaiting_approval");
    expect(store.listBehind(10).map((r) => r.revision)).toEqual([3]);
    store.close();
  });
});
