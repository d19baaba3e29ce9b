import { readFileSync, watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";
import type { Logger } from "../logger.js";
import { parsePolicy, policyFromLists, type Policy, type PolicyParse } from "./schema.js";

/**
 * The policy in force: read from VMBOT_POLICY at start-up, read again on SIGHUP and when the
 * file changes on disk. A file that does not pass is refused with its problems named, and the
 * last good policy goes on deciding.
 */

export interface PolicyRefusal {
  at: string;
  problems: string[];
}

export interface PolicySource {
  current: () => Policy;
  /** The last reload that was refused, while the policy before it still decides. */
  refused: () => PolicyRefusal | undefined;
  /** Reads the file again now. */
  reload: () => PolicyParse;
  /** Stops watching the file and SIGHUP. */
  stop: () => void;
}

export class PolicyFileError extends Error {
  override name = "PolicyFileError";
  constructor(
    readonly path: string,
    readonly problems: string[],
  ) {
    super(`the policy file ${path} cannot be used:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

/** Reads and checks the policy file at `path`. */
export function readPolicyFile(path: string): PolicyParse {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unreadable";
    return { ok: false, problems: [`the file cannot be read (${code})`] };
  }
  return parsePolicy(text);
}

export interface PolicySourceOptions {
  /** VMBOT_POLICY; undefined makes the access lists the policy. */
  path: string | undefined;
  lists: Parameters<typeof policyFromLists>[0];
  log: Logger;
  /** Watch the file and SIGHUP (on by default). */
  watch?: boolean;
  now?: () => Date;
}

/** Throws PolicyFileError when the file named at start-up does not pass. */
export function createPolicySource(options: PolicySourceOptions): PolicySource {
  const { path, log } = options;
  if (path === undefined) {
    const fixed = policyFromLists(options.lists);
    return {
      current: () => fixed,
      refused: () => undefined,
      reload: () => ({ ok: true, policy: fixed }),
      stop: () => undefined,
    };
  }
  const first = readPolicyFile(path);
  if (!first.ok) throw new PolicyFileError(path, first.problems);
  let policy: Policy = { ...first.policy, source: path };
  let refusal: PolicyRefusal | undefined;
  const now = options.now ?? (() => new Date());
  log.info({ policy: path }, "request policy loaded");

  const reload = (): PolicyParse => {
    const read = readPolicyFile(path);
    if (read.ok) {
      policy = { ...read.policy, source: path };
      refusal = undefined;
      log.info({ policy: path }, "request policy reloaded");
    } else if (refusal?.problems.join("\n") !== read.problems.join("\n")) {
      // One change on disk can be seen more than once: the same refusal keeps its first time.
      refusal = { at: now().toISOString(), problems: read.problems };
      log.error(
        { policy: path, problems: read.problems },
        "the changed policy file was refused; the policy loaded before still decides",
      );
    }
    return read;
  };

  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  const onHup = () => {
    reload();
  };
  if (options.watch !== false) {
    process.on("SIGHUP", onHup);
    try {
      // The directory, not the file: editors and config maps replace the file with a new one.
      watcher = watch(dirname(path), (_event, name) => {
        if (name !== null && name !== basename(path)) return;
        clearTimeout(timer);
        timer = setTimeout(reload, 100);
      });
      watcher.on("error", (error) => {
        log.warn({ err: error }, "stopped watching the policy file; SIGHUP still reloads it");
      });
    } catch (error) {
      log.warn({ err: error }, "cannot watch the policy file; SIGHUP reloads it");
    }
  }

  return {
    current: () => policy,
    refused: () => refusal,
    reload,
    stop() {
      process.off("SIGHUP", onHup);
      clearTimeout(timer);
      watcher?.close();
    },
  };
}

/** What `/healthz` says while a changed policy file is refused. */
export const policyRefusedNote = (refusal: PolicyRefusal) =>
  `the policy file changed at ${refusal.at} was refused (${refusal.problems.join("; ")}); the policy loaded before still decides`;
