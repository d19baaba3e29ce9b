/** KV version 2: reading secrets and their metadata. */
import { type ParsedRequest } from "./auth.js";
import { goTime, isRecord } from "./helpers.js";
import { type KvKey, type KvVersion, VaultModel } from "./model.js";
import { envelope, errors, ok, type Reply } from "./replies.js";

function kvMetadata(entry: KvKey, version: KvVersion): Record<string, unknown> {
  return {
    created_time: goTime(version.createdMs),
    custom_metadata: entry.customMetadata ? { ...entry.customMetadata } : null,
    deletion_time: version.deletionMs === null ? "" : goTime(version.deletionMs),
    destroyed: version.destroyed,
    version: version.version,
  };
}

/** `<mount>/data/<path>` and `<mount>/metadata/<path>` (vault-plugin-secrets-kv). */
export function kvRequest(
  model: VaultModel,
  mount: string,
  rest: string,
  parsed: ParsedRequest,
): Reply {
  const store = model.kvMount(mount);
  const method = parsed.req.method;
  const [kind, ...segments] = rest.split("/");
  const key = segments.join("/");

  if (kind === "data" && key !== "") {
    if (method === "GET") {
      const entry = store.get(key);
      if (!entry) return errors(404);
      const requested = Number(parsed.req.query.get("version") ?? "0");
      const number = Number.isInteger(requested) && requested > 0 ? requested : entry.current;
      const version = entry.versions.get(number);
      if (!version) return errors(404);
      const metadata = kvMetadata(entry, version);
      if ((version.deletionMs !== null && version.deletionMs <= model.nowMs) || version.destroyed) {
        // `logical.RespondWithStatusCode(resp, req, 404)`: the envelope, before the router
        // sets the mount type.
        return { status: 404, body: envelope({ data: { data: null, metadata } }) };
      }
      return ok({ data: { data: version.data, metadata }, mountType: "kv" });
    }
    if (method === "POST" || method === "PUT") {
      if (!isRecord(parsed.body.data)) return errors(400, "no data provided");
      const entry = store.get(key);
      const options = isRecord(parsed.body.options) ? parsed.body.options : {};
      if (options.cas !== undefined && Number(options.cas) !== (entry?.current ?? 0)) {
        return errors(400, "check-and-set parameter did not match the current version");
      }
      const version = model.writeSecret(mount, key, parsed.body.data);
      const written = store.get(key);
      if (written === undefined) throw new Error(`the secret ${key} was not written`);
      return ok({ data: kvMetadata(written, version), mountType: "kv" });
    }
    if (method === "DELETE") {
      const entry = store.get(key);
      const version = entry?.versions.get(entry.current);
      if (version) version.deletionMs ??= model.nowMs;
      return { status: 204 };
    }
    return errors(405, "1 error occurred:\n\t* unsupported operation\n\n");
  }
  if (kind === "destroy" && key !== "" && (method === "POST" || method === "PUT")) {
    const versions = Array.isArray(parsed.body.versions) ? parsed.body.versions : [];
    if (versions.length === 0) return errors(400, "no version number provided");
    model.destroyVersions(mount, key, versions.map(Number));
    return { status: 204 };
  }
  if (kind === "metadata" && key !== "" && method === "DELETE") {
    store.delete(key);
    return { status: 204 };
  }
  return errors(404, "1 error occurred:\n\t* unsupported path\n\n");
}
