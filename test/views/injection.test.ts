import {
  extendMessage,
  extensionApproversWords,
  extensionAskedWords,
  extensionExpiredWords,
  extensionToldWords,
} from "../../src/views/extend.js";
import { GitbeakerRequestError } from "@gitbeaker/rest";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseAnsibleOutput, type AnsibleRun } from "../../src/ansible/recap.js";
import { userMessage } from "../../src/views/errors.js";
import { gitlabError } from "../../src/gitlab/errors.js";
import { REQUEST_STATUSES, type RequestRecord } from "../../src/store/store.js";
import { deriveCounts, type PlanResource } from "../../src/terraform/plan-text.js";
import { capacityFailure, capacityMessage, capacityUsage } from "../../src/views/capacity.js";
import { createModal, liveNodeOptions } from "../../src/views/create-modal.js";
import {
  destroyAskedReply,
  destroyCanceledReply,
  destroyConfirmation,
  destroyedWords,
  destroyFailedNote,
  destroyFailedWords,
  destroyMessage,
  destroyRefusedReply,
  goneVmReply,
  inFlightReply,
  noDestroyJobWords,
  unknownVmReply,
} from "../../src/views/destroy.js";
import { helpMessage } from "../../src/views/help.js";
import { homeDestroyModal, homeView } from "../../src/views/home.js";
import {
  approvalWindowWords,
  approverMentions,
  approversCalledWords,
  requesterToldWords,
} from "../../src/views/notify.js";
import { planMessage } from "../../src/views/plan-message.js";
import { recapText } from "../../src/views/recap.js";
import { rejectModal } from "../../src/views/reject.js";
import {
  causeWords,
  failureExcerptWords,
  jobFailedWords,
  noNextStepWords,
  notYoursToPlanAgain,
  notYoursToRetry,
  plannedAgainReply,
  retryNotTakenWords,
  retryRefusedWords,
  retryStartedWords,
  retryUnknownWords,
} from "../../src/views/failure.js";
import { FAILURE_CAUSES } from "../../src/tracker/failure-cause.js";
import { notYoursToWithdraw, stillStartingWords } from "../../src/views/withdraw.js";
import { renderRequest } from "../../src/views/render.js";
import { requestMessage } from "../../src/views/request-message.js";
import {
  alreadyUnlocked,
  failure,
  leftLocked,
  lockChanged,
  notLocked,
  stateMissing,
  stillLocked,
  unlocked,
  unlockedNotice,
  unlockPrompt,
} from "../../src/views/unlock.js";
import { HOSTILE_STRINGS, hostileText } from "../support/generators.js";
import { sampleRequest, SAMPLE_SPEC } from "../support/requests.js";

/**
 * Text from outside the bot (names people type, node names from Proxmox, GitLab usernames and
 * state names, Terraform addresses, Ansible hosts, tasks and messages, GitLab's error texts) must
 * reach Slack inert in every view: it can mention nobody, link nowhere, and never close a code
 * span the bot opened. Each view is rendered with hostile text in every such place, and every
 * mrkdwn text it produces (the message's `text` included) is checked.
 */

const REQUESTER = "U0REQ";
const APPROVER = "U0APPROVER";
const ADMIN = "U0ADMIN";
/** The bot's own mentions: of the people in the request, never of anyone named by outside text. */
const KNOWN_USERS = new Set([REQUESTER, APPROVER, ADMIN]);
/** The approvers' user group, which the bot mentions when a plan waits for them. */
const KNOWN_GROUPS = new Set(["S0APPROVERS"]);
/** The channels the bot names in its own words (a request's, the configured one). */
const KNOWN_CHANNELS = new Set(["C0CHAN"]);
const GITLAB = "https://gitlab.example.com/";
const PROXMOX = "https://pve.example.com:8006";
/** The workspace's own address: the Home links to request messages there. */
const SLACK = "https://vmbot-test.slack.com/";
const TRUSTED_URLS = [GITLAB, PROXMOX, SLACK];

/** Every place a view takes text from outside. */
interface Outside {
  vmName: string;
  node: string;
  templateName: string;
  ip: string;
  gateway: string;
  dns: string;
  address: string;
  note: string;
  gitlabText: string;
  resource: string;
  mismatch: string;
  nodeName: string;
  stateName: string;
  project: string;
  lockedBy: string;
  lockedAt: string;
  host: string;
  task: string;
  item: string;
  message: string;
  play: string;
  command: string;
}

const FIELDS: (keyof Outside)[] = [
  "vmName",
  "node",
  "templateName",
  "ip",
  "gateway",
  "dns",
  "address",
  "note",
  "gitlabText",
  "resource",
  "mismatch",
  "nodeName",
  "stateName",
  "project",
  "lockedBy",
  "lockedAt",
  "host",
  "task",
  "item",
  "message",
  "play",
  "command",
];

const everywhere = (text: string): Outside =>
  Object.fromEntries(FIELDS.map((field) => [field, text])) as unknown as Outside;

/** GitLab refusing a request, with `description` as the body of its answer. */
function gitlabRefusal(status: number, description: string, project: string): string {
  const error = new GitbeakerRequestError("refused", {
    cause: {
      description,
      request: new Request(`${GITLAB}api/v4/projects/1/pipeline`),
      response: new Response(null, { status }),
    },
  });
  return userMessage(
    gitlabError(error, {
      url: GITLAB,
      project,
      ask: { what: "create_pipeline" },
      timeoutMs: 10_000,
    }),
  );
}

interface Payload {
  view: string;
  payload: unknown;
}

/** Every view the bot posts, fed `o` wherever it takes outside text. */
function renderAll(o: Outside): Payload[] {
  const spec = {
    ...SAMPLE_SPEC,
    name: o.vmName,
    node: o.node,
    templateName: o.templateName,
    ip: o.ip,
    gateway: o.gateway,
    dns: o.dns,
  };
  const resources: PlanResource[] = [
    { address: o.resource, action: "create" },
    { address: `${o.resource}.db`, action: "delete" },
    { address: `module.${o.resource}`, action: "replace", replaceOrder: "create-first" },
    { address: o.resource, action: "update" },
  ];
  const plan = {
    resources,
    counts: { add: 2, change: 1, destroy: 2 },
    derivedCounts: deriveCounts(resources),
    noChanges: false,
    errors: [{ summary: o.message, detail: o.message }],
    mismatch: o.mismatch,
    outputChanges: [{ name: o.resource, action: "create" as const }],
    notes: [o.note],
  };
  const nodes = [
    { name: o.nodeName, online: true, cpuPercent: 12, memoryUsedGb: 3, memoryTotalGb: 16 },
    { name: o.node, online: false },
  ];
  const base: Partial<RequestRecord> = {
    requester: REQUESTER,
    spec,
    notes: [o.note, `The name was folded to lower case: ${o.vmName}.`],
    pipelineId: 42,
    pipelineUrl: `${GITLAB}infra/vms/-/pipelines/42`,
    address: o.address,
    messageTs: "1700000000.000100",
  };
  const errors = [
    gitlabRefusal(400, o.gitlabText, o.project),
    gitlabRefusal(422, `rules configuration prevented any jobs ${o.gitlabText}`, o.project),
    gitlabRefusal(
      422,
      JSON.stringify({ base: [o.gitlabText], [o.gitlabText]: [o.gitlabText] }),
      o.project,
    ),
    gitlabRefusal(403, o.gitlabText, o.project),
    gitlabRefusal(404, o.gitlabText, o.project),
  ];
  const payloads: Payload[] = [];
  const planFiles = ["uploaded", "failed", "none"] as const;
  REQUEST_STATUSES.forEach((status, n) => {
    // Only a failed or canceled request shows its error: those get every one, the others one.
    const shown =
      status === "failed" || status === "canceled" ? errors : [errors[n % errors.length]];
    shown.forEach((error, m) => {
      const request = sampleRequest({ ...base, status, error: error ?? null });
      payloads.push({ view: `requestMessage(${status})`, payload: requestMessage(request) });
      const review = {
        plan,
        nodes,
        planJobId: 7,
        planJobUrl: `${GITLAB}infra/vms/-/jobs/7`,
        planFile: planFiles[(n + m) % planFiles.length] ?? "none",
        expiresAt: "2026-12-03T10:05:00.000Z",
        approvers: [APPROVER, "S0APPROVERS"],
      };
      const decision =
        status === "awaiting_approval"
          ? null
          : { kind: "approved" as const, by: APPROVER, at: "2026-12-02T10:05:00.000Z" };
      const reviewed = sampleRequest({ ...base, status, error: error ?? null, review, decision });
      payloads.push({ view: `renderRequest(${status})`, payload: renderRequest(reviewed) });
      const told = requesterToldWords({ ...reviewed, decision: decision ?? null });
      if (told !== undefined) {
        payloads.push({ view: `requesterToldWords(${status})`, payload: { text: told } });
      }
      payloads.push({
        view: `planMessage(${status})`,
        payload: planMessage(reviewed, { ...review, plan: { ...plan, noChanges: true } }),
      });
    });
  });

  // A failure: its cause, its excerpt in the thread, its next step and the answers around it.
  const failedJob = { name: o.gitlabText, status: "failed", webUrl: `${GITLAB}infra/vms/-/jobs/9` };
  for (const cause of FAILURE_CAUSES) {
    const words = causeWords({ cause, lockedBy: o.lockedBy, summary: o.message });
    payloads.push({ view: "causeWords", payload: { text: words } });
    payloads.push({
      view: "jobFailedWords",
      payload: {
        text: jobFailedWords(cause === "unreachable" ? "configure" : "plan", failedJob, words),
      },
    });
  }
  payloads.push(
    {
      view: "failureExcerptWords",
      payload: { text: failureExcerptWords("error", o.message, undefined) },
    },
    {
      view: "failureExcerptWords",
      payload: { text: failureExcerptWords("tail", o.message, "(the log was cut)") },
    },
  );
  const again = { requestId: "vm-abc-5678", by: REQUESTER, at: "2026-12-02T10:05:00.000Z" };
  for (const failure of [
    { stage: "configure" as const, jobId: 9, cause: "unreachable" as const, retries: 1 },
    { stage: "plan" as const, jobId: 7, cause: "state_locked" as const },
    { stage: "plan" as const, jobId: 7, again },
  ]) {
    const ended = sampleRequest({ ...base, status: "failed", error: errors[0] ?? null, failure });
    payloads.push({ view: `requestMessage(failure)`, payload: requestMessage(ended) });
    payloads.push({
      view: `renderRequest(failure)`,
      payload: renderRequest({
        ...ended,
        review: {
          plan,
          nodes,
          planJobId: 7,
          planJobUrl: `${GITLAB}infra/vms/-/jobs/7`,
          planFile: "uploaded",
        },
      }),
    });
    payloads.push(
      { view: "noNextStepWords", payload: { text: noNextStepWords(ended, "retry") } },
      { view: "noNextStepWords", payload: { text: noNextStepWords(ended, "again") } },
    );
  }
  // A rejection with the rejecter's reason, which is outside text too.
  const rejected = sampleRequest({
    ...base,
    status: "rejected",
    decision: { kind: "rejected", by: APPROVER, at: "2026-12-02T10:05:00.000Z", reason: o.message },
  });
  payloads.push(
    { view: "requestMessage(reason)", payload: requestMessage(rejected) },
    {
      view: "renderRequest(reason)",
      payload: renderRequest({
        ...rejected,
        review: { plan, nodes, planJobId: 7, planJobUrl: `${GITLAB}j/7`, planFile: "none" },
      }),
    },
    { view: "requesterToldWords(reason)", payload: { text: requesterToldWords(rejected) } },
    { view: "rejectModal", payload: rejectModal(rejected) },
  );
  const ended = sampleRequest({ ...base, status: "failed" });
  payloads.push(
    {
      view: "notYoursToRetry",
      payload: { text: notYoursToRetry(ended, [APPROVER, "S0APPROVERS"]) },
    },
    { view: "notYoursToPlanAgain", payload: { text: notYoursToPlanAgain(ended) } },
    {
      view: "retryStartedWords",
      payload: {
        text: retryStartedWords(APPROVER, { id: 10, webUrl: `${GITLAB}infra/vms/-/jobs/10` }),
      },
    },
    { view: "retryRefusedWords", payload: { text: retryRefusedWords(ended, errors[0] ?? "") } },
    { view: "retryNotTakenWords", payload: { text: retryNotTakenWords(errors[1] ?? "") } },
    { view: "retryUnknownWords", payload: { text: retryUnknownWords(ended) } },
    { view: "plannedAgainReply", payload: { text: plannedAgainReply(REQUESTER, ended) } },
  );

  const run: AnsibleRun = {
    recapFound: true,
    plays: [o.play],
    hosts: [
      {
        host: o.host,
        ok: 1,
        changed: 1,
        unreachable: 0,
        failed: 1,
        skipped: 0,
        rescued: 0,
        ignored: 0,
      },
    ],
    failures: [
      {
        host: o.host,
        task: o.task,
        play: o.play,
        kind: "failed",
        message: o.message,
        item: o.item,
        ignored: false,
      },
      { host: o.host, task: o.task, kind: "unreachable", message: o.message, ignored: false },
    ],
  };
  payloads.push({ view: "recapText", payload: { text: recapText(run) } });
  const waiting = sampleRequest({ ...base, status: "awaiting_approval" });
  const mentions = approverMentions([APPROVER, "S0APPROVERS"]);
  payloads.push({
    view: "approversCalledWords",
    payload: { text: approversCalledWords(waiting, mentions, "2026-12-03T10:05:00.000Z") },
  });
  payloads.push({ view: "notYoursToWithdraw", payload: { text: notYoursToWithdraw(waiting) } });
  payloads.push({ view: "stillStartingWords", payload: { text: stillStartingWords(waiting) } });
  payloads.push({
    view: "approvalWindowWords",
    payload: { text: approvalWindowWords(mentions, "2026-12-03T10:05:00.000Z") },
  });
  // The same names through the parser, from the log ansible-playbook would print.
  const log = [
    `PLAY [${o.play}] ***`,
    `TASK [${o.task}] ***`,
    `fatal: [${o.host}]: FAILED! => ${JSON.stringify({ msg: o.message })}`,
    `failed: [${o.host}] (item=${o.item}) => ${JSON.stringify({ msg: o.message, stderr: o.message })}`,
    `fatal: [${o.host}]: UNREACHABLE! => {"msg": ${JSON.stringify(o.message)}, "unreachable": true}`,
    "PLAY RECAP ***",
    `${o.host} : ok=1 changed=0 unreachable=1 failed=1 skipped=0 rescued=0 ignored=0`,
  ].join("\n");
  payloads.push({
    view: "recapText(parsed)",
    payload: { text: recapText(parseAnsibleOutput(log)) },
  });

  const proxmoxNodes = [
    {
      name: o.nodeName,
      status: "online" as const,
      cores: 8,
      cpu: 0.2,
      memUsed: 1e9,
      memTotal: 8e9,
      diskUsed: 1e10,
      diskTotal: 1e11,
    },
    { name: o.node, status: "offline" as const, cores: 4 },
    { name: `${o.nodeName}2`, status: "unknown" as const },
    { name: `${o.nodeName}3`, status: "online" as const },
  ];
  payloads.push({
    view: "capacityMessage",
    payload: capacityMessage({
      nodes: proxmoxNodes,
      source: PROXMOX,
      at: new Date("2026-12-02T10:00:00Z"),
    }),
  });
  payloads.push({
    view: "capacityMessage(public)",
    payload: capacityMessage({
      nodes: proxmoxNodes,
      source: PROXMOX,
      at: new Date("2026-12-02T10:00:00Z"),
      askedBy: REQUESTER,
    }),
  });
  payloads.push({ view: "capacityUsage", payload: capacityUsage(o.command) });
  for (const error of errors)
    payloads.push({ view: "capacityFailure", payload: capacityFailure(error) });

  const now = new Date("2026-12-02T12:00:00Z");
  const lock = { name: o.stateName, lockedAt: o.lockedAt, lockedBy: o.lockedBy };
  const dated = { ...lock, lockedAt: "2026-12-02T08:47:30Z" };
  payloads.push(
    { view: "notLocked", payload: notLocked(o.stateName) },
    {
      view: "stateMissing",
      payload: stateMissing(o.stateName, o.project, [o.stateName, "general"]),
    },
    { view: "unlockPrompt", payload: unlockPrompt(lock, now) },
    { view: "unlockPrompt(dated)", payload: unlockPrompt(dated, now) },
    { view: "unlockPrompt(no holder)", payload: unlockPrompt({ ...dated, lockedBy: null }, now) },
    { view: "leftLocked", payload: leftLocked(o.stateName) },
    { view: "lockChanged", payload: lockChanged(o.stateName) },
    { view: "alreadyUnlocked", payload: alreadyUnlocked(o.stateName) },
    { view: "stillLocked", payload: stillLocked(o.stateName) },
    { view: "unlocked", payload: unlocked(o.stateName) },
    { view: "unlockedNotice", payload: unlockedNotice(ADMIN, lock, now) },
    ...errors.map((error) => ({ view: "unlock failure", payload: failure(error) })),
  );

  payloads.push({ view: "helpMessage", payload: helpMessage(o.command) });

  // `/vm destroy`: the VM as the inventory holds it, and its destroy request.
  const vm = {
    name: o.vmName,
    requestId: "vm-mabc123-0a1b2c3d",
    owner: REQUESTER,
    spec,
    stateName: o.stateName,
    address: o.address,
    pipelineId: 42,
    approvedBy: APPROVER,
    createdAt: "2026-12-01T09:00:00Z",
    leaseUntil: null,
    status: "gone" as const,
    statusNote: o.note,
    checkedAt: null,
  };
  const destroyJob = {
    id: 7,
    name: o.stateName,
    stage: "destroy",
    status: "failed",
    webUrl: `${GITLAB}infra/vms/-/jobs/7`,
    finishedAt: null,
    user: o.lockedBy,
    hasArtifacts: false,
  };
  const destroying = sampleRequest({ ...base, kind: "destroy", status: "awaiting_approval" });
  payloads.push(
    { view: "destroyRefusedReply", payload: destroyRefusedReply(vm, [ADMIN, "S0APPROVERS"]) },
    { view: "unknownVmReply", payload: unknownVmReply(o.command, [o.vmName]) },
    { view: "inFlightReply", payload: inFlightReply(o.vmName, destroying) },
    { view: "goneVmReply", payload: goneVmReply(vm) },
    { view: "destroyConfirmation", payload: destroyConfirmation(vm, now) },
    { view: "destroyCanceledReply", payload: destroyCanceledReply(o.vmName) },
    { view: "destroyAskedReply", payload: destroyAskedReply(o.vmName, "C0CHAN") },
    { view: "destroyMessage", payload: destroyMessage(destroying) },
    { view: "destroyedWords", payload: { text: destroyedWords(destroying, destroyJob) } },
    { view: "destroyFailedWords", payload: { text: destroyFailedWords(destroyJob) } },
    { view: "destroyFailedNote", payload: { text: destroyFailedNote(destroyJob) } },
    { view: "noDestroyJobWords", payload: { text: noDestroyJobWords(o.stateName) } },
  );

  // A longer lease asked for: its request message while it waits, once extended, and rejected.
  const extending = sampleRequest({
    ...base,
    kind: "extend",
    status: "awaiting_approval",
    spec: { ...spec, leaseMs: 7_200_000 },
  });
  const extended = {
    ...extending,
    status: "ready" as const,
    decision: { kind: "approved" as const, by: APPROVER, at: "2026-12-02T10:05:00.000Z" },
  };
  const refused = {
    ...extending,
    status: "rejected" as const,
    decision: {
      kind: "rejected" as const,
      by: APPROVER,
      at: "2026-12-02T10:05:00.000Z",
      reason: o.message,
    },
  };
  payloads.push(
    { view: "extendMessage", payload: extendMessage(extending) },
    { view: "extendMessage ready", payload: extendMessage(extended) },
    { view: "extendMessage rejected", payload: extendMessage(refused) },
    {
      view: "extensionApproversWords",
      payload: { text: extensionApproversWords(extending, [`<@${APPROVER}>`]) },
    },
    { view: "extensionToldWords", payload: { text: extensionToldWords(refused) ?? "" } },
    {
      view: "extensionAskedWords",
      payload: { text: extensionAskedWords(o.vmName, 7_200_000, "C0CHAN") },
    },
    { view: "extensionExpiredWords", payload: { text: extensionExpiredWords(o.vmName, "2 h") } },
  );

  // The Home tab: the reader's VMs (one gone, one leased), requests and approvals waiting.
  const leased = { ...vm, status: "live" as const, statusNote: null, leaseUntil: o.lockedAt };
  payloads.push(
    {
      view: "homeView",
      payload: homeView({
        vms: [vm, leased],
        requests: [destroying, sampleRequest({ ...base, status: "planning" })],
        approvals: [{ request: destroying, link: `${SLACK}archives/C0CHAN/p1` }],
        links: new Map([[destroying.id, `${SLACK}archives/C0CHAN/p2`]]),
        now,
      }),
    },
    { view: "homeDestroyModal", payload: homeDestroyModal(vm, now) },
  );
  payloads.push({
    view: "createModal",
    payload: createModal({
      nodes: [
        o.node,
        { value: o.nodeName, label: o.nodeName },
        ...liveNodeOptions(proxmoxNodes, [o.node]),
      ],
      nodeHint: o.message,
      templates: [{ name: o.templateName, id: 9000 }],
      defaults: { gateway: o.gateway, dns: o.dns, cores: 2, memoryMb: 2048, diskGb: 20 },
      name: o.vmName,
      privateMetadata: JSON.stringify({ channel: "C0CHAN" }),
    }),
  });
  return payloads;
}

/**
 * Every mrkdwn text in a payload: text objects of type `mrkdwn` anywhere in its blocks, and the
 * message's own `text`, which Slack parses as mrkdwn for notifications. `plain_text` is inert.
 */
function mrkdwnTexts(payload: unknown): string[] {
  const found: string[] = [];
  const walk = (value: unknown, top: boolean) => {
    if (Array.isArray(value)) {
      for (const item of value) walk(item, false);
      return;
    }
    if (typeof value !== "object" || value === null) return;
    const record = value as Record<string, unknown>;
    if (typeof record.text === "string" && (top || record.type === "mrkdwn"))
      found.push(record.text);
    for (const [key, inner] of Object.entries(record)) {
      if (key !== "text" || typeof inner === "object") walk(inner, false);
    }
  };
  walk(payload, true);
  return found;
}

const MENTION = /<@([A-Z0-9]+)>/g;
const GROUP_MENTION = /<!subteam\^([A-Z0-9]+)>/g;
const CHANNEL_LINK = /<#(C[A-Z0-9]+)>/g;
const DATE = /<!date\^-?\d+\^[^<>|]*\|[^<>|]*>/g;
const LINK = /<(https:\/\/[^<>|\s]+)\|([^<>]*)>/g;

/** What is wrong with one mrkdwn text: the control sequences and entities the bot did not make. */
function problems(text: string): string[] {
  const found: string[] = [];
  let rest = text.replace(MENTION, (whole, id: string) => {
    if (!KNOWN_USERS.has(id)) found.push(`mentions ${whole}`);
    return "";
  });
  rest = rest.replace(GROUP_MENTION, (whole, id: string) => {
    if (!KNOWN_GROUPS.has(id)) found.push(`mentions ${whole}`);
    return "";
  });
  rest = rest.replace(CHANNEL_LINK, (whole, id: string) => {
    if (!KNOWN_CHANNELS.has(id)) found.push(`links to ${whole}`);
    return "";
  });
  rest = rest.replace(DATE, "");
  rest = rest.replace(LINK, (whole, url: string) => {
    if (!TRUSTED_URLS.some((trusted) => url.startsWith(trusted))) found.push(`links to ${url}`);
    return "";
  });
  if (/[<>]/.test(rest)) found.push(`has a bare < or >: ${JSON.stringify(rest.slice(0, 200))}`);
  const entity = /&(?!amp;|lt;|gt;)/.exec(text);
  if (entity)
    found.push(
      `has an unescaped &: ${JSON.stringify(text.slice(entity.index, entity.index + 20))}`,
    );
  return found;
}

const count = (char: string) => (text: string) => text.split(char).length - 1;

/**
 * The same outside text with each of `chars` made a harmless one of the same length; `keep`
 * names fields left as they are.
 */
const replacing =
  (chars: RegExp, by: (char: string) => string, keep: readonly (keyof Outside)[] = []) =>
  (o: Outside): Outside =>
    Object.fromEntries(
      FIELDS.map((field) => [field, keep.includes(field) ? o[field] : o[field].replace(chars, by)]),
    ) as unknown as Outside;

/**
 * Renders every view with `o`, and again with one kind of character taken out of `o`. Any such
 * character the first rendering has beyond the second came from outside: a backtick that can
 * open or close a code span, or a `<` or `>` of a mention or link that merely looks like one of
 * the bot's own (which the pattern check above would let through).
 */
const DIFFERENTIAL = [
  { what: "backticks", chars: ["`"], tame: replacing(/`/g, () => "'") },
  {
    what: "angle brackets",
    chars: ["<", ">"],
    // Whether a lock time becomes a date depends on how Date.parse reads it, `<` and all; the
    // pattern check above covers that field.
    tame: replacing(/[<>]/g, (c) => (c === "<" ? "‹" : "›"), ["lockedAt"]),
  },
];

function expectInert(o: Outside): void {
  const hostile = renderAll(o);
  const failures: string[] = [];
  hostile.forEach(({ view, payload }) => {
    for (const text of mrkdwnTexts(payload)) {
      for (const problem of problems(text)) failures.push(`${view}: ${problem}`);
    }
  });
  for (const { what, chars, tame } of DIFFERENTIAL) {
    const tamed = renderAll(tame(o));
    expect(tamed.length).toBe(hostile.length);
    hostile.forEach(({ view, payload }, index) => {
      const texts = mrkdwnTexts(payload);
      const tameTexts = mrkdwnTexts(tamed[index]?.payload);
      for (const char of chars) {
        // Compared as sets of counts: a view may order its parts by name (capacity sorts nodes).
        const counts = (all: string[]) => all.map(count(char)).sort((a, b) => a - b);
        const [mine, theirs] = [counts(texts), counts(tameTexts)];
        if (mine.length !== theirs.length || mine.some((n, i) => n !== theirs[i])) {
          failures.push(`${view}: ${what} from outside in ${JSON.stringify(texts).slice(0, 600)}`);
        }
      }
    });
  }
  expect(failures).toEqual([]);
}

/** Hostile text, sometimes long enough that a view has to cut it or the text around it. */
const outsideText = fc.oneof(
  { weight: 4, arbitrary: hostileText },
  {
    weight: 1,
    arbitrary: fc
      .tuple(hostileText, fc.integer({ min: 50, max: 1_500 }))
      .map(([text, times]) => text.repeat(times).slice(0, 4_000)),
  },
);

describe("outside text in every view the bot posts", () => {
  it.each(HOSTILE_STRINGS)(
    "shows %j as text in every view: no mention, link, entity or code span of its own",
    (text) => {
      expectInert(everywhere(text));
    },
  );

  it("shows all of them run together as text in every view", () => {
    expectInert(everywhere(HOSTILE_STRINGS.join(" ")));
  });

  it("shows any hostile text, different in each place, as text in every view", () => {
    const outside = fc.record(
      Object.fromEntries(FIELDS.map((field) => [field, outsideText])) as unknown as Record<
        keyof Outside,
        fc.Arbitrary<string>
      >,
    );
    fc.assert(
      fc.property(outside, (o) => {
        expectInert(o);
      }),
      { numRuns: 60 },
    );
    // Each run puts a different hostile text in each of the 22 places, a fifth of them repeated
    // to as many as 4,000 characters, where views cut text: 60 runs are some 1,300 texts through
    // every view, about 260 of them long. Each fixed hostile string is in every place in the
    // tests above. A run through every view costs about 55 ms of CPU; the limit only catches a
    // hang.
  }, 180_000);

  it("carries the outside text into the mrkdwn it checks, escaped", () => {
    // Without this, a view that dropped outside text would pass the checks above unseen.
    const views = renderAll(everywhere("<!channel>"));
    const reached = new Set(
      views
        .filter(({ payload }) => mrkdwnTexts(payload).some((t) => t.includes("&lt;!channel&gt;")))
        .map(({ view }) => view.replace(/\(.*\)$/, "")),
    );
    expect([...reached].sort()).toEqual(
      [
        "requestMessage",
        "renderRequest",
        "planMessage",
        "recapText",
        "capacityMessage",
        "capacityFailure",
        "capacityUsage",
        "notLocked",
        "stateMissing",
        "unlockPrompt",
        "leftLocked",
        "lockChanged",
        "alreadyUnlocked",
        "stillLocked",
        "unlocked",
        "unlockedNotice",
        "unlock failure",
        "helpMessage",
        "requesterToldWords",
        "approversCalledWords",
        "notYoursToWithdraw",
        "stillStartingWords",
        "causeWords",
        "jobFailedWords",
        "failureExcerptWords",
        "noNextStepWords",
        "notYoursToRetry",
        "notYoursToPlanAgain",
        "retryRefusedWords",
        "retryNotTakenWords",
        "retryUnknownWords",
        "plannedAgainReply",
        "unknownVmReply",
        "inFlightReply",
        "goneVmReply",
        "destroyConfirmation",
        "destroyCanceledReply",
        "destroyAskedReply",
        "destroyMessage",
        "destroyedWords",
        "destroyRefusedReply",
        "noDestroyJobWords",
        "homeView",
        "homeDestroyModal",
        "extendMessage",
        "extendMessage ready",
        "extendMessage rejected",
        "extensionApproversWords",
        "extensionToldWords",
        "extensionAskedWords",
        "extensionExpiredWords",
      ].sort(),
    );
  });

  it("keeps the form's outside text in plain_text only, where Slack parses nothing", () => {
    const [modal] = renderAll(everywhere("<!channel>")).filter(
      ({ view }) => view === "createModal",
    );
    expect(mrkdwnTexts(modal?.payload)).toEqual([]);
    expect(JSON.stringify(modal?.payload)).toContain("<!channel>");
  });
});
