/**
 * The example Kubernetes manifest (examples/kubernetes/vmbot.yaml) parses, and says what the
 * README says of it: two replicas, probes on /healthz, the image's non-root user, secrets by
 * reference, a Service for HTTP mode and a PodDisruptionBudget; every variable it sets is one
 * vmbot reads, with a value vmbot takes.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { EnvSchema } from "../../src/config/env.js";

const ROOT = resolve(import.meta.dirname, "../..");

const LabelsSchema = z.record(z.string(), z.string());
const ProbeSchema = z.object({
  httpGet: z.object({ path: z.string(), port: z.union([z.string(), z.number()]) }),
  periodSeconds: z.number(),
  timeoutSeconds: z.number(),
  failureThreshold: z.number(),
});
const EnvVarSchema = z.object({
  name: z.string(),
  value: z.string().optional(),
  valueFrom: z.object({ secretKeyRef: z.object({ name: z.string(), key: z.string() }) }).optional(),
});
const ContainerSchema = z.object({
  name: z.string(),
  image: z.string(),
  ports: z.array(z.object({ name: z.string(), containerPort: z.number() })),
  envFrom: z.array(z.object({ configMapRef: z.object({ name: z.string() }) })),
  env: z.array(EnvVarSchema),
  readinessProbe: ProbeSchema,
  livenessProbe: ProbeSchema,
  resources: z.object({
    requests: z.object({ cpu: z.string(), memory: z.string() }),
    limits: z.object({ memory: z.string() }),
  }),
  securityContext: z.object({
    allowPrivilegeEscalation: z.literal(false),
    readOnlyRootFilesystem: z.boolean(),
    capabilities: z.object({ drop: z.array(z.string()) }),
  }),
});
const DeploymentSchema = z.object({
  kind: z.literal("Deployment"),
  metadata: z.object({ name: z.string() }),
  spec: z.object({
    replicas: z.number(),
    selector: z.object({ matchLabels: LabelsSchema }),
    strategy: z.object({
      rollingUpdate: z.object({ maxSurge: z.number(), maxUnavailable: z.number() }),
    }),
    template: z.object({
      metadata: z.object({ labels: LabelsSchema }),
      spec: z.object({
        securityContext: z.object({
          runAsNonRoot: z.boolean(),
          runAsUser: z.number(),
          runAsGroup: z.number(),
        }),
        containers: z.array(ContainerSchema).length(1),
      }),
    }),
  }),
});
const ServiceSchema = z.object({
  kind: z.literal("Service"),
  spec: z.object({
    selector: LabelsSchema,
    ports: z.array(z.object({ port: z.number(), targetPort: z.union([z.string(), z.number()]) })),
  }),
});
const BudgetSchema = z.object({
  kind: z.literal("PodDisruptionBudget"),
  apiVersion: z.string(),
  spec: z.object({ minAvailable: z.number(), selector: z.object({ matchLabels: LabelsSchema }) }),
});
const ConfigMapSchema = z.object({
  kind: z.literal("ConfigMap"),
  metadata: z.object({ name: z.string() }),
  data: z.record(z.string(), z.string()),
});

function manifest() {
  const documents = parseAllDocuments(
    readFileSync(resolve(ROOT, "examples/kubernetes/vmbot.yaml"), "utf8"),
  );
  if (!Array.isArray(documents)) throw new Error("no documents");
  for (const document of documents) expect(document.errors).toEqual([]);
  const objects = documents.map((document) => document.toJS() as { kind?: unknown });
  const one = <T>(schema: z.ZodType<T>, kind: string): T => {
    const found = objects.filter((object) => object.kind === kind);
    expect(found, kind).toHaveLength(1);
    return schema.parse(found[0]);
  };
  return {
    kinds: objects.map((object) => object.kind),
    deployment: one(DeploymentSchema, "Deployment"),
    service: one(ServiceSchema, "Service"),
    budget: one(BudgetSchema, "PodDisruptionBudget"),
    config: one(ConfigMapSchema, "ConfigMap"),
  };
}

describe("the example Kubernetes manifest", () => {
  const { kinds, deployment, service, budget, config } = manifest();
  const pod = deployment.spec.template;
  const [container] = pod.spec.containers;
  if (container === undefined) throw new Error("no container");

  it("holds a ConfigMap, a Deployment of two replicas, a Service and a PodDisruptionBudget", () => {
    expect(kinds).toEqual(["ConfigMap", "Deployment", "Service", "PodDisruptionBudget"]);
    expect(deployment.spec.replicas).toBe(2);
    // A rolling deploy starts the new pod before an old one stops.
    expect(deployment.spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    expect(deployment.spec.selector.matchLabels).toEqual(pod.metadata.labels);
  });

  it("checks readiness and liveness on /healthz at the container's HTTP port, liveness the more patient", () => {
    const http = container.ports.find((port) => port.name === "http");
    expect(http?.containerPort).toBe(3000);
    expect(container.env.find((variable) => variable.name === "PORT")?.value).toBe("3000");
    for (const probe of [container.readinessProbe, container.livenessProbe]) {
      expect(probe.httpGet).toEqual({ path: "/healthz", port: "http" });
      // /healthz waits up to 2 s for the database: the probe waits longer.
      expect(probe.timeoutSeconds).toBeGreaterThan(2);
    }
    const patience = (probe: z.infer<typeof ProbeSchema>) =>
      probe.periodSeconds * probe.failureThreshold;
    expect(patience(container.livenessProbe)).toBeGreaterThan(
      4 * patience(container.readinessProbe),
    );
  });

  it("runs as the image's non-root user, with resources bounded", () => {
    expect(readFileSync(resolve(ROOT, "Dockerfile"), "utf8")).toMatch(/^USER node$/m);
    // The node images' `node` user and group.
    expect(pod.spec.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
    });
    expect(container.securityContext.capabilities.drop).toEqual(["ALL"]);
    expect(container.resources.limits.memory).toMatch(/^\d+Mi$/);
  });

  it("reads the database and the tokens from a Secret, never from a value in the file", () => {
    const secret = [
      "VMBOT_DB",
      "SLACK_BOT_TOKEN",
      "SLACK_SIGNING_SECRET",
      "GITLAB_TOKEN",
      "GITLAB_WEBHOOK_SECRET",
    ];
    for (const name of secret) {
      const variable = container.env.find((each) => each.name === name);
      expect(variable?.value, name).toBeUndefined();
      expect(variable?.valueFrom?.secretKeyRef, name).toEqual({ name: "vmbot", key: name });
      expect(config.data[name], name).toBeUndefined();
    }
    expect(container.envFrom).toEqual([{ configMapRef: { name: config.metadata.name } }]);
  });

  it("sets only variables vmbot reads, each with a value it takes", () => {
    const names = [...container.env.map((variable) => variable.name), ...Object.keys(config.data)];
    const known = Object.keys(EnvSchema.shape);
    expect(names.filter((name) => !known.includes(name))).toEqual([]);
    const values = { ...config.data, PORT: "3000" };
    for (const [name, value] of Object.entries(values)) {
      const field = EnvSchema.shape[name as keyof typeof EnvSchema.shape];
      expect(field.safeParse(value).success, `${name}=${value}`).toBe(true);
    }
    expect(config.data.LEADER_TTL).toBe("15s");
  });

  it("serves the pods' HTTP port, and keeps one pod through voluntary disruptions", () => {
    expect(service.spec.selector).toEqual(pod.metadata.labels);
    expect(service.spec.ports.map((port) => port.targetPort)).toEqual(["http"]);
    expect(budget.apiVersion).toBe("policy/v1");
    expect(budget.spec.minAvailable).toBe(1);
    expect(budget.spec.selector.matchLabels).toEqual(pod.metadata.labels);
  });
});
