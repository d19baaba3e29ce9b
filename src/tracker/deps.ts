import type { Config } from "../config.js";
import type { Effects } from "../effects.js";
import type { GitlabPort } from "../gitlab/gitlab.js";
import type { Logger } from "../logger.js";
import type { ThreadPoster } from "../slack/thread.js";
import type { AsyncStore } from "../store/async.js";

/**
 * What a tracker step that changes something in GitLab needs: the journal to do it once, and the
 * request's thread to say what came of it.
 */
export interface PipelineEffectDeps {
  config: Config;
  store: AsyncStore;
  gitlab: GitlabPort;
  effects: Effects;
  log: Logger;
  post: ThreadPoster;
}
