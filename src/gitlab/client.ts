import {
  GitbeakerRequestError,
  JobArtifacts,
  Jobs,
  Metadata,
  Pipelines,
  Projects,
  ProjectTerraformState,
} from "@gitbeaker/rest";
import { z } from "zod";
import type { GitlabAsk } from "../errors.js";
import { fixedSecret, type SecretSource } from "../secrets.js";
import { gitlabError, type GitlabErrorContext } from "./errors.js";
import type { GitlabToken } from "./port.js";
import { createRequester, type RetryPolicy } from "./requester.js";
import { createServerClock, type ServerClock } from "./server-clock.js";

export interface GitlabOptions {
  url: string;
  token: GitlabToken;
  project: string;
  ref: string;
  pipelineParams: "inputs" | "variables";
  /** Send VMBOT_REQUEST_ID with every pipeline (needs pipeline variables allowed). Default true. */
  tagRequests?: boolean;
  timeoutMs?: number;
  retry?: RetryPolicy;
  /** The bot's clock, which the times it looks pipelines up by are read on. */
  now?: () => Date;
}

/** What gitbeaker's resources are built with: the bot's host, token, timeout and transport. */
type ResourceOptions = ConstructorParameters<typeof Projects>[0];

/**
 * The gitbeaker resources the bot calls, and only those: gitbeaker's `Gitlab` builds all of its
 * two hundred, each with its own set of rate limiters, which took 20 ms (6 ms warm) of every start
 * and kept thousands of objects alive for nothing.
 */
function resources(options: ResourceOptions) {
  return {
    Projects: new Projects(options),
    Metadata: new Metadata(options),
    Pipelines: new Pipelines(options),
    Jobs: new Jobs(options),
    JobArtifacts: new JobArtifacts(options),
    ProjectTerraformState: new ProjectTerraformState(options),
  };
}

/** gitbeaker with the bot's token, and how every call is run: what each area of the port uses. */
export interface GitlabClient {
  api: ReturnType<typeof resources>;
  options: GitlabOptions;
  timeoutMs: number;
  /** Runs a request, once more with a re-read token when GitLab refused a rotated one. */
  withToken<T>(run: () => Promise<T>): Promise<T>;
  /** What a typed error says the bot asked. */
  context(ask: GitlabAsk): GitlabErrorContext;
  /** Runs one GitLab call, turning its failure into a typed error and its answer into checked data. */
  call<T>(ask: GitlabAsk, schema: z.ZodType<T>, run: () => Promise<unknown>): Promise<T>;
  /** The project's full path: GraphQL names projects by path; GITLAB_PROJECT may be a numeric ID. */
  projectPath(): Promise<string>;
  /** How far GitLab's clock runs behind the bot's, as its answers say. */
  serverClock: ServerClock;
}

const PathSchema = z.object({ path_with_namespace: z.string() });

export function createGitlabClient(options: GitlabOptions): GitlabClient {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const token: SecretSource =
    typeof options.token === "string" ? fixedSecret(options.token) : options.token;
  const serverClock = createServerClock();
  const now = options.now ?? (() => new Date());
  const api = resources({
    host: options.url,
    token: () => token.get(),
    queryTimeout: timeoutMs,
    requesterFn: createRequester(options.retry, (response) => {
      serverClock.observe(response.headers.get("date"), now().getTime());
    }),
  });

  /**
   * Runs a request; when GitLab refuses the token (401) and a re-read gives a different one
   * (rotated in Vault), runs it once more. GitLab acted on nothing it answered 401 to.
   */
  async function withToken<T>(run: () => Promise<T>): Promise<T> {
    const used = await token.get();
    try {
      return await run();
    } catch (error) {
      if (
        error instanceof GitbeakerRequestError &&
        error.cause?.response.status === 401 &&
        // A Vault failure here says more than GitLab's 401: it propagates.
        (await token.refresh(used))
      ) {
        return run();
      }
      throw error;
    }
  }

  const context = (ask: GitlabAsk): GitlabErrorContext => ({
    url: options.url,
    project: options.project,
    ask,
    timeoutMs,
  });

  async function call<T>(ask: GitlabAsk, schema: z.ZodType<T>, run: () => Promise<unknown>) {
    let response: unknown;
    try {
      response = await withToken(run);
    } catch (error) {
      throw gitlabError(error, context(ask));
    }
    const parsed = schema.safeParse(response);
    if (!parsed.success) throw gitlabError(parsed.error, context(ask));
    return parsed.data;
  }

  let fullPath: Promise<string> | undefined;
  function projectPath(): Promise<string> {
    if (!/^\d+$/.test(options.project)) return Promise.resolve(options.project);
    fullPath ??= call({ what: "read_project" }, PathSchema, () =>
      api.Projects.show(options.project),
    ).then(
      (project) => project.path_with_namespace,
      (error: unknown) => {
        fullPath = undefined;
        throw error;
      },
    );
    return fullPath;
  }

  return { api, options, timeoutMs, withToken, context, call, projectPath, serverClock };
}
