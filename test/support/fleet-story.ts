/**
 * What a fleet test says when it waited too long: each replica's leadership and trouble (its
 * log's lines from warnings up, and those about leading), and, for one request, its message
 * and its pipeline's jobs in GitLab. Short enough for a CI log.
 */
import { messageOf, type Fleet } from "./fleet.js";

/** Lines kept of each replica's log. */
const LINES_PER_REPLICA = 12;
/** pino's level for warnings. */
const WARN = 40;

interface LogLine {
  level?: number;
  time?: number;
  msg?: string;
  err?: { message?: string };
}

/** Changes of leader (and pauses) kept whatever else the log says: who led, and when. */
const LEAD_LINES = 4;

/** Whether a log line says who leads. */
const aboutLeading = (line: LogLine) => /\blead|\bpaused\b/.test(line.msg ?? "");

/** Whether a log line is worth telling: a warning or worse, or a change of leader. */
const told = (line: LogLine) => (line.level ?? 0) >= WARN || aboutLeading(line);

/**
 * One replica's story: its last log lines worth telling, and its last changes of leader even
 * when many warnings came after them.
 */
function replicaStory(output: string): string[] {
  const lines: { text: string; leading: boolean }[] = [];
  for (const text of output.split("\n")) {
    if (!text.startsWith("{")) continue;
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      continue;
    }
    if (!told(line)) continue;
    const at = line.time === undefined ? "" : new Date(line.time).toISOString().slice(11, 23);
    const error = line.err?.message === undefined ? "" : ` (${line.err.message})`;
    lines.push({
      text: `${at} ${String(line.level)} ${line.msg ?? ""}${error}`,
      leading: aboutLeading(line),
    });
  }
  const last = new Set(lines.slice(-LINES_PER_REPLICA));
  for (const line of lines.filter((l) => l.leading).slice(-LEAD_LINES)) last.add(line);
  return lines.filter((line) => last.has(line)).map((line) => line.text);
}

/** The fleet's state for a timeout's message; of the request `requestId` (VM `name`) if given. */
export function fleetStory(f: Fleet, request?: { requestId: string; name: string }): string {
  const parts = f.replicas.map((replica) => {
    const { child } = replica.bot;
    const state = child.exitCode ?? child.signalCode ?? "running";
    const lines = replicaStory(replica.bot.stdout());
    return `replica ${replica.index} (${String(state)}):\n  ${lines.join("\n  ") || "(nothing)"}`;
  });
  if (request !== undefined) {
    const { requestId, name } = request;
    const pipelines = f.gitlab.pipelines
      .filter((p) => Object.values(p.inputs).includes(name))
      .map((p) => `#${p.id} ${p.status}: ${p.jobs.map((j) => `${j.name} ${j.status}`).join(", ")}`);
    parts.push(
      `request ${requestId} (${name}): message "${messageOf(f, requestId)?.text ?? "(none)"}"; ` +
        `pipelines ${pipelines.join("; ") || "(none)"}`,
    );
  }
  return parts.join("\n");
}
