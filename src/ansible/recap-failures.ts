/**
 * The failures the recap reader collects, and how they are told apart and described: pure
 * helpers of `recap.ts`.
 */
import type { FailureKind, HostRecap, TaskFailure } from "./recap.js";
import { readJsonPayload, readYamlPayload } from "./result-payload.js";

// CSI sequences (colours, `\e[0K`), OSC sequences and two-character escapes.
// eslint-disable-next-line no-control-regex -- matching the escape character is the point
export const ANSI_ESCAPE = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])/g;

export interface FailureRecord {
  host: string;
  task: string;
  play: string | undefined;
  kind: FailureKind;
  item: string | undefined;
  message: string;
  ignored: boolean;
  /** Counts task banners, so failures of one task on one host can be grouped. */
  taskSeq: number;
}

export type FailureDraft = Omit<FailureRecord, "message">;

export interface BraceScan {
  depth: number;
  inString: boolean;
  escaped: boolean;
}

export interface PendingPayload {
  draft: FailureDraft;
  text: string;
  scan: BraceScan;
  /** The YAML result format: the result is on the indented lines below `=>`. */
  yaml: boolean;
}

/** The text a terminal would show for one log line: no escape codes, nothing before a `\r`. */
export function visibleText(raw: string): string {
  const line = raw.replace(ANSI_ESCAPE, "").replace(/\r+$/, "");
  const cr = line.lastIndexOf("\r");
  return cr === -1 ? line : line.slice(cr + 1);
}

/** `host -> delegate` becomes `host`. */
export function hostName(label: string): string {
  const arrow = label.indexOf(" -> ");
  return arrow === -1 ? label : label.slice(0, arrow);
}

export function emptyRecap(host: string): HostRecap {
  return { host, ok: 0, changed: 0, unreachable: 0, failed: 0, skipped: 0, rescued: 0, ignored: 0 };
}

/** Follows `{`/`[` nesting through `text`, skipping brackets inside JSON strings. */
export function scanBraces(scan: BraceScan, text: string): void {
  for (const ch of text) {
    if (scan.inString) {
      if (scan.escaped) scan.escaped = false;
      else if (ch === "\\") scan.escaped = true;
      else if (ch === '"') scan.inString = false;
    } else if (ch === '"') {
      scan.inString = true;
    } else if (ch === "{" || ch === "[") {
      scan.depth++;
    } else if (ch === "}" || ch === "]") {
      scan.depth--;
      if (scan.depth === 0) return;
    }
  }
}

export function finishFailure(draft: FailureDraft, payload: string, yaml: boolean): FailureRecord {
  const { message, unreachable } = yaml ? readYamlPayload(payload) : readJsonPayload(payload);
  return { ...draft, kind: unreachable ? "unreachable" : draft.kind, message };
}

/**
 * Turns records into failures, settling what the lines themselves do not say:
 * - A loop's item failures and the task's own failure for that host form one outcome, ignored
 *   when `...ignoring` followed any of them.
 * - Ansible counts a failure that a `rescue` section took over as `rescued`, not `failed`, and a
 *   host stops at its first failure that nothing rescued. So when a host's outcomes that were
 *   not ignored number exactly `failed + rescued`, the last `failed` of them stopped the host and
 *   the ones before were rescued. When they do not add up (lines missing, such as failures sent
 *   to stderr), `rescued` is left out.
 * - `ignore_unreachable` counts an unreachable task as ok and ignored and prints nothing more,
 *   so an unreachable failure for a host whose recap shows unreachable=0 was ignored.
 */
export function describeFailures(
  records: FailureRecord[],
  recap: Map<string, HostRecap>,
): TaskFailure[] {
  const outcomes = new Map<string, FailureRecord[]>();
  for (const record of records) {
    const key = outcomeKey(record);
    const group = outcomes.get(key);
    if (group === undefined) outcomes.set(key, [record]);
    else group.push(record);
  }

  const ignored = new Set<string>();
  const failedByHost = new Map<string, string[]>();
  for (const [key, group] of outcomes) {
    const first = group[0];
    if (first === undefined) continue;
    if (group.some((r) => r.ignored)) {
      ignored.add(key);
    } else if (first.kind === "failed") {
      const keys = failedByHost.get(first.host) ?? [];
      keys.push(key);
      failedByHost.set(first.host, keys);
    } else if (recap.get(first.host)?.unreachable === 0) {
      ignored.add(key);
    }
  }

  const rescued = new Map<string, boolean>();
  for (const [host, keys] of failedByHost) {
    const stats = recap.get(host);
    if (stats === undefined || keys.length !== stats.failed + stats.rescued) continue;
    keys.forEach((key, index) => rescued.set(key, index < keys.length - stats.failed));
  }

  return records.map((record) => {
    const key = outcomeKey(record);
    const failure: TaskFailure = {
      host: record.host,
      task: record.task,
      ...(record.play === undefined ? {} : { play: record.play }),
      kind: record.kind,
      message: record.message,
      ...(record.item === undefined ? {} : { item: record.item }),
      ignored: ignored.has(key),
    };
    if (record.kind === "failed") {
      // A failure under ignore_errors never reaches a rescue section.
      const wasRescued = failure.ignored ? false : rescued.get(key);
      if (wasRescued !== undefined) failure.rescued = wasRescued;
    }
    return failure;
  });
}

export function outcomeKey(record: FailureRecord): string {
  return `${record.taskSeq}\u0000${record.kind}\u0000${record.host}`;
}
