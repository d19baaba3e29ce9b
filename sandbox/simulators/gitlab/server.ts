/** The server: the fake GitLab on a loopback port, and the drivers the tests and sandbox use. */
import { FaultQueue, InFlight, requestMatches, RequestLog, Waits } from "../faults.js";
import { startFakeServer } from "../http.js";
import type { FakeGitlab } from "./fake.js";
import { HookEntities, Webhooks } from "./hooks.js";
import { respond } from "./respond.js";
import { GitlabModel } from "./runner.js";
import { terraformDrivers } from "./terraform-drivers.js";
import type { FailureMatch, FakeGitlabOptions, InjectedFailure } from "./types.js";

export async function startFakeGitlab(options: FakeGitlabOptions): Promise<FakeGitlab> {
  const model = new GitlabModel(options, options.now ?? (() => new Date()));
  const entities = new HookEntities(model);
  const log = new RequestLog();
  const faults = new FaultQueue<FailureMatch, InjectedFailure>(requestMatches);
  const waits = new Waits();
  const inFlight = new InFlight();
  const webhooks = new Webhooks(
    entities,
    () => model.baseUrl,
    () => model.timestamp(),
  );
  model.onEvent = (event) => {
    webhooks.onEvent(event);
  };
  let closed = false;

  let autoTimer: NodeJS.Timeout | undefined;
  const stopAutoAdvance = (): void => {
    if (autoTimer !== undefined) clearInterval(autoTimer);
    autoTimer = undefined;
  };

  const server = await startFakeServer((req, res) =>
    inFlight.run(async () => {
      log.record(req);
      await respond({ model, entities, faults, waits }, req, res);
    }),
  );
  model.baseUrl = server.url;

  return {
    url: server.url,
    user: model.user,
    requests: log.requests,
    pipelines: model.pipelines,
    requestsTo: (method, pathPattern) => log.to(pathPattern, method),
    failNext: (match, failure, failOptions) => {
      faults.add(match, failure, failOptions?.times);
    },
    setTokenValid: (valid) => {
      model.tokenValid = valid;
    },
    rotateToken: (token) => {
      model.token = token;
      model.tokenValid = true;
    },
    setRole: (projectId, role) => {
      const project = model.projects.find((p) => p.id === projectId);
      if (!project) throw new Error(`no project ${projectId} in the fake GitLab`);
      project.role = role;
    },
    addUser: (user) => model.addUser(user),
    ...terraformDrivers(model),
    pipeline: (pipelineId) => model.pipelineById(pipelineId),
    job: (pipelineId, jobName) => model.jobByName(pipelineId, jobName),
    setJobStatus: (pipelineId, jobName, status, statusOptions) => {
      const job = model.jobByName(pipelineId, jobName);
      model.setJobStatus(job, status, statusOptions?.failureReason);
      model.process(model.pipelineById(pipelineId));
      return job;
    },
    setJobLog: (pipelineId, jobName, log) => {
      model.jobByName(pipelineId, jobName).log = log;
    },
    appendJobLog: (pipelineId, jobName, text) => {
      model.jobByName(pipelineId, jobName).log += text;
    },
    setJobArtifact: (pipelineId, jobName, path, content) => {
      model.jobByName(pipelineId, jobName).artifacts.set(path, content);
    },
    onPipelineCreated: (listener) => {
      model.createdListeners.add(listener);
      return () => {
        model.createdListeners.delete(listener);
      };
    },
    setTraces: (pipelineId, traces) => {
      const pipeline = model.pipelineById(pipelineId);
      pipeline.traces = { ...pipeline.traces, ...traces };
    },
    advance: (pipelineId) => model.advance(model.pipelineById(pipelineId)),
    failJob: (pipelineId, jobName, reason = "script_failure") => {
      model.failJob(model.jobByName(pipelineId, jobName), reason);
    },
    cancelPipeline: (pipelineId) => {
      model.cancel(model.pipelineById(pipelineId));
    },
    retryJob: (pipelineId, jobName) => {
      const job = model.jobByName(pipelineId, jobName);
      const retried = model.retry(job);
      if (retried === undefined) {
        throw new Error(`job ${jobName} (#${job.id}) cannot be retried as ${job.status}`);
      }
      return retried;
    },
    playJob: (pipelineId, jobName, playOptions) => {
      const job = model.jobByName(pipelineId, jobName);
      const by = playOptions?.as === undefined ? model.user : model.userByUsername(playOptions.as);
      const played = model.play(job, by);
      if (played === undefined) {
        throw new Error(
          `job ${jobName} (#${job.id}, ${job.when}) cannot be played as ${job.status}`,
        );
      }
      return played;
    },
    autoAdvance: ({ intervalMs }) => {
      stopAutoAdvance();
      autoTimer = setInterval(() => {
        for (const pipeline of model.pipelines) model.advance(pipeline);
      }, intervalMs);
    },
    stopAutoAdvance,
    deliverHooks: (target) => {
      webhooks.deliverTo(target);
    },
    stopHooks: () => {
      webhooks.stop();
    },
    hookDeliveries: webhooks.deliveries,
    mark: () => log.mark(),
    requestsSince: (mark) => log.since(mark),
    settled: async () => {
      // A delivered hook can cause requests, and a request can cause hooks: wait for both.
      for (;;) {
        const queue = webhooks.delivered;
        await queue;
        await inFlight.idle();
        if (queue === webhooks.delivered && !inFlight.busy) return;
      }
    },
    close: async () => {
      if (closed) return;
      closed = true;
      stopAutoAdvance();
      await webhooks.close();
      waits.close();
      await server.close();
    },
  };
}
