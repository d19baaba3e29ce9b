/**
 * A wire-level fake of the Slack Web API for integration tests.
 *
 * The real `@slack/web-api` client (and Bolt's client) talks to it over HTTP with
 * `slackApiUrl: fake.apiUrl`. It answers like Slack does: HTTP 200 with
 * `{ ok: false, error }` for every platform error, HTTP 429 with `Retry-After`
 * when rate limited, and Slack-shaped success bodies. It keeps the state a test
 * asserts on (messages, ephemeral messages, views, uploads, response_url posts)
 * and enforces the rules that bite in production: trigger_id lifetime and single
 * use, Block Kit limits, view hashes.
 *
 * Faults: `failNext(method, failure)` answers the next call with a platform error or an HTTP
 * status, Slack having done nothing; with `{ afterEffect }` the call is done and its answer lost
 * (the connection reset, or a 5xx from Slack's edge), as a client that repeats it would post twice.
 *
 * Where Slack's documentation lists the error for a situation, that error is used.
 * Views with invalid blocks are refused with `invalid_arguments` (the views.*
 * methods do not document `invalid_blocks`); messages with `invalid_blocks`.
 */

export { interactiveElements } from "./arguments.js";
export {
  formatProblem,
  SLACK_LIMITS,
  validateBlocks,
  validateHomeView,
  validateModalView,
  type BlockProblem,
  type BlockSurface,
} from "./blocks.js";
export { messageObject } from "./directory.js";
export { startFakeSlack } from "./server.js";
export { isObject, slackTs, viewHash } from "./support.js";
export type * from "./types.js";
