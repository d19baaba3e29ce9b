/**
 * The bot as `src/main.ts` runs it, for the crash tests: it kills itself (SIGKILL, nothing
 * flushed or closed, as a power cut would) at the crash point named by its first argument, e.g.
 * `create_pipeline:after`. The production entry has no such hook.
 */
import { environment, fail, failToStart, runVmbot } from "../../src/run.js";

const crashAt = process.argv[2];
if (crashAt === undefined || !/^[a-z_]+:(before|after)$/.test(crashAt)) {
  fail(`crash-entry: the crash point must look like create_pipeline:after (it is "${crashAt}")`);
}

runVmbot(environment(), {
  onCrashPoint: (point) => {
    if (point === crashAt) process.kill(process.pid, "SIGKILL");
  },
}).catch((error: unknown) => failToStart(error));
