import type { FakeGitlab } from "../../sandbox/simulators/gitlab/index.js";

/**
 * The unlocks vmbot sent for the states whose lock path matches `path`: each `DELETE …/lock`
 * but those naming the lock vmbot's own reading of a lock's ID takes (`vmbot-…`), which it gives
 * back, harmlessly refused when it holds nothing.
 */
export function lockRemovals(gitlab: Pick<FakeGitlab, "requestsTo">, path: RegExp) {
  return gitlab
    .requestsTo("DELETE", path)
    .filter((request) => !(request.query.get("ID") ?? "").startsWith("vmbot-"));
}
