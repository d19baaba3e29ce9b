import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  FINAL_STATUSES,
  REQUEST_STATUSES,
  TRANSITIONS,
  TransitionError,
  type RequestStatus,
} from "../../src/requests/lifecycle.js";
import { openSqliteStore } from "../../src/store/sqlite.js";
import type { Store } from "../../src/store/store.js";
import { moveTo, pathTo } from "../support/lifecycle.js";
import { SAMPLE_SPEC } from "../support/requests.js";

const SRC = resolve(import.meta.dirname, "../../src");

/** A fresh request in the store, taken to `status` through the table's own moves. */
function requestIn(store: Store, status: RequestStatus, key: string): string {
  const { request } = store.createRequest({
    requester: "U0REQ",
    spec: SAMPLE_SPEC,
    notes: [],
    channel: "C0VMBOT",
    submissionKey: key,
  });
  return moveTo(store, request.id, status).id;
}

const PAIRS = REQUEST_STATUSES.flatMap((from) => REQUEST_STATUSES.map((to) => [from, to] as const));
const LISTED = PAIRS.filter(([from, to]) => TRANSITIONS[from].includes(to));
const UNLISTED = PAIRS.filter(([from, to]) => !TRANSITIONS[from].includes(to));

describe("the request's transition table", () => {
  it("reaches every status from queued, and leaves no final status but failed", () => {
    for (const status of REQUEST_STATUSES) expect(() => pathTo("queued", status)).not.toThrow();
    const exits = FINAL_STATUSES.filter((status) => TRANSITIONS[status].length > 0);
    expect(exits).toEqual(["failed"]);
  });

  it.each(LISTED)("moves a request from %s to %s through the store", (from, to) => {
    const store = openSqliteStore(":memory:");
    const id = requestIn(store, from, "view:A");
    const moved = store.transition(id, [from], to, { error: "why" });
    expect(moved).toMatchObject({ id, status: to, error: "why" });
    expect(store.getRequest(id)?.status).toBe(to);
    store.close();
  });

  it.each(UNLISTED)("refuses to move a request from %s to %s, changing nothing", (from, to) => {
    const store = openSqliteStore(":memory:");
    const id = requestIn(store, from, "view:A");
    const before = store.getRequest(id);
    expect(() => store.transition(id, [from], to, { error: "why" }, { step: "x" })).toThrow(
      TransitionError,
    );
    expect(store.getRequest(id)).toEqual(before);
    expect(store.effect(id, "x")).toBeUndefined();
    store.close();
  });

  it("refuses a move when one of several starting statuses may not make it", () => {
    const store = openSqliteStore(":memory:");
    const id = requestIn(store, "awaiting_approval", "view:A");
    expect(() => store.transition(id, ["awaiting_approval", "ready"], "rejected")).toThrow(
      "a request cannot move from ready to rejected",
    );
    expect(store.getRequest(id)?.status).toBe("awaiting_approval");
    store.close();
  });

  it("leaves a listed move to the one that finds the request in a starting status", () => {
    const store = openSqliteStore(":memory:");
    const id = requestIn(store, "planning", "view:A");
    expect(store.transition(id, ["awaiting_approval"], "rejected")).toBeUndefined();
    expect(store.getRequest(id)?.status).toBe("planning");
    store.close();
  });

  it("refuses a status in an update: only a transition changes it", () => {
    const store = openSqliteStore(":memory:");
    const id = requestIn(store, "queued", "view:A");
    const patch = JSON.parse('{"status":"ready"}') as Parameters<Store["updateRequest"]>[1];
    expect(() => store.updateRequest(id, patch)).toThrow("only through transition");
    expect(store.getRequest(id)?.status).toBe("queued");
    store.close();
  });
});

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe("status writes in src/", () => {
  // The compiler keeps `status` out of updateRequest's patch, and the store refuses one at run
  // time; SQL is not typed, so it is read here: only the store writes the requests table.
  it("writes the requests table in one place, the store", () => {
    const writers = sources(SRC).filter((file) =>
      /UPDATE requests|INSERT INTO requests|REPLACE INTO requests/i.test(
        readFileSync(file, "utf8"),
      ),
    );
    expect(writers.map((file) => relative(SRC, file)).sort()).toEqual([
      "store/postgres/requests.ts",
      "store/sqlite-requests.ts",
    ]);
  });

  it("keeps the store below the tracker and the listeners: it imports neither", () => {
    const upward = sources(join(SRC, "store")).filter((file) =>
      /from "\.\.\/(tracker|actions|commands|views)\//.test(readFileSync(file, "utf8")),
    );
    expect(upward.map((file) => relative(SRC, file))).toEqual([]);
  });
});
