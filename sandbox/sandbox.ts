/**
 * The sandbox: the real bot (the same Bolt app, listeners, views, tracker and store) against the
 * simulated platform, and a page at `/` that looks and behaves like a Slack channel.
 *
 * The page never talks to the bot directly. It sends what a person does (a slash command typed in
 * the composer, a form submitted, a button clicked) here; this server turns each into the request
 * Slack would send, signed with the bot's signing secret, and posts it to the bot's own
 * `/slack/events`. What the bot does in return (messages posted and edited, modals opened, answers
 * only the clicker sees) is read back from the simulated Slack and pushed to the page over
 * server-sent events, as the exact JSON the bot sent.
 */
import { rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { DestinationStream } from "pino";
import { z } from "zod";
import { loadConfig } from "../src/config.js";
import { cleanTrace } from "../src/gitlab/trace.js";
import { applyLimits, DEFAULT_LIMITS, healthAnswer, requestPath } from "../src/server.js";
import { startVmbot, StartupError, type RunningVmbot } from "../src/start.js";
import { createSlackSigner, stateValuesFor, type InputValue } from "./simulators/slack/signer.js";
import type { FakeMessage, JsonObject } from "./simulators/slack/index.js";
import { escapeHtml } from "./ui/blockkit.js";
import type { Ephemeral, Snapshot } from "./ui/snapshot.js";
import {
  CHANNEL,
  isScenario,
  PEOPLE,
  SCENARIOS,
  startSimulatedPlatform,
  type Person,
  type SimulatedPlatform,
} from "./platform.js";

export interface SandboxOptions {
  /** The page's port; 0 picks a free one. */
  port: number;
  /** The sandbox's own store, emptied on every start: the simulated platform starts empty too. */
  dbPath: string;
  logLevel: string;
  /** Milliseconds between the simulated runner's steps. */
  paceMs: number;
  /** How long a VM is lent (reminded after a third of it); null or unset: no lease. */
  leaseMs?: number | null;
  logDestination?: DestinationStream;
}

export interface RunningSandbox {
  /** The page, e.g. `http://localhost:3000/`. */
  url: string;
  port: number;
  bot: RunningVmbot;
  platform: SimulatedPlatform;
  stop(): Promise<void>;
}

const MAX_BODY_BYTES = 256 * 1024;

const UI_FILES: Readonly<Record<string, string>> = {
  "/ui/page.css": "text/css; charset=utf-8",
  "/ui/page.js": "text/javascript; charset=utf-8",
  "/ui/blockkit.js": "text/javascript; charset=utf-8",
  "/ui/form-state.js": "text/javascript; charset=utf-8",
};

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/**
 * A request refused with a message for the page: 400 for what the page sent, 413 (which also
 * closes the connection) for a body too large, 502 when the bot did not take what was delivered.
 */
class BadRequest extends Error {
  constructor(
    message: string,
    readonly status: 400 | 413 | 502 = 400,
  ) {
    super(message);
  }
}

const tooLarge = () =>
  new BadRequest(`the request is too large (at most ${MAX_BODY_BYTES / 1024} KB)`, 413);

const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * Short leases, so that a person trying the sandbox sees a reminder and a lease's end in minutes:
 * the lease, up to three times it by Extend, and a reminder when a third of it has passed.
 */
function leaseEnv(leaseMs: number | null): Record<string, string> {
  if (leaseMs === null) return {};
  const seconds = Math.round(leaseMs / 1000);
  return {
    VM_LEASE_DEFAULT: `${seconds}s`,
    VM_LEASE_MAX: `${seconds * 3}s`,
    VM_LEASE_WARN: `${Math.round((seconds * 2) / 3)}s`,
  };
}

/** The bot's direct-message channel with one of the sandbox's people, when `channel` is one. */
function dmOf(channel: string): string | undefined {
  return Object.values(PEOPLE).some((p) => channel === `D${p.id.slice(1)}`) ? channel : undefined;
}

function send(res: ServerResponse, status: number, body: string, type: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, "content-type": type });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, JSON.stringify(body), "application/json; charset=utf-8");
}

async function readJson(req: IncomingMessage): Promise<JsonObject> {
  if (!(req.headers["content-type"] ?? "").startsWith("application/json")) {
    throw new BadRequest("send JSON (content-type: application/json)");
  }
  if (Number(req.headers["content-length"] ?? 0) > MAX_BODY_BYTES) throw tooLarge();
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new BadRequest("the body is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new BadRequest("the body must be a JSON object");
  }
  return parsed as JsonObject;
}

const required = (name: string) => ({
  error: (issue: { input?: unknown }) =>
    issue.input === undefined ? `${name} is missing` : `${name} must be text`,
});
const nonEmpty = (name: string) =>
  z
    .string(required(name))
    .min(1, { error: `${name} is missing` })
    .max(4000, {
      error: `${name} is too long`,
    });

const personSchema = z.enum(Object.keys(PEOPLE) as [Person, ...Person[]], {
  error: (issue) =>
    issue.input === undefined ? "as is missing" : `unknown person ${JSON.stringify(issue.input)}`,
});

/**
 * The page (one load of it in one browser tab) that sent a request. Slack shows a modal in the
 * client whose action made its trigger_id, and the modal goes with that client: a form belongs to
 * its page, and is closed when that page goes away (reloaded or closed).
 */
const tabSchema = z
  .string({ error: "tab must be text" })
  .regex(/^[\w-]{1,64}$/, { error: "tab must be a page's id: letters, digits, - and _" })
  .optional();

const SCHEMAS = {
  command: z.strictObject({ as: personSchema, tab: tabSchema, text: nonEmpty("text") }),
  submit: z.strictObject({
    as: personSchema,
    tab: tabSchema,
    view: nonEmpty("view"),
    values: z
      .record(z.string(), z.string({ error: "values must be text, as typed or chosen" }), {
        error: "values must map each input's action_id to its text",
      })
      .default({}),
  }),
  action: z
    .strictObject({
      as: personSchema,
      tab: tabSchema,
      action: nonEmpty("action"),
      block: nonEmpty("block").optional(),
      ts: nonEmpty("ts").optional(),
      ephemeral: nonEmpty("ephemeral").optional(),
      /** A direct message from the bot (a lease reminder), by its ts. */
      dm: nonEmpty("dm").optional(),
      /** The clicker's own Home tab. */
      home: z.literal(true).optional(),
    })
    .refine(
      (body) =>
        [body.ts, body.ephemeral, body.dm, body.home].filter((at) => at !== undefined).length === 1,
      {
        error:
          "name what was clicked: ts, ephemeral for an answer only you see, dm for a direct message, or home",
      },
    ),
  home: z.strictObject({ as: personSchema, tab: tabSchema }),
  scenario: z.strictObject({
    as: personSchema.optional(),
    tab: tabSchema,
    name: z.string(required("name")).refine(isScenario, {
      error: (issue) => `unknown scenario ${JSON.stringify(issue.input)}`,
    }),
    on: z.boolean({ error: "on must be true or false" }),
  }),
  close: z.strictObject({ as: personSchema, tab: tabSchema, view: nonEmpty("view") }),
};

/** The body as `schema` wants it, or a 400 that says what is wrong. */
function parse<T>(schema: z.ZodType<T>, body: JsonObject): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new BadRequest(parsed.error.issues[0]?.message ?? "the request is not understood");
}

const isRecord = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The bot took a delivery (Slack's own rule: anything but 200 is a failure). */
function delivered(status: number): void {
  if (status !== 200) {
    throw new BadRequest(`The bot answered HTTP ${status} instead of 200; see its log.`, 502);
  }
}

/** A Slack `ts` for a moment in milliseconds. */
const tsOf = (ms: number): string =>
  `${Math.floor(ms / 1000)}.${String((ms % 1000) * 1000).padStart(6, "0")}`;

export async function startSandbox(options: SandboxOptions): Promise<RunningSandbox> {
  // The port first: a second sandbox stops here, before it touches the first one's store.
  const server = createServer({ connectionsCheckingInterval: 1_000 }, (_req, res) => {
    sendJson(res, 503, { status: "unavailable", reason: "the sandbox is starting" });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new StartupError(
      code === "EADDRINUSE"
        ? `port ${options.port} is already in use: stop what uses it or set PORT to another port.`
        : `the sandbox cannot listen on port ${options.port}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const closeServer = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => {
        resolve();
      });
    });

  let platform: SimulatedPlatform | undefined;
  let bot: RunningVmbot;
  try {
    // Its own store, emptied: the simulated platform starts empty on every run.
    for (const suffix of ["", "-wal", "-shm"])
      rmSync(`${options.dbPath}${suffix}`, { force: true });
    platform = await startSimulatedPlatform();
    const config = loadConfig({
      ...platform.env,
      ...leaseEnv(options.leaseMs ?? null),
      VMBOT_DB: options.dbPath,
      PORT: "0",
      LOG_LEVEL: options.logLevel,
    });
    bot = await startVmbot(config, {
      host: "127.0.0.1",
      ...(options.logDestination === undefined ? {} : { logDestination: options.logDestination }),
    });
  } catch (error) {
    await platform?.close();
    await closeServer();
    throw error;
  }
  const { slack } = platform;
  const simulated = platform;
  const botUrl = `http://127.0.0.1:${bot.port}`;
  simulated.run({ webhookUrl: `${botUrl}/gitlab/webhook`, paceMs: options.paceMs });
  const signer = createSlackSigner({
    eventsUrl: `${botUrl}/slack/events`,
    signingSecret: simulated.signingSecret,
    slack,
  });

  // Who did what: Slack ties trigger_ids and response_urls to the person whose action made them.
  const triggerUsers = new Map<string, string>();
  const responseOwners = new Map<string, { user: string; replaces?: string }>();
  const viewUsers = new Map<string, string>();
  /** The page each trigger_id was made in, and so the page each view opened on it is shown in. */
  const triggerTabs = new Map<string, string>();
  const viewTabs = new Map<string, string>();
  const closedViews = new Set<string>();
  const ackAnswers: Ephemeral[] = [];
  let seenCalls = 0;

  /** Views opened since the last look, each given to the person whose trigger_id opened it. */
  function assignViews(): void {
    const calls = slack.calls;
    for (; seenCalls < calls.length; seenCalls += 1) {
      const call = calls[seenCalls];
      if (!call?.ok) continue;
      if (call.method !== "views.open" && call.method !== "views.push") continue;
      // Each views.open or views.push that succeeded made the next view, in order.
      const fresh = slack.views.find((view) => !viewUsers.has(view.id));
      if (fresh === undefined) break;
      viewUsers.set(fresh.id, triggerUsers.get(String(call.args.trigger_id)) ?? "");
      const tab = triggerTabs.get(String(call.args.trigger_id));
      if (tab !== undefined) viewTabs.set(fresh.id, tab);
    }
  }

  /** Everything a person sees only for themselves, in order, with replies applied. */
  function ephemerals(): { channel: FakeMessage[]; own: Ephemeral[] } {
    const own: Ephemeral[] = slack.ephemerals.map((e) => ({
      id: `e${e.message_ts}`,
      user: e.user,
      ts: e.message_ts,
      text: e.text,
      blocks: e.blocks,
    }));
    own.push(...ackAnswers);
    const channel: FakeMessage[] = [];
    slack.responses.forEach((post, index) => {
      const owner = responseOwners.get(post.url);
      if (owner === undefined) return;
      const body = post.body;
      const ts = tsOf(post.at);
      const blocks = Array.isArray(body.blocks) ? (body.blocks as unknown[]) : [];
      const bodyText = typeof body.text === "string" ? body.text : "";
      const target =
        owner.replaces === undefined ? -1 : own.findIndex((e) => e.id === owner.replaces);
      if (body.delete_original === true && target >= 0) {
        own.splice(target, 1);
      } else if (body.replace_original === true && target >= 0) {
        const old = own[target];
        if (old !== undefined) own[target] = { ...old, text: bodyText, blocks };
      } else if (body.response_type === "in_channel") {
        channel.push({
          channel: CHANNEL.id,
          ts,
          text: bodyText,
          blocks: blocks as JsonObject[],
          user: slack.identity.botUserId,
          bot_id: slack.identity.botId,
          app_id: slack.identity.appId,
        });
      } else {
        own.push({ id: `r${index}`, user: owner.user, ts, text: bodyText, blocks });
      }
    });
    own.sort((a, b) => Number(a.ts) - Number(b.ts));
    return { channel, own };
  }

  function snapshot(): Snapshot {
    assignViews();
    const { channel, own } = ephemerals();
    const messages = [...slack.messages.filter((m) => m.channel === CHANNEL.id), ...channel].sort(
      (a, b) => Number(a.ts) - Number(b.ts),
    );
    const views: Snapshot["views"] = [];
    for (const [id, user] of viewUsers) {
      const view = slack.view(id);
      const tab = viewTabs.get(id);
      if (view !== undefined && !closedViews.has(id)) {
        views.push({ user, view, ...(tab === undefined ? {} : { tab }) });
      }
    }
    const scenarios = simulated.scenarios();
    // Each person's Home tab as the bot last published it, and the bot's direct messages.
    const homes: Snapshot["homes"] = {};
    for (const who of Object.values(PEOPLE)) {
      const home = slack.home(who.id);
      if (home !== undefined) homes[who.id] = { id: home.id, hash: home.hash, blocks: home.blocks };
    }
    const direct = slack.messages.filter((m) => m.channel === dmOf(m.channel));
    return {
      channel: CHANNEL,
      bot: { id: slack.identity.botUserId, name: "vmbot" },
      // Links to the simulated GitLab open its pipelines and job logs through this server.
      gitlab: simulated.gitlab.url,
      people: PEOPLE,
      messages,
      ephemerals: own,
      homes,
      direct,
      views,
      files: slack.uploads.filter((u) => u.completed).map((u) => u.id),
      scenarios: Object.entries(SCENARIOS).map(([name, about]) => ({
        name,
        ...about,
        on: scenarios[name as keyof typeof scenarios],
      })),
    };
  }

  // Live updates: one snapshot per burst of changes, to every open page.
  const streams = new Set<ServerResponse>();
  let pending: NodeJS.Timeout | undefined;
  let stopping = false;
  const broadcast = (): void => {
    if (stopping || pending !== undefined || streams.size === 0) return;
    pending = setTimeout(() => {
      pending = undefined;
      const data = `event: state\ndata: ${JSON.stringify(snapshot())}\n\n`;
      for (const stream of streams) stream.write(data);
    }, 40);
  };
  const stopWatching = slack.onChange(broadcast);
  const heartbeat = setInterval(() => {
    for (const stream of streams) stream.write(": still here\n\n");
  }, 15_000);
  heartbeat.unref();

  /** The page `tab` went away (reloaded or closed): its forms go with it, as in Slack. */
  function closeFormsOf(tab: string): void {
    assignViews();
    let closed = false;
    for (const [id, owner] of viewTabs) {
      if (owner !== tab || closedViews.has(id)) continue;
      closedViews.add(id);
      closed = true;
    }
    if (closed) broadcast();
  }

  async function command(body: JsonObject): Promise<unknown> {
    const input = parse(SCHEMAS.command, body);
    const who = PEOPLE[input.as];
    const match = /^(\/\S+)\s*([\s\S]*)$/.exec(input.text.trim());
    if (match?.[1] !== "/vm") {
      throw new BadRequest("Only /vm is installed in this workspace: try /vm help.");
    }
    // Whose they are is known before the bot can use them: its answers may come before ours.
    const triggerId = slack.issueTriggerId();
    const responseUrl = slack.issueResponseUrl();
    triggerUsers.set(triggerId, who.id);
    if (input.tab !== undefined) triggerTabs.set(triggerId, input.tab);
    responseOwners.set(responseUrl, { user: who.id });
    const delivery = await signer.slashCommand({
      command: "/vm",
      text: match[2] ?? "",
      userId: who.id,
      userName: who.name,
      channelId: CHANNEL.id,
      channelName: CHANNEL.name,
      triggerId,
      responseUrl,
    });
    delivered(delivery.status);
    const answer = delivery.body.trim();
    if (answer !== "") {
      // A command answered in its ack: shown to the person who typed it.
      let reply: JsonObject = { text: answer };
      try {
        const parsed: unknown = JSON.parse(answer);
        if (isRecord(parsed)) reply = parsed;
      } catch {
        // Plain text.
      }
      ackAnswers.push({
        id: `a${ackAnswers.length}`,
        user: who.id,
        ts: tsOf(Date.now()),
        text: typeof reply.text === "string" ? reply.text : "",
        blocks: Array.isArray(reply.blocks) ? (reply.blocks as unknown[]) : [],
      });
      broadcast();
    }
    return { status: delivery.status };
  }

  /** The open form `id` of `user`; a closed one, or someone else's, is refused. */
  function ownForm(id: string, user: string) {
    assignViews();
    const view = slack.view(id);
    if (view === undefined || closedViews.has(view.id)) throw new BadRequest("that form is closed");
    if (viewUsers.get(view.id) !== user) throw new BadRequest("that form is someone else's");
    return view;
  }

  async function submit(body: JsonObject): Promise<unknown> {
    const input = parse(SCHEMAS.submit, body);
    const who = PEOPLE[input.as];
    const view = ownForm(input.view, who.id);
    const entries: Record<string, InputValue> = {};
    for (const [actionId, value] of Object.entries(input.values)) {
      entries[actionId] = value === "" ? null : value;
    }
    let values;
    try {
      values = stateValuesFor(view, entries);
    } catch (error) {
      throw new BadRequest((error as Error).message);
    }
    const triggerId = slack.issueTriggerId({ viewId: view.id });
    triggerUsers.set(triggerId, who.id);
    if (input.tab !== undefined) triggerTabs.set(triggerId, input.tab);
    const delivery = await signer.viewSubmission({
      view,
      values,
      userId: who.id,
      userName: who.name,
      triggerId,
    });
    delivered(delivery.status);
    if (delivery.json?.response_action === "errors") {
      return { status: delivery.status, errors: delivery.json.errors };
    }
    closedViews.add(view.id);
    broadcast();
    return { status: delivery.status };
  }

  async function action(body: JsonObject): Promise<unknown> {
    const input = parse(SCHEMAS.action, body);
    const who = PEOPLE[input.as];
    if (input.home === true) return homeAction(input.action, who, input.tab, input.block);
    let message: FakeMessage | undefined;
    if (input.dm !== undefined) {
      message = slack.message(`D${who.id.slice(1)}`, input.dm);
      if (message === undefined) throw new BadRequest("that message is gone");
    } else if (input.ephemeral !== undefined) {
      const found = ephemerals().own.find((e) => e.id === input.ephemeral && e.user === who.id);
      if (found === undefined) throw new BadRequest("that message is gone");
      message = {
        channel: CHANNEL.id,
        ts: found.ts,
        text: found.text,
        blocks: found.blocks as JsonObject[],
        user: slack.identity.botUserId,
        bot_id: slack.identity.botId,
        app_id: slack.identity.appId,
      };
    } else {
      message = slack.message(CHANNEL.id, input.ts ?? "");
      if (message === undefined) throw new BadRequest("that message is gone");
    }
    const triggerId = slack.issueTriggerId();
    const responseUrl = slack.issueResponseUrl();
    triggerUsers.set(triggerId, who.id);
    if (input.tab !== undefined) triggerTabs.set(triggerId, input.tab);
    responseOwners.set(responseUrl, {
      user: who.id,
      ...(input.ephemeral === undefined ? {} : { replaces: input.ephemeral }),
    });
    let delivery;
    try {
      delivery = await signer.blockAction({
        message,
        ephemeral: input.ephemeral !== undefined,
        userId: who.id,
        userName: who.name,
        actionId: input.action,
        ...(input.block === undefined ? {} : { blockId: input.block }),
        triggerId,
        responseUrl,
      });
    } catch (error) {
      if (error instanceof Error && /action_id|block/.test(error.message)) {
        throw new BadRequest(error.message);
      }
      throw error;
    }
    delivered(delivery.status);
    return { status: delivery.status };
  }

  /** A button of `who`'s own Home tab, clicked: a block action from the view, as Slack sends it. */
  async function homeAction(
    actionId: string,
    who: (typeof PEOPLE)[Person],
    tab: string | undefined,
    blockId: string | undefined,
  ): Promise<unknown> {
    const view = slack.home(who.id);
    if (view === undefined) throw new BadRequest("your Home tab is not published yet");
    const triggerId = slack.issueTriggerId({ viewId: view.id });
    triggerUsers.set(triggerId, who.id);
    if (tab !== undefined) triggerTabs.set(triggerId, tab);
    let delivery;
    try {
      delivery = await signer.blockAction({
        view,
        userId: who.id,
        userName: who.name,
        actionId,
        ...(blockId === undefined ? {} : { blockId }),
        triggerId,
      });
    } catch (error) {
      if (error instanceof Error && /action_id|block/.test(error.message)) {
        throw new BadRequest(error.message);
      }
      throw error;
    }
    delivered(delivery.status);
    return { status: delivery.status };
  }

  /** Someone opened the app's Home tab: Slack's signed app_home_opened, to the bot. */
  async function openHome(body: JsonObject): Promise<unknown> {
    const input = parse(SCHEMAS.home, body);
    const delivery = await signer.appHomeOpened({ userId: PEOPLE[input.as].id });
    delivered(delivery.status);
    return { status: delivery.status };
  }

  function scenario(body: JsonObject): unknown {
    const input = parse(SCHEMAS.scenario, body);
    simulated.setScenario(input.name, input.on);
    broadcast();
    return { scenarios: simulated.scenarios() };
  }

  const posts: Readonly<Record<string, (body: JsonObject) => unknown>> = {
    "/sandbox/command": command,
    "/sandbox/submit": submit,
    "/sandbox/action": action,
    "/sandbox/scenario": scenario,
    "/sandbox/home": openHome,
    "/sandbox/close": (body) => {
      const input = parse(SCHEMAS.close, body);
      closedViews.add(ownForm(input.view, PEOPLE[input.as].id).id);
      broadcast();
      return {};
    },
  };

  const notShown = webPage(
    "Not in the sandbox",
    "<p>The simulated GitLab shows pipelines and job logs only.</p>",
  );

  /** The simulated GitLab's pipeline and job pages, for the links the bot posts. */
  function gitlabPage(webPath: string): string | undefined {
    const pipelineId = /^\/[\w.-]+(?:\/[\w.-]+)*\/-\/pipelines\/(\d+)$/.exec(webPath)?.[1];
    const jobId = /^\/[\w.-]+(?:\/[\w.-]+)*\/-\/jobs\/(\d+)$/.exec(webPath)?.[1];
    const { pipelines } = simulated.gitlab;
    if (pipelineId !== undefined) {
      const pipeline = pipelines.find((p) => p.id === Number(pipelineId));
      if (pipeline === undefined) return undefined;
      const base = webPath.replace(/\/-\/pipelines\/\d+$/, "");
      const jobs = pipeline.jobs
        .map(
          (job) =>
            `<li><a href="/sandbox/gitlab${escapeHtml(base)}/-/jobs/${job.id}">${escapeHtml(job.name)}</a> <span class="sb-job-status">${escapeHtml(job.status)}</span></li>`,
        )
        .join("");
      return webPage(
        `Pipeline #${pipeline.id}: ${pipeline.status}`,
        `<p>Ref <code>${escapeHtml(pipeline.ref)}</code>, inputs <code>${escapeHtml(JSON.stringify(pipeline.inputs))}</code></p><ul>${jobs}</ul>`,
      );
    }
    if (jobId !== undefined) {
      const job = pipelines.flatMap((p) => p.jobs).find((j) => j.id === Number(jobId));
      if (job === undefined) return undefined;
      const log = job.log === "" ? "(no log yet)" : cleanTrace(job.log);
      return webPage(
        `Job #${job.id} ${job.name}: ${job.status}`,
        `<pre class="bk-pre">${escapeHtml(log)}</pre>`,
      );
    }
    return undefined;
  }

  const uiDir = new URL("./ui/", import.meta.url);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Only this machine's own names: a page elsewhere that rebinds its DNS name to 127.0.0.1
    // must not drive the bot as any of the sandbox's people.
    const host = (req.headers.host ?? "").replace(/:\d+$/, "");
    if (!LOCAL_HOSTS.has(host)) {
      send(
        res,
        421,
        "Open the sandbox at http://localhost/ on this machine.",
        "text/plain; charset=utf-8",
      );
      return;
    }
    const path = requestPath(req);
    if (path === undefined) {
      send(res, 400, "Malformed request-target.", "text/plain; charset=utf-8");
      return;
    }
    if (req.method === "GET" && path === "/") {
      send(res, 200, PAGE, "text/html; charset=utf-8");
      return;
    }
    if (req.method === "GET" && path === "/healthz") {
      const answer = healthAnswer(await bot.health());
      sendJson(res, answer.status, answer.body);
      return;
    }
    const uiType = UI_FILES[path];
    if (req.method === "GET" && uiType !== undefined) {
      const file = await readFile(new URL(path.slice("/ui/".length), uiDir)).catch(() => undefined);
      if (file === undefined) {
        send(
          res,
          404,
          "The page's files are missing: run npm run build.",
          "text/plain; charset=utf-8",
        );
      } else {
        send(res, 200, file.toString("utf8"), uiType);
      }
      return;
    }
    if (req.method === "GET" && path === "/sandbox/events") {
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        "content-type": "text/event-stream; charset=utf-8",
        connection: "keep-alive",
      });
      res.write(`event: state\ndata: ${JSON.stringify(snapshot())}\n\n`);
      streams.add(res);
      const query = new URL(req.url ?? "/", "http://sandbox").searchParams;
      const tab = tabSchema.safeParse(query.get("tab") ?? undefined).data;
      req.on("close", () => {
        streams.delete(res);
        if (tab !== undefined) closeFormsOf(tab);
      });
      return;
    }
    if (req.method === "GET" && path.startsWith("/sandbox/gitlab/")) {
      const page = gitlabPage(path.slice("/sandbox/gitlab".length));
      send(res, page === undefined ? 404 : 200, page ?? notShown, "text/html; charset=utf-8");
      return;
    }
    const file = /^\/sandbox\/files\/([A-Z0-9]+)$/.exec(path);
    if (req.method === "GET" && file !== null) {
      const upload = slack.uploads.find((u) => u.id === file[1] && u.completed);
      if (upload === undefined) {
        send(res, 404, "No such file.", "text/plain; charset=utf-8");
        return;
      }
      res.setHeader(
        "content-disposition",
        `inline; filename="${upload.filename.replace(/[^\w.-]/g, "_")}"`,
      );
      send(res, 200, upload.content ?? "", "text/plain; charset=utf-8");
      return;
    }
    const post = posts[path];
    if (post !== undefined) {
      if (req.method !== "POST") {
        sendJson(res, 405, { error: "use POST" });
        return;
      }
      try {
        sendJson(res, 200, await post(await readJson(req)));
      } catch (error) {
        if (!(error instanceof BadRequest)) throw error;
        // The rest of a body too large is never read: the connection cannot be reused.
        if (error.status === 413) res.setHeader("connection", "close");
        sendJson(res, error.status, { error: error.message });
      }
      return;
    }
    send(res, 404, "Not found.", "text/plain; charset=utf-8");
  }

  // The bot's own port has these bounds already; the page's gets them too.
  applyLimits(server, { ...DEFAULT_LIMITS, maxBodyBytes: MAX_BODY_BYTES }, bot.log);
  server.removeAllListeners("request");
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      bot.log.error({ err: error }, "the sandbox page server could not answer");
      if (!res.headersSent) {
        sendJson(res, 500, { error: "the sandbox could not do that; see the log" });
      } else {
        res.end();
      }
    });
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://localhost:${port}/`,
    port,
    bot,
    platform: simulated,
    async stop() {
      // The runner first: no more webhooks or changes while the bot finishes its work.
      simulated.pause();
      stopping = true;
      stopWatching();
      clearInterval(heartbeat);
      clearTimeout(pending);
      for (const stream of streams) stream.end();
      streams.clear();
      await closeServer();
      await bot.stop(3_000);
      await simulated.close();
    },
  };
}

/** A plain page of the simulated GitLab: `body` is HTML already escaped. */
function webPage(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/page.css">
</head>
<body class="sb-gitlab">
<p class="sb-note">Simulated GitLab</p>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`;
}

/** The page: a shell the script fills in; no inline script or style, so the CSP stays strict. */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>vmbot sandbox</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/page.css">
<script type="module" src="/ui/page.js"></script>
</head>
<body>
<div class="sb-app">
  <aside class="sb-sidebar">
    <div class="sb-workspace">Sandbox workspace</div>
    <div class="sb-section">Channels</div>
    <button type="button" class="sb-channel-link" data-pane="channel" aria-current="page"># ${CHANNEL.name}</button>
    <div class="sb-section">Apps</div>
    <button type="button" class="sb-channel-link" data-pane="home">vmbot</button>
    <div class="sb-section">You are</div>
    <div class="sb-people" id="people" role="radiogroup" aria-label="Who you are"></div>
    <div class="sb-section">Simulated platform</div>
    <div class="sb-scenarios" id="scenarios"></div>
    <p class="sb-note">Slack, GitLab, Proxmox and Vault are simulated on this machine. Nothing real is touched.</p>
  </aside>
  <main class="sb-main">
    <header class="bk-channel-header sb-channel-header"><h1># ${CHANNEL.name}</h1><span class="sb-status" id="status">connecting…</span></header>
    <section class="bk-channel-messages" id="messages" aria-live="polite"></section>
    <section class="sb-home" id="home" aria-live="polite" hidden>
      <div class="sb-home-tab" id="home-view"></div>
      <h2 class="sb-home-heading">Messages</h2>
      <div class="sb-home-messages" id="direct"></div>
    </section>
    <form class="bk-composer sb-composer" id="composer" autocomplete="off">
      <input id="composer-input" name="text" aria-label="Message #${CHANNEL.name}" placeholder="Type /vm create web-01, /vm capacity, /vm unlock or /vm help">
      <button type="submit" class="bk-button bk-button-primary">Send</button>
    </form>
    <div class="sb-composer-error" id="composer-error" role="alert"></div>
  </main>
</div>
<div id="modal-root"></div>
<div id="confirm-root"></div>
</body>
</html>
`;
