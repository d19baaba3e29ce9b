/** GraphQL (/api/graphql): a slice of GitLab's schema and its resolvers. */
import { buildSchema, GraphQLError } from "graphql";
import { API_PREFIX } from "./defaults.js";
import { avatarUrl } from "./presentation.js";
import { json, type Reply } from "./replies.js";
import { type Caller } from "./routing.js";
import { GitlabModel } from "./runner.js";
import { type FakeTerraformState, type FakeUser } from "./types.js";

export const GRAPHQL_SCHEMA = buildSchema(`
"""Time represented in ISO 8601."""
scalar Time

"""Represents untyped JSON."""
scalar JSON

type Query {
  """Find a project."""
  project(fullPath: ID!): Project
}

type Project {
  id: ID!
  fullPath: ID!
  name: String!
  path: String!
  nameWithNamespace: String!
  webUrl: String
  """Find a single Terraform state by name."""
  terraformState(name: String!): TerraformState
  """Terraform states associated with the project."""
  terraformStates(after: String, before: String, first: Int, last: Int): TerraformStateConnection
  """Inputs to create a pipeline."""
  ciPipelineCreationInputs(ref: String!): [CiInputsSpecification]
}

enum CiInputsType {
  ARRAY
  BOOLEAN
  NUMBER
  STRING
}

"""Input for pipeline creation inputs."""
type CiInputsSpecification {
  default: JSON
  description: String
  name: String
  options: JSON
  regex: String
  required: Boolean
  type: CiInputsType
}

"""The connection type for TerraformState."""
type TerraformStateConnection {
  """Total count of collection."""
  count: Int!
  edges: [TerraformStateEdge]
  nodes: [TerraformState]
  pageInfo: PageInfo!
}

type TerraformStateEdge {
  cursor: String!
  node: TerraformState
}

type PageInfo {
  endCursor: String
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
}

type TerraformState {
  createdAt: Time!
  deletedAt: Time
  id: ID!
  latestVersion: TerraformStateVersion
  lockedAt: Time
  lockedByUser: UserCore
  name: String!
  updatedAt: Time!
}

type TerraformStateVersion {
  createdAt: Time!
  createdByUser: UserCore
  downloadPath: String
  id: ID!
  serial: Int
  updatedAt: Time!
}

enum UserState {
  active
  banned
  blocked
  blocked_pending_approval
  deactivated
  ldap_blocked
}

interface User {
  avatarUrl: String
  bot: Boolean!
  id: ID!
  name: String!
  publicEmail: String
  state: UserState!
  username: String!
  webPath: String!
  webUrl: String!
}

"""Core representation of a GitLab user."""
type UserCore implements User {
  avatarUrl: String
  bot: Boolean!
  id: ID!
  name: String!
  publicEmail: String
  state: UserState!
  username: String!
  webPath: String!
  webUrl: String!
}
`);

/** GitlabSchema's `default_max_page_size`. */
const GRAPHQL_MAX_PAGE_SIZE = 100;
/** `GraphqlController::MAX_QUERY_SIZE`. */
export const GRAPHQL_MAX_QUERY_SIZE = 10_000;

/** Rails' `render json:`. */
export function graphqlReply(status: number, body: unknown): Reply {
  return json(status, body, { "content-type": "application/json; charset=utf-8" });
}

/** A global ID, `gid://gitlab/Project/42`. */
function gid(model: string, id: number): string {
  return `gid://gitlab/${model}/${id}`;
}

/** `Types::TimeType`: ISO 8601 to the second. */
function graphqlTime(iso: string): string;
function graphqlTime(iso: string | null): string | null;
function graphqlTime(iso: string | null): string | null {
  return iso === null ? null : `${iso.slice(0, 19)}Z`;
}

function graphqlUser(model: GitlabModel, user: FakeUser | null): Record<string, unknown> | null {
  if (user === null) return null;
  return {
    avatarUrl: avatarUrl(user.username),
    bot: false,
    id: gid("User", user.id),
    name: user.name,
    publicEmail: null,
    state: "active",
    username: user.username,
    webPath: `/${user.username}`,
    webUrl: `${model.baseUrl}/${user.username}`,
  };
}

function graphqlTerraformState(
  model: GitlabModel,
  state: FakeTerraformState,
): Record<string, unknown> {
  const version = state.latestVersion;
  return {
    createdAt: graphqlTime(state.createdAt),
    deletedAt: null,
    id: gid("Terraform::State", state.id),
    latestVersion:
      version === null
        ? null
        : {
            createdAt: graphqlTime(version.createdAt),
            createdByUser: graphqlUser(model, version.createdBy),
            downloadPath:
              version.serial === null
                ? null
                : `${API_PREFIX}/projects/${state.projectId}/terraform/state/${encodeURIComponent(state.name)}/versions/${version.serial}`,
            id: gid("Terraform::StateVersion", version.id),
            serial: version.serial,
            updatedAt: graphqlTime(version.createdAt),
          },
    lockedAt: graphqlTime(state.lock?.lockedAt ?? null),
    lockedByUser: graphqlUser(model, state.lock?.user ?? null),
    name: state.name,
    updatedAt: graphqlTime(state.updatedAt),
  };
}

interface ConnectionArgs {
  after?: string | null;
  before?: string | null;
  first?: number | null;
  last?: number | null;
}

/** A keyset cursor for the states' order (`ordered_by_name`): Base64 of the row's keys. */
function stateCursor(state: FakeTerraformState): string {
  return Buffer.from(JSON.stringify({ name: state.name, id: String(state.id) })).toString("base64");
}

function cursorName(cursor: string): string {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, "base64").toString("utf8"));
    const name =
      typeof decoded === "object" && decoded !== null
        ? (decoded as Record<string, unknown>).name
        : undefined;
    if (typeof name === "string") return name;
  } catch {
    // not a cursor this connection made
  }
  throw new GraphQLError("Please provide a valid cursor");
}

/** `Types::CountableConnectionType` over the states, ordered by name, paged by keyset. */
function terraformStateConnection(
  model: GitlabModel,
  states: readonly FakeTerraformState[],
  args: ConnectionArgs,
): Record<string, unknown> {
  const all = [...states].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let window = all;
  if (args.after) {
    const after = cursorName(args.after);
    window = window.filter((s) => s.name > after);
  }
  if (args.before) {
    const before = cursorName(args.before);
    window = window.filter((s) => s.name < before);
  }
  const size = (n: number | null | undefined): number | undefined =>
    n === undefined || n === null ? undefined : Math.min(Math.max(n, 0), GRAPHQL_MAX_PAGE_SIZE);
  const first = size(args.first);
  const last = size(args.last);
  let page = window.slice(0, first ?? (last === undefined ? GRAPHQL_MAX_PAGE_SIZE : undefined));
  if (last !== undefined) page = page.slice(Math.max(page.length - last, 0));
  const firstIndex = page[0] === undefined ? -1 : all.indexOf(page[0]);
  const lastItem = page.at(-1);
  const lastIndex = lastItem === undefined ? -1 : all.indexOf(lastItem);
  return {
    count: all.length,
    edges: page.map((state) => ({
      cursor: stateCursor(state),
      node: graphqlTerraformState(model, state),
    })),
    nodes: page.map((state) => graphqlTerraformState(model, state)),
    pageInfo: {
      endCursor: lastItem === undefined ? null : stateCursor(lastItem),
      hasNextPage: lastIndex >= 0 && lastIndex < all.length - 1,
      hasPreviousPage: firstIndex > 0,
      startCursor: page[0] === undefined ? null : stateCursor(page[0]),
    },
  };
}

/**
 * `Query.project(fullPath:)`: a project the caller can see (every fake project is private, and
 * the token's user is a member of each), else null. Its states need `read_terraform_state`
 * (`Terraform::StatesFinder`): below Developer the list is empty.
 */
export function graphqlRoot(model: GitlabModel, caller: Caller): Record<string, unknown> {
  return {
    project: ({ fullPath }: { fullPath: string }) => {
      const wanted = fullPath.toLowerCase();
      const project = model.projects.find((p) => p.path.toLowerCase() === wanted);
      if (!project || !caller.authenticated) return null;
      const segments = project.path.split("/");
      const leaf = segments.at(-1) ?? project.path;
      const states = (): FakeTerraformState[] =>
        model.can(project, "read_terraform_state")
          ? model.terraformStates.filter((s) => s.projectId === project.id)
          : [];
      return {
        id: gid("Project", project.id),
        fullPath: project.path,
        name: leaf,
        path: leaf,
        nameWithNamespace: segments.join(" / "),
        webUrl: `${model.baseUrl}/${project.path}`,
        terraformState: ({ name }: { name: string }) => {
          const state = states().find((s) => s.name === name);
          return state === undefined ? null : graphqlTerraformState(model, state);
        },
        terraformStates: (args: ConnectionArgs) => terraformStateConnection(model, states(), args),
        // `Ci::PipelineCreation::FindPipelineInputsService`: the spec of the config on `ref`.
        ciPipelineCreationInputs: ({ ref }: { ref: string }) => {
          if (!model.inputsQuery) {
            throw new Error("Field 'ciPipelineCreationInputs' doesn't exist on type 'Project'");
          }
          if (!model.can(project, "create_pipeline")) return null;
          if (!project.branches.has(ref) && !project.tags.has(ref)) {
            throw new Error("The branch or tag does not exist");
          }
          return Object.entries(project.inputs ?? {}).map(([name, spec]) => ({
            name,
            type: (spec.type ?? "string").toUpperCase(),
            description: spec.description ?? null,
            required: spec.default === undefined,
            default: spec.default ?? null,
            options: spec.options ?? null,
            regex: null,
          }));
        },
      };
    },
  };
}
