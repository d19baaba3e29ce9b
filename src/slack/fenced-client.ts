import { webApi } from "@slack/bolt";
import { Agent, type Dispatcher } from "undici";
import { FencedError, type Leader } from "../store/postgres/leader.js";
import { causeOf, methodOf } from "./lost-answers.js";

type SlackClient = webApi.WebClient;
type Fetch = typeof globalThis.fetch;

const POST = "post a message to Slack";
const UPDATE = "update a message in Slack";
const DELETE = "delete a message in Slack";
const SHARE = "share a file in Slack";

/** The calls that change what people see, each with what it does, for the refusal's words. */
const WRITES: Readonly<Record<string, string>> = {
  "chat.postMessage": POST,
  "chat.postEphemeral": POST,
  "chat.update": UPDATE,
  "chat.delete": DELETE,
  "files.completeUploadExternal": SHARE,
};

/**
 * `handler`, whose request is aborted with what `check` throws instead of being written. undici
 * tells a handler its request has a connection (`onRequestStart`) synchronously, right before it
 * writes the request to the socket; its `compose` gives interceptors handlers of that interface.
 */
export function checkedAsItLeaves(
  handler: Dispatcher.DispatchHandler,
  check: () => void,
): Dispatcher.DispatchHandler {
  return new Proxy(handler, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key);
      if (typeof value !== "function") return value;
      const bound = (value as (...args: unknown[]) => unknown).bind(target);
      if (key !== "onRequestStart") return bound;
      return (controller: Dispatcher.DispatchController, ...rest: unknown[]) => {
        try {
          check();
        } catch (error) {
          controller.abort(error instanceof Error ? error : new Error(String(error)));
          return undefined;
        }
        return bound(controller, ...rest);
      };
    },
  });
}

/**
 * A `fetch` whose requests for the calls in WRITES are written to the socket only while
 * `fence.stillHolds`: checked when the request has its connection, with nothing between the
 * check and the write (a new connection's handshake, a kept one's turn, all come before).
 */
function fencedBase(fence: Pick<Leader, "stillHolds">): Fetch {
  const dispatcher = new Agent().compose((dispatch) => (options, handler) => {
    const what = WRITES[methodOf(options.path)];
    if (what === undefined) return dispatch(options, handler);
    return dispatch(
      options,
      checkedAsItLeaves(handler, () => {
        fence.stillHolds(what);
      }),
    );
  });
  // Node's own fetch, which takes a dispatcher of undici's (its types are of the undici it
  // bundles): what it sends, a FormData of an upload too, is sent as the app's client sends it.
  const through = dispatcher as unknown as NonNullable<RequestInit["dispatcher"]>;
  return (input, init) => globalThis.fetch(input, { ...init, dispatcher: through });
}

/**
 * The led work's Slack client on a replica sharing PostgreSQL, made with the app's client
 * `options` over a `fetch` of its own. Each call that changes what people see (a post, an
 * update, a delete, a file shared) is refused with a FencedError, sending nothing, unless this
 * replica still leads: the fence is confirmed against the lease row first (`Leader.confirm`),
 * and each request the call sends, the first and any the client sends again, is checked once
 * more as it is written to its connection (`Leader.stillHolds`). A leader paused past its lease
 * (a stopped process, a long pause of the runtime, a network partition) that resumes anywhere
 * in the call, with the fence's answer in hand, in the client's queue, in a retry's backoff or
 * waiting for a connection, posts nothing the new leader has posted or will post. Slack cannot
 * check an epoch itself: what is left is a pause between that last check and the write, one
 * synchronous step apart.
 * Reading calls (users, conversations, upload addresses) go straight through.
 */
export function fencedSlackClient(
  token: string,
  options: (base: Fetch) => webApi.WebClientOptions,
  fence: Pick<Leader, "confirm" | "stillHolds">,
): SlackClient {
  const made = options(fencedBase(fence));
  const retries: Retries | undefined = made.retryConfig;
  const onFailedAttempt = retries?.onFailedAttempt;
  const retryConfig: Retries = {
    ...retries,
    // A request refused by the fence is not sent again: the new leader sends what is due.
    onFailedAttempt: (error) => {
      if (causeOf(error, FencedError) !== undefined) throw error;
      return onFailedAttempt?.(error);
    },
  };
  const client = new webApi.WebClient(token, { ...made, retryConfig });
  const guard =
    <A extends unknown[], R>(what: string, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await fence.confirm(what);
      try {
        return await call(...args);
      } catch (error) {
        // Refused as it left: the fence's own error, as when refused before, not the client's.
        throw causeOf(error, FencedError) ?? error;
      }
    };
  const chat: SlackClient["chat"] = {
    ...client.chat,
    postMessage: guard(POST, client.chat.postMessage),
    postEphemeral: guard(POST, client.chat.postEphemeral),
    update: guard(UPDATE, client.chat.update),
    delete: guard(DELETE, client.chat.delete),
  };
  const files: SlackClient["files"] = {
    ...client.files,
    completeUploadExternal: guard(SHARE, client.files.completeUploadExternal),
  };
  return new Proxy(client, {
    get(target, key, receiver) {
      if (key === "chat") return chat;
      if (key === "files") return files;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
}

/** The client's retries, which p-retry runs: it calls `onFailedAttempt` after each failure. */
type Retries = webApi.WebClientOptions["retryConfig"] & {
  onFailedAttempt?: (error: Error) => void | Promise<void>;
};
