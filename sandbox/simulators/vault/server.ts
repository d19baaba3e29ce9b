/** The server: the fake Vault on a loopback port, and its drivers. */
import { FaultQueue, RequestLog, requestMatches, Waits } from "../faults.js";
import { startFakeServer } from "../http.js";
import { goTime } from "./helpers.js";
import { trimSlashes, VaultModel } from "./model.js";
import { defaultFailureBody, write } from "./replies.js";
import { dispatch } from "./routes.js";
import {
  type FailureMatch,
  type FakeVault,
  type FakeVaultOptions,
  type InjectedFailure,
} from "./types.js";

export async function startFakeVault(options: FakeVaultOptions = {}): Promise<FakeVault> {
  const model = new VaultModel(options);
  const log = new RequestLog();
  const faults = new FaultQueue<FailureMatch, InjectedFailure>(requestMatches);
  const waits = new Waits();
  let closed = false;

  const server = await startFakeServer(async (req, res) => {
    log.record(req);
    const failure = faults.take(req);
    if (failure === "reset") {
      res.socket?.destroy();
      return;
    }
    if (failure === "hang") {
      await waits.forever();
      res.destroy();
      return;
    }
    if (failure !== undefined && "delayMs" in failure) {
      if (!(await waits.sleep(failure.delayMs))) {
        res.destroy();
        return;
      }
    } else if (failure !== undefined) {
      write(res, {
        status: failure.status,
        body: failure.body ?? defaultFailureBody(failure.status),
      });
      return;
    }
    write(res, dispatch(model, req));
  });

  const keyOf = (path: string, mount: string | undefined): { mount: string; key: string } => ({
    mount: model.mountOf(mount),
    key: trimSlashes(path),
  });

  return {
    url: server.url,
    requests: log.requests,
    requestsTo: (method, pathPattern) => log.to(pathPattern, method),
    mark: () => log.mark(),
    requestsSince: (mark) => log.since(mark),

    now: () => new Date(model.nowMs),
    advance: (seconds) => {
      if (!(seconds >= 0)) throw new Error(`cannot move the fake Vault's clock by ${seconds}s`);
      model.nowMs += Math.round(seconds * 1000);
    },

    writeSecret: (path, data, writeOptions) => {
      const version = model.writeSecret(
        model.mountOf(writeOptions?.mount),
        path,
        data,
        writeOptions?.customMetadata,
      );
      return { version: version.version, createdTime: goTime(version.createdMs) };
    },
    deleteSecret: (path, deleteOptions) => {
      const { mount, key } = keyOf(path, deleteOptions?.mount);
      const entry = model.kvMount(mount).get(key);
      const version = entry?.versions.get(entry.current);
      if (!version) throw new Error(`no secret ${mount}/${key} in the fake Vault`);
      version.deletionMs ??= model.nowMs;
    },
    destroySecretVersions: (path, versions, destroyOptions) => {
      const { mount, key } = keyOf(path, destroyOptions?.mount);
      model.destroyVersions(mount, key, versions);
    },
    deleteSecretMetadata: (path, deleteOptions) => {
      const { mount, key } = keyOf(path, deleteOptions?.mount);
      model.kvMount(mount).delete(key);
    },
    secret: (path, secretOptions) => {
      const { mount, key } = keyOf(path, secretOptions?.mount);
      const entry = model.kvMount(mount).get(key);
      if (!entry) return undefined;
      return {
        mount,
        path: key,
        currentVersion: entry.current,
        customMetadata: entry.customMetadata,
        versions: [...entry.versions.values()].map((v) => ({
          version: v.version,
          data: v.data,
          createdTime: goTime(v.createdMs),
          deletionTime: v.deletionMs === null ? "" : goTime(v.deletionMs),
          destroyed: v.destroyed,
        })),
      };
    },

    issueToken: (issueOptions) => model.issueToken(issueOptions ?? {}).id,
    token: (id) => {
      const entry = model.tokens.get(id);
      if (!entry) return undefined;
      return {
        accessor: entry.accessor,
        policies: entry.policies,
        path: entry.path,
        displayName: entry.displayName,
        metadata: entry.meta,
        issueTime: new Date(entry.issueMs),
        expireTime: entry.expireMs === null ? null : new Date(entry.expireMs),
        ttl: model.ttlOf(entry),
        renewable: entry.renewable && model.renewalRefusal !== "not-renewable",
        renewals: entry.renewals,
        revoked: entry.revoked,
        expired: model.expired(entry),
      };
    },
    revokeToken: (id) => {
      const entry = model.tokens.get(id);
      if (!entry) throw new Error("no such token in the fake Vault");
      entry.revoked = true;
    },

    denyPath: (path, denyOptions) => {
      model.denyRules.push({ pattern: trimSlashes(path), token: denyOptions?.token });
    },
    allowPath: (path, allowOptions) => {
      const pattern = trimSlashes(path);
      model.denyRules = model.denyRules.filter(
        (rule) => !(rule.pattern === pattern && rule.token === allowOptions?.token),
      );
    },

    refuseRenewal: (how = "permission-denied") => {
      model.renewalRefusal = how;
    },
    allowRenewal: () => {
      model.renewalRefusal = null;
    },

    seal: () => {
      model.sealed = true;
    },
    unseal: () => {
      model.sealed = false;
    },
    get sealed() {
      return model.sealed;
    },
    setNodeState: (state) => {
      model.nodeState = state;
    },

    configureAppRole: (role) => {
      model.appRole = role;
    },
    configureKubernetes: (role) => {
      model.configureKubernetes(role);
    },

    failNext: (match, failure, failOptions) => {
      faults.add(match, failure, failOptions?.times);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      waits.close();
      await server.close();
    },
  };
}
