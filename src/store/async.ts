import type { Approvals } from "./approvals.js";
import type { Homes } from "./homes.js";
import type { Inventory } from "./inventory.js";
import type { Store } from "./store.js";

/**
 * The store's interface with every method answering through a Promise of the same result: what a
 * store on a server (PostgreSQL, shared by several replicas) offers. Derived from `Store`, so a
 * method added there appears here too, and moving a caller over is adding `await`.
 */
export type Promised<T> = {
  readonly [K in keyof T]: T[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : T[K];
};

export type AsyncInventory = Promised<Inventory>;
export type AsyncApprovals = Promised<Approvals>;
export type AsyncHomes = Promised<Homes>;

export type AsyncStore = Omit<Promised<Store>, "inventory" | "approvals" | "homes"> & {
  readonly inventory: AsyncInventory;
  readonly approvals: AsyncApprovals;
  readonly homes: AsyncHomes;
};

/** Every method of `target`, answering through a Promise; a throw becomes a rejection. */
function promised<T extends object>(target: T): Promised<T> {
  return new Proxy(target, {
    get(object, key, receiver) {
      const value: unknown = Reflect.get(object, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        try {
          return Promise.resolve<unknown>(value.apply(object, args));
        } catch (error) {
          return Promise.reject(error instanceof Error ? error : new Error(String(error)));
        }
      };
    },
  }) as unknown as Promised<T>;
}

/** A synchronous store (SQLite) behind the asynchronous interface: same answers, awaited. */
export function asAsyncStore(store: Store): AsyncStore {
  return {
    ...promised(store),
    inventory: promised(store.inventory),
    approvals: promised(store.approvals),
    homes: promised(store.homes),
  };
}
