/** GraphQL (/api/graphql): the endpoint, executed by graphql-js, with graphql-ruby's errors. */
import {
  type ASTNode,
  BREAK,
  type DocumentNode,
  executeSync,
  type ExecutionResult,
  GraphQLError,
  Kind,
  OperationTypeNode,
  parse,
  validate,
  visit,
} from "graphql";
import {
  GRAPHQL_MAX_QUERY_SIZE,
  GRAPHQL_SCHEMA,
  graphqlReply,
  graphqlRoot,
} from "./graphql-schema.js";
import { type Reply } from "./replies.js";
import { type RouteContext } from "./routing.js";

/** How graphql-ruby names a node in an error's `path`. */
function pathSegment(node: ASTNode): string[] {
  switch (node.kind) {
    case Kind.OPERATION_DEFINITION:
      return [node.name ? `${node.operation} ${node.name.value}` : node.operation];
    case Kind.FRAGMENT_DEFINITION:
      return [`fragment ${node.name.value}`];
    case Kind.FIELD:
      return [node.alias?.value ?? node.name.value];
    case Kind.INLINE_FRAGMENT:
      return [node.typeCondition ? `... on ${node.typeCondition.name.value}` : "..."];
    case Kind.FRAGMENT_SPREAD:
      return [`... ${node.name.value}`];
    case Kind.ARGUMENT:
      return [node.name.value];
    default:
      return [];
  }
}

/** Where a node sits in the query, as a static validation error's `path` shows it. */
function documentPath(document: DocumentNode, target: ASTNode): string[] | undefined {
  let found: string[] | undefined;
  visit(document, {
    enter(node, _key, _parent, _path, ancestors) {
      if (node !== target) return undefined;
      const chain = ancestors.filter((a): a is ASTNode => !Array.isArray(a));
      found = [...chain, node].flatMap((a) => pathSegment(a));
      return BREAK;
    },
  });
  return found;
}

/** graphql-js's wording of the common validation errors, and graphql-ruby's (message, extensions). */
const VALIDATION_WORDING: readonly {
  pattern: RegExp;
  ruby: (m: RegExpExecArray) => { message: string; extensions: Record<string, string> };
}[] = [
  {
    pattern: /^Cannot query field "(\w+)" on type "(\w+)"\./,
    ruby: ([, field = "", type = ""]) => ({
      message: `Field '${field}' doesn't exist on type '${type}'`,
      extensions: { code: "undefinedField", typeName: type, fieldName: field },
    }),
  },
  {
    pattern: /^Unknown argument "(\w+)" on field "\w+\.(\w+)"\./,
    ruby: ([, argument = "", field = ""]) => ({
      message: `Field '${field}' doesn't accept argument '${argument}'`,
      extensions: {
        code: "argumentNotAccepted",
        name: field,
        typeName: "Field",
        argumentName: argument,
      },
    }),
  },
  {
    pattern:
      /^Field "(\w+)" argument "(\w+)" of type "[^"]+" is required, but it was not provided\./,
    ruby: ([, field = "", argument = ""]) => ({
      message: `Field '${field}' is missing required arguments: ${argument}`,
      extensions: {
        code: "missingRequiredArguments",
        className: "Field",
        name: field,
        arguments: argument,
      },
    }),
  },
  {
    pattern: /^Field "(\w+)" of type "\[*(\w+)[\]!]*" must have a selection of subfields\./,
    ruby: ([, field = "", type = ""]) => ({
      message: `Field must have selections (field '${field}' returns ${type} but has no selections. Did you mean '${field} { ... }'?)`,
      extensions: { code: "selectionMismatch", nodeName: `field '${field}'`, typeName: type },
    }),
  },
];

/**
 * An error as GitLab's GraphQL answers it: `message`, `locations`, for a static validation error
 * (`document` given) the node's `path` in the query and graphql-ruby's wording where graphql-js's
 * differs, for an execution error the response `path`.
 */
function graphqlError(error: GraphQLError, document?: DocumentNode): Record<string, unknown> {
  let message = error.message;
  let extensions: Record<string, string> | undefined;
  if (document !== undefined) {
    for (const { pattern, ruby } of VALIDATION_WORDING) {
      const match = pattern.exec(message);
      if (match) {
        ({ message, extensions } = ruby(match));
        break;
      }
    }
  }
  const node = error.nodes?.[0];
  const path =
    document !== undefined && node !== undefined ? documentPath(document, node) : error.path;
  return {
    message,
    ...(error.locations === undefined ? {} : { locations: error.locations }),
    ...(path === undefined ? {} : { path }),
    ...(extensions === undefined ? {} : { extensions }),
  };
}

interface GraphqlRequest {
  query: unknown;
  variables: unknown;
  operationName: unknown;
}

/** `Gitlab::Graphql::Variables`: a JSON text or an object; anything else is 422. */
function graphqlVariables(raw: unknown): { values: Record<string, unknown> } | { error: string } {
  if (raw === undefined || raw === null) return { values: {} };
  if (typeof raw === "string") {
    if (raw.trim() === "") return { values: {} };
    try {
      const parsed: unknown = JSON.parse(raw);
      return {
        values:
          typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
            ? (parsed as Record<string, unknown>)
            : {},
      };
    } catch {
      return { error: `unexpected token at '${raw}'` };
    }
  }
  if (typeof raw === "object" && !Array.isArray(raw)) {
    return { values: raw as Record<string, unknown> };
  }
  return { error: `Unexpected parameter: ${JSON.stringify(raw)}` };
}

/** One query: parse, validate, execute, as `GitlabSchema.execute` answers it. */
function runGraphql(
  ctx: RouteContext,
  request: GraphqlRequest,
  variableValues: Record<string, unknown>,
): Record<string, unknown> {
  const source = typeof request.query === "string" ? request.query : "";
  if (source.trim() === "") return { errors: [{ message: "No query string was present" }] };
  let document: DocumentNode;
  try {
    document = parse(source);
  } catch (error) {
    if (error instanceof GraphQLError) return { errors: [graphqlError(error)] };
    throw error;
  }
  const invalid = validate(GRAPHQL_SCHEMA, document);
  if (invalid.length > 0) return { errors: invalid.map((e) => graphqlError(e, document)) };
  const result: ExecutionResult = executeSync({
    schema: GRAPHQL_SCHEMA,
    document,
    rootValue: graphqlRoot(ctx.model, ctx.caller),
    variableValues,
    operationName: typeof request.operationName === "string" ? request.operationName : null,
  });
  return {
    ...(result.errors === undefined ? {} : { errors: result.errors.map((e) => graphqlError(e)) }),
    ...(result.data === undefined ? {} : { data: result.data }),
  };
}

/**
 * GET or POST /api/graphql (`GraphqlController#execute`): one query (`query`, `variables`,
 * `operationName`, from the JSON body or the query string) or a batch (a JSON array). Query
 * errors are answered with 200 and an `errors` list; `data` holds what could be resolved.
 */
export function graphqlEndpoint(ctx: RouteContext): Reply {
  const { req } = ctx;
  const fromQuery: GraphqlRequest = {
    query: req.query.get("query") ?? undefined,
    variables: req.query.get("variables") ?? undefined,
    operationName: req.query.get("operationName") ?? undefined,
  };
  let body: unknown = {};
  const contentType = (req.headers["content-type"] ?? "").split(";")[0]?.trim();
  if (req.body.length > 0 && contentType === "application/json") {
    try {
      body = JSON.parse(req.body);
    } catch {
      // ActionDispatch::Http::Parameters::ParseError: Rails' own 400 page.
      return {
        kind: "text",
        status: 400,
        text: "400 Bad Request\n",
        headers: { "content-type": "text/html; charset=utf-8" },
      };
    }
  } else if (req.body.length > 0 && contentType === "application/x-www-form-urlencoded") {
    body = Object.fromEntries(new URLSearchParams(req.body));
  }
  const batch = Array.isArray(body) ? (body as unknown[]) : undefined;
  const requests: GraphqlRequest[] = (batch ?? [body]).map((item) => {
    const fields =
      typeof item === "object" && item !== null ? (item as Record<string, unknown>) : {};
    return batch !== undefined
      ? { query: fields.query, variables: fields.variables, operationName: fields.operationName }
      : {
          query: fields.query ?? fromQuery.query,
          variables: fields.variables ?? fromQuery.variables,
          operationName: fields.operationName ?? fromQuery.operationName,
        };
  });

  const size = requests.reduce(
    (total, r) => total + (typeof r.query === "string" ? r.query.length : 0),
    0,
  );
  if (size > GRAPHQL_MAX_QUERY_SIZE) {
    return graphqlReply(422, { errors: [{ message: "Query too large" }] });
  }
  const variables: Record<string, unknown>[] = [];
  for (const request of requests) {
    const parsed = graphqlVariables(request.variables);
    if ("error" in parsed) return graphqlReply(422, { errors: [{ message: parsed.error }] });
    variables.push(parsed.values);
  }
  if (req.method === "GET" && requests.some((r) => isMutation(r.query))) {
    return graphqlReply(422, { errors: [{ message: "Mutations are forbidden in GET requests" }] });
  }
  const results = requests.map((request, index) =>
    runGraphql(ctx, request, variables[index] ?? {}),
  );
  return graphqlReply(200, batch === undefined ? results[0] : results);
}

function isMutation(query: unknown): boolean {
  if (typeof query !== "string") return false;
  try {
    return parse(query).definitions.some(
      (d) => d.kind === Kind.OPERATION_DEFINITION && d.operation === OperationTypeNode.MUTATION,
    );
  } catch {
    return false;
  }
}
