import type { AllMiddlewareArgs, SlackViewMiddlewareArgs, ViewSubmitAction } from "@slack/bolt";
import { z } from "zod";
import { NOT_REQUESTER_FIELD } from "../views/refusals.js";
import type { Access } from "../access.js";
import type { Config } from "../config.js";
import { stateNameFor } from "../vm/state-name.js";
import type { GitlabPort } from "../gitlab/gitlab.js";
import { CREATE_FIELDS, CREATE_LEASE_FIELD } from "../ids.js";
import type { Logger } from "../logger.js";
import { within, type NodeDirectory } from "../proxmox/directory.js";
import type { AsyncStore } from "../store/async.js";
import type { HoldGuard, QuotaGuard } from "../store/store.js";
import type { RequestStarter } from "../tracker/starter.js";
import type { RequestTurns } from "../slack/after-ack.js";
import { storeWriteFailure } from "./store-failure.js";
import { validateVmForm, type VmFormValues, type VmSpec } from "../vm/spec.js";
import { checkRequest, POLICY_CHECK_BUDGET_MS } from "../policy/request-check.js";
import { findHeldConflicts } from "../vm/conflicts.js";
import { writeHeld } from "./held-write.js";
import { HELD_MEANWHILE_WORDS, ipTakenWords, nameTakenWords } from "../views/conflicts.js";
import { leaseChoiceWords } from "../views/create-modal.js";
import {
  FORM_DAMAGED,
  nodeOfflineWords,
  REQUEST_NOT_RECORDED_FIELD,
  REQUESTER_UNCONFIRMED_FIELD,
} from "../views/create-words.js";
import { leaseChoices, readLeaseChoice } from "../vm/lease.js";
import { safeJson } from "../safe-json.js";

/** What the form carries between opening and submission: where to post, nothing more. */
const CreateMetadataSchema = z.object({
  channel: z.string().regex(/^[CGD][A-Z0-9]{2,}$/),
});
export type CreateMetadata = z.infer<typeof CreateMetadataSchema>;

export const encodeCreateMetadata = (metadata: CreateMetadata) => JSON.stringify(metadata);

const ElementStateSchema = z.object({
  type: z.string(),
  value: z.string().nullish(),
  selected_option: z.object({ value: z.string() }).nullish(),
});
const StateValuesSchema = z.record(z.string(), z.record(z.string(), ElementStateSchema));

/** Reads the form's fields out of `view.state.values`; anything malformed reads as blank. */
export function readCreateForm(values: unknown): VmFormValues {
  const parsed = StateValuesSchema.safeParse(values);
  const state = parsed.success ? parsed.data : {};
  const form: VmFormValues = {};
  for (const [field, blockId] of Object.entries(CREATE_FIELDS) as [
    keyof typeof CREATE_FIELDS,
    string,
  ][]) {
    const element = state[blockId]?.[blockId];
    const value = element?.selected_option?.value ?? element?.value;
    if (typeof value === "string" && value.trim() !== "") form[field] = value;
  }
  return form;
}

/** The lease chosen on the form, as submitted; undefined when the form has no lease field. */
export function readLeaseField(values: unknown): string | undefined {
  const parsed = StateValuesSchema.safeParse(values);
  const element = parsed.success
    ? parsed.data[CREATE_LEASE_FIELD]?.[CREATE_LEASE_FIELD]
    : undefined;
  return element?.selected_option?.value ?? element?.value ?? undefined;
}

/**
 * The lease the form asks for, checked against the settings whatever the form offered: a length
 * over VM_LEASE_MAX (or never under a maximum) is refused on its field. Undefined (the default)
 * when leases are off.
 */
function checkLease(
  config: Config,
  values: unknown,
): { leaseMs: number | null | undefined } | { errors: FieldErrors } {
  if (leaseChoices(config.lease).length === 0) return { leaseMs: undefined };
  const choice = readLeaseChoice(config.lease, readLeaseField(values));
  if (choice.ok) return { leaseMs: choice.ms };
  return {
    errors: { [CREATE_LEASE_FIELD]: leaseChoiceWords(choice.problem, config.lease.maxMs) },
  };
}

function fieldErrors(errors: Partial<Record<keyof typeof CREATE_FIELDS, string>>) {
  return Object.fromEntries(
    Object.entries(errors).map(([field, message]) => [
      CREATE_FIELDS[field as keyof typeof CREATE_FIELDS],
      message,
    ]),
  );
}

export interface CreateSubmitDeps {
  config: Config;
  access: Access;
  store: AsyncStore;
  gitlab: GitlabPort;
  log: Logger;
  /** Live nodes from Proxmox, when PROXMOX_URL is set: the form may have offered them. */
  nodes?: NodeDirectory | undefined;
  /** Posts the request message and creates the pipeline, each exactly once. */
  starter: RequestStarter;
  /** Slack requests first: the request message and the pipeline wait for their turn. */
  turns: RequestTurns;
}

/** How long a submission waits for Proxmox's node list (it is usually cached from the form). */
const NODE_CHECK_BUDGET_MS = 1_500;

/**
 * The nodes a submission may name: VM_NODES, and the nodes Proxmox reports online (the form
 * offers those when it can); and the chosen node, when Proxmox reports it is not online. When
 * Proxmox does not answer within the budget, VM_NODES stands.
 */
async function acceptedNodes(
  deps: CreateSubmitDeps,
  chosen: string | undefined,
): Promise<{ nodes: string[]; offline: string | undefined }> {
  const configured = deps.config.vm.nodes;
  if (deps.nodes === undefined || chosen === undefined)
    return { nodes: configured, offline: undefined };
  const answer = await within(
    deps.nodes.nodes().catch((error: unknown) => {
      deps.log.warn(
        { err: error },
        "could not read Proxmox's node list to check the chosen node; VM_NODES and the last list stand",
      );
      return undefined;
    }),
    NODE_CHECK_BUDGET_MS,
  );
  // Proxmox slow or down: the last list it gave (what the form was updated with) still counts.
  const seen = answer === "late" || answer === undefined ? (deps.nodes.last() ?? []) : answer;
  const online = seen.filter((node) => node.status === "online").map((node) => node.name);
  const node = seen.find((candidate) => candidate.name === chosen);
  return {
    nodes: [...new Set([...online, ...configured])],
    offline: node !== undefined && node.status !== "online" ? node.name : undefined,
  };
}

type ViewArgs = SlackViewMiddlewareArgs<ViewSubmitAction> & AllMiddlewareArgs;
type View = ViewArgs["view"];
type FieldErrors = Record<string, string>;
type AccessDecision = Awaited<ReturnType<Access["mayWithin"]>>;

/** A submission that passed every check: what to record, and the policy rule that allowed it. */
interface Checked {
  spec: VmSpec;
  notes: string[];
  channel: string;
  rule: string;
  /** The quotas the request fits, checked again in its write. */
  quota?: QuotaGuard;
}

/**
 * The create form's submission: invalid input is answered on its field and changes nothing;
 * valid input becomes a stored request, a posted message, and a GitLab pipeline.
 */
export function createCreateSubmission(deps: CreateSubmitDeps) {
  return async ({ ack, body, view }: ViewArgs) => {
    const userId = body.user.id;
    const log = deps.log.child({ user: userId, command: "create" });
    const checked = await checkSubmission(deps, userId, view, log);
    if ("errors" in checked) {
      await ack({ response_action: "errors", errors: checked.errors });
      return;
    }
    const stored = await storeRequest(deps, userId, view, checked, log);
    if ("errors" in stored) {
      await ack({ response_action: "errors", errors: stored.errors });
      return;
    }
    const { request, created } = stored;
    await ack();
    if (!created) {
      log.info({ requestId: request.id }, "repeated submission of a form already handled");
      return;
    }
    await deps.turns.afterPending();
    await deps.starter.start(request);
  };
}

/** Every check of a submission, in order; the first that fails gives the errors to show. */
async function checkSubmission(
  deps: CreateSubmitDeps,
  userId: string,
  view: View,
  log: Logger,
): Promise<{ errors: FieldErrors } | Checked> {
  const form = readCreateForm(view.state.values);
  // Both within Slack's three seconds, side by side: the node check and the access check.
  const [accepted, decision] = await Promise.all([
    acceptedNodes(deps, form.node?.trim()),
    deps.access.mayWithin("create", userId, 1_500),
  ]);
  const lease = checkLease(deps.config, view.state.values);
  const valid = validSpec(deps, form, accepted, log);
  if ("errors" in valid)
    return "errors" in lease ? { errors: { ...valid.errors, ...lease.errors } } : valid;
  if ("errors" in lease) {
    log.info("create form asks for a lease the settings refuse");
    return lease;
  }
  if (lease.leaseMs !== undefined) valid.spec = { ...valid.spec, leaseMs: lease.leaseMs };
  const taken = await conflictErrors(deps, view, valid.spec, log);
  if (taken) return { errors: taken };
  const metadata = CreateMetadataSchema.safeParse(safeJson(view.private_metadata));
  if (!metadata.success) {
    log.warn("create form came back without its channel");
    return {
      errors: {
        [CREATE_FIELDS.name]: FORM_DAMAGED,
      },
    };
  }
  const refused = accessErrors(decision, log);
  if (refused) return { errors: refused };
  // Inside what the policy lets this person ask for, and inside their quotas: else on the field.
  const verdict = await checkRequest(deps, userId, valid.spec, POLICY_CHECK_BUDGET_MS);
  if (!verdict.ok) return { errors: fieldErrors(verdict.errors) };
  const { quota } = verdict;
  return { ...valid, channel: metadata.data.channel, rule: verdict.decision.rule, quota };
}

/** The form's spec once its fields are valid and its node online; else the errors to show. */
function validSpec(
  deps: CreateSubmitDeps,
  form: VmFormValues,
  accepted: { nodes: string[]; offline: string | undefined },
  log: Logger,
): { errors: FieldErrors } | { spec: VmSpec; notes: string[] } {
  const result = validateVmForm(form, {
    nodes: accepted.nodes,
    templates: deps.config.vm.templates,
  });
  if (result.ok && accepted.offline !== undefined) {
    log.info({ node: accepted.offline }, "create form names a node that is not online");
    return {
      errors: fieldErrors({
        node: nodeOfflineWords(accepted.offline),
      }),
    };
  }
  if (!result.ok) {
    log.info({ fields: Object.keys(result.errors) }, "create form has invalid fields");
    return { errors: fieldErrors(result.errors) };
  }
  return { spec: result.spec, notes: result.notes };
}

/**
 * A name or an address a VM, or a request on its way, already uses: refused on its field.
 * A repeated delivery of a submission already handled is not in conflict with itself.
 */
async function conflictErrors(
  deps: CreateSubmitDeps,
  view: View,
  spec: VmSpec,
  log: Logger,
): Promise<FieldErrors | undefined> {
  const submitted = () => deps.store.findBySubmission(`view:${view.id}`);
  const repeated = (await submitted()) !== undefined;
  const taken = repeated ? {} : await findHeldConflicts(deps.store, spec);
  if (taken.name === undefined && taken.ip === undefined) return undefined;
  // Slack's retry of a delivery still being handled (here or by another replica), which recorded
  // this very submission's request since the first look: the name and address are its own.
  if ((await submitted()) !== undefined) return undefined;
  log.info(
    { name: taken.name?.requestId, ip: taken.ip?.requestId },
    "create form names a VM or an address already taken",
  );
  return fieldErrors({
    ...(taken.name === undefined ? {} : { name: nameTakenWords(taken.name) }),
    ...(taken.ip === undefined ? {} : { ip: ipTakenWords(spec.ip, taken.ip, taken.suggestion) }),
  });
}

/** The requester not confirmed as one who may ask for VMs: refused on the name field. */
function accessErrors(decision: AccessDecision, log: Logger): FieldErrors | undefined {
  if (decision === "allowed") return undefined;
  log.info({ decision }, "create form refused: requester not confirmed");
  return {
    [CREATE_FIELDS.name]: decision === "denied" ? NOT_REQUESTER_FIELD : REQUESTER_UNCONFIRMED_FIELD,
  };
}

/**
 * Records the request once per form, in one write with the check that nothing holds its name or
 * address and that it still fits its quotas: another request written since the form was checked
 * is answered on the field, as the check would have. A store that cannot take the write gives the
 * errors.
 */
async function storeRequest(
  deps: CreateSubmitDeps,
  userId: string,
  view: View,
  checked: Checked,
  log: Logger,
): Promise<Awaited<ReturnType<AsyncStore["createRequest"]>> | { errors: FieldErrors }> {
  // The request and who asked for it, under which rule, in one write.
  const write = (guard: HoldGuard) =>
    deps.store.createVmRequest(
      {
        requester: userId,
        spec: checked.spec,
        notes: checked.notes,
        channel: checked.channel,
        submissionKey: `view:${view.id}`,
        stateName: stateNameFor(deps.config.stateNameTemplate, checked.spec.name),
      },
      guard,
      { actor: userId, action: "requested", detail: { spec: checked.spec, rule: checked.rule } },
    );
  try {
    const stored = await writeHeld({
      spec: checked.spec,
      quota: checked.quota,
      write,
      taken: () => conflictErrors(deps, view, checked.spec, log),
      recheck: () => checkRequest(deps, userId, checked.spec, POLICY_CHECK_BUDGET_MS),
      overQuota: fieldErrors,
    });
    if (stored === undefined) {
      return {
        errors: { [CREATE_FIELDS.name]: `${HELD_MEANWHILE_WORDS} Please press Create again.` },
      };
    }
    return "refused" in stored ? { errors: stored.refused } : stored;
  } catch (error) {
    if (storeWriteFailure(error) === undefined) throw error;
    log.error({ err: error }, "could not record the request: the store refused the write");
    return {
      errors: {
        [CREATE_FIELDS.name]: REQUEST_NOT_RECORDED_FIELD,
      },
    };
  }
}
