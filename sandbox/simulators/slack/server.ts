/** The server: the fake Slack on a loopback port, and its drivers. */
import { FaultQueue } from "../faults.js";
import { startFakeServer } from "../http.js";
import { API_PREFIX, DEFAULT_TRIGGER_TTL_MS, ResponseUrlInbox } from "./requests.js";
import { type FakeSlackContext, route } from "./routes.js";
import { ObservableList } from "./support.js";
import {
  type FakeSlack,
  type FakeSlackOptions,
  type SlackCall,
  type SlackFailure,
  type SlackIdentity,
} from "./types.js";
import { SlackWorkspace } from "./workspace.js";

function identityFor(options: FakeSlackOptions): SlackIdentity {
  return {
    teamId: options.teamId ?? "T0000VMBOT",
    teamName: "vmbot test workspace",
    teamDomain: options.teamDomain ?? "vmbot-test",
    botUserId: "U0000VMBOT",
    botUserName: "vmbot",
    botId: "B0000VMBOT",
    appId: "A0000VMBOT",
  };
}

function describeCalls(calls: readonly SlackCall[]): string {
  if (calls.length === 0) return "none";
  return calls
    .map((call) => (call.ok ? call.method : `${call.method} (${call.error ?? "failed"})`))
    .join(", ");
}

/** Starts the fake Slack Web API on a free loopback port. */
export async function startFakeSlack(options: FakeSlackOptions): Promise<FakeSlack> {
  let baseUrl = "";
  const identity = identityFor(options);
  const ctx: FakeSlackContext = {
    workspace: new SlackWorkspace({
      botToken: options.botToken,
      otherBotTokens: options.otherBotTokens,
      triggerTtlMs: options.triggerTtlMs ?? DEFAULT_TRIGGER_TTL_MS,
      now: options.now,
      ...(options.homeTabEnabled === undefined ? {} : { homeTabEnabled: options.homeTabEnabled }),
      identity,
      baseUrl: () => baseUrl,
    }),
    calls: new ObservableList<SlackCall>(),
    callers: new WeakMap<SlackCall, string>(),
    failures: new FaultQueue<string, SlackFailure, string>((queued, method) => queued === method),
    responses: new ResponseUrlInbox(identity.teamId),
    baseUrl: () => baseUrl,
  };
  const server = await startFakeServer((req, res) => {
    route(req, res, ctx);
  });
  baseUrl = server.url;
  const { workspace, calls, responses } = ctx;

  return {
    url: server.url,
    apiUrl: `${server.url}${API_PREFIX}`,
    identity,
    calls: calls.items,
    callsTo: (method) => calls.items.filter((call) => call.method === method),
    callerOf: (call) => ctx.callers.get(call),
    waitFor: (method, predicate, timeoutMs = 5000) =>
      calls.waitFor(
        (call) => call.method === method && (predicate?.(call) ?? true),
        timeoutMs,
        () =>
          `No ${method} call${predicate === undefined ? "" : " matching the predicate"} within ${String(timeoutMs)} ms; calls so far: ${describeCalls(calls.items)}`,
      ),
    issueTriggerId: (issue) => workspace.triggers.issue(issue?.viewId),
    issueResponseUrl: () => responses.issue(baseUrl),
    messages: workspace.messages,
    message: (channel, ts) => workspace.message(channel, ts),
    ephemerals: workspace.ephemerals,
    views: workspace.views,
    view: (idOrExternalId) => workspace.view(idOrExternalId),
    home: (userId) => workspace.homes.get(userId),
    uploads: workspace.uploads,
    responses: responses.posts.items,
    waitForResponse: (predicate = () => true, timeoutMs = 5000) =>
      responses.posts.waitFor(
        predicate,
        timeoutMs,
        () =>
          `No response_url post within ${String(timeoutMs)} ms; ${String(responses.posts.items.length)} received`,
      ),
    failNext: (method, failure) => {
      ctx.failures.add(method, failure);
    },
    addUsergroup: (id, userIds) => {
      workspace.addUsergroup(id, userIds);
    },
    addUser: (user) => {
      workspace.addUser(user);
    },
    user: (id) => workspace.user(id),
    addChannel: (channel) => {
      workspace.addChannel(channel);
    },
    addMethod: (method, handler) => {
      workspace.extraMethods.set(method, handler);
    },
    onChange: (listener) => {
      const stops = [calls.subscribe(listener), responses.posts.subscribe(listener)];
      return () => {
        for (const stop of stops) stop();
      };
    },
    close: () => server.close(),
  };
}
