/** REST: Terraform state (API::Terraform::State and Terraform::RemoteStateHandler). */
import { apiError, ApiError, grapeError, json, recordNotFound, type Reply } from "./replies.js";
import { authorize, projectFor, type RouteContext } from "./routing.js";
import { type Project } from "./state.js";
import { type FakeTerraformState, type TerraformLockInfo } from "./types.js";

/** What Terraform's http backend sends to lock a state (`requires` of `POST …/lock`). */
const LOCK_INFO_FIELDS: readonly (keyof TerraformLockInfo)[] = [
  "ID",
  "Operation",
  "Info",
  "Who",
  "Version",
  "Created",
  "Path",
];

const INVALID = Symbol("invalid");

/** Grape's coercion of a `type: String` parameter: absent → undefined, JSON null → null. */
function coerceString(raw: unknown): string | null | undefined | typeof INVALID {
  if (raw === undefined || raw === null) return raw;
  if (typeof raw === "string") return raw;
  if (typeof raw === "number" || typeof raw === "boolean") return String(raw);
  return INVALID;
}

/**
 * The state API's `before` block (`authenticate!`, then `read_terraform_state` on the project),
 * then its parameters as Grape checks them: the namespace's `optional :ID, limit: 255`, then the
 * endpoint's `requires`. Answers the project and the `ID` parameter.
 */
function terraformStateRequest(
  ctx: RouteContext,
  required: readonly string[] = [],
): { project: Project; lockId: string | null | undefined } {
  const project = projectFor(ctx);
  authorize(ctx, project, "read_terraform_state");
  const errors: string[] = [];
  const lockId = coerceString(ctx.input.ID);
  if (lockId === INVALID) {
    errors.push("ID is invalid");
  } else if (typeof lockId === "string" && lockId.length > 255) {
    // The Limit validator's message names the parameter, and Grape puts the name before it too.
    errors.push("ID ID must be less than 255 characters");
  }
  for (const name of required) {
    if (!Object.hasOwn(ctx.input, name)) errors.push(`${name} is missing`);
    else if (coerceString(ctx.input[name]) === INVALID) errors.push(`${name} is invalid`);
  }
  if (errors.length > 0) throw grapeError(400, [...new Set(errors)].join(", "));
  return { project, lockId: lockId === INVALID ? undefined : lockId };
}

/** `find_with_lock`: the state must exist (`ActiveRecord::RecordNotFound` otherwise). */
function existingTerraformState(ctx: RouteContext, project: Project): FakeTerraformState {
  const state = ctx.model.findTerraformState(project, ctx.params.name ?? "");
  if (!state) throw recordNotFound();
  return state;
}

/** `RemoteStateHandler#lock_matches?`: no lock and no ID, or the lock's own ID. */
function lockMatches(state: FakeTerraformState, lockId: string | null | undefined): boolean {
  const held = state.lock?.id;
  if (held === undefined && (lockId === undefined || lockId === null)) return true;
  return (held ?? "") === (lockId ?? "");
}

/** An exception the API does not rescue itself (`handle_api_exception`). */
const internalServerError = (): ApiError => apiError(500, "500 Internal Server Error");

/**
 * A body the endpoint sends past Grape's JSON formatter (`env['api.format'] = :binary`). The API
 * registers no content type for that format, so Rails sends none and Workhorse (Go's net/http)
 * sniffs one: plain text for a JSON document.
 */
function unformatted(status: number, text: string): Reply {
  return { kind: "text", status, text, headers: { "content-type": "text/plain; charset=utf-8" } };
}

/** `no_content!`: 204, no body. */
export function noContent(): Reply {
  return { kind: "text", status: 204, text: "", headers: { "content-type": "application/json" } };
}

/**
 * `body false` then `status :ok`: Grape's JSON formatter renders the empty body as the JSON
 * string `""`.
 */
const emptyJsonBody = (): Reply => json(200, "");

/** GET …/terraform/state/:name: the latest version's file as it was stored; 204 before one. */
export function showTerraformState(ctx: RouteContext): Reply {
  const { project } = terraformStateRequest(ctx);
  const state = existingTerraformState(ctx, project);
  if (state.latestVersion === null) return noContent();
  return unformatted(200, state.latestVersion.content);
}

/**
 * POST …/terraform/state/:name: stores the body as the latest version (creating the state), if
 * the state is unlocked and no `ID` is given, or `ID` is its lock's. A lock mismatch raises
 * `StateLockedError`, which this endpoint does not rescue: 500.
 */
export function storeTerraformState(ctx: RouteContext): Reply {
  const { project, lockId } = terraformStateRequest(ctx);
  authorize(ctx, project, "admin_terraform_state");
  const data = ctx.req.body;
  if (data.length === 0) return noContent();
  const state = ctx.model.findOrCreateTerraformState(project, ctx.params.name ?? "");
  if (!lockMatches(state, lockId)) throw internalServerError();
  ctx.model.storeTerraformState(state, data, ctx.model.user);
  return emptyJsonBody();
}

/**
 * DELETE …/terraform/state/:name: `TriggerDestroyService` removes an unlocked state (here at
 * once, as its worker would); it refuses a locked one, and the endpoint answers 200 either way.
 */
export function deleteTerraformState(ctx: RouteContext): Reply {
  const { project } = terraformStateRequest(ctx);
  authorize(ctx, project, "admin_terraform_state");
  const state = existingTerraformState(ctx, project);
  if (state.lock === null) ctx.model.removeTerraformState(state);
  return emptyJsonBody();
}

/**
 * POST …/terraform/state/:name/lock: locks the state (creating it) for the token's user, or 409
 * if it is locked already. Either way the body is the request's lock info with `ID`, `Who` (a
 * GitLab username) and `Created` taken from the state's lock, the holder's.
 */
export function lockTerraformState(ctx: RouteContext): Reply {
  const { project, lockId } = terraformStateRequest(ctx, LOCK_INFO_FIELDS);
  authorize(ctx, project, "admin_terraform_state");
  // `lock!` raises ArgumentError for a blank ID.
  if (lockId === undefined || lockId === null || lockId.trim() === "") {
    throw internalServerError();
  }
  const state = ctx.model.findOrCreateTerraformState(project, ctx.params.name ?? "");
  const conflict = state.lock !== null;
  if (!conflict) ctx.model.lockTerraformState(state, lockId, ctx.model.user);
  const lock = state.lock;
  if (lock === null) throw new Error(`Terraform state ${state.name} was not locked`);
  const text = (name: string): string | null => {
    const value = coerceString(ctx.input[name]);
    return value === INVALID || value === undefined ? null : value;
  };
  const info = {
    Operation: text("Operation"),
    Info: text("Info"),
    Version: text("Version"),
    Path: text("Path"),
    ID: lock.id,
    Who: lock.user.username,
    Created: lock.lockedAt,
  };
  return unformatted(conflict ? 409 : 200, JSON.stringify(info));
}

/**
 * DELETE …/terraform/state/:name/lock: unlocks when `ID` is the lock's, or when no `ID` is given
 * (a force-unlock); another `ID` is 409. The state is created if missing, as `unlock!` finds or
 * creates it. The body is what the endpoint returns, the status code: `200` or `409`.
 */
export function unlockTerraformState(ctx: RouteContext): Reply {
  const { project, lockId } = terraformStateRequest(ctx);
  authorize(ctx, project, "admin_terraform_state");
  const state = ctx.model.findOrCreateTerraformState(project, ctx.params.name ?? "");
  const force = lockId === undefined || lockId === null;
  if (!force && !lockMatches(state, lockId)) return json(409, 409);
  ctx.model.unlockTerraformState(state);
  return json(200, 200);
}
