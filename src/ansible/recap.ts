/**
 * Reads what `ansible-playbook` prints with its default stdout callback, as it appears in a CI
 * job log: the PLAY RECAP counts per host, the tasks that failed or found their host
 * unreachable (with the message Ansible gave), and the plays that ran. Colour codes
 * (`ANSIBLE_FORCE_COLOR=1`) and GitLab's section markers are removed first, so a coloured log
 * and its plain text give the same result.
 *
 * The parser takes one line at a time and keeps only the counts, the failures and at most one
 * unfinished result payload, so a long log costs little memory. It does no I/O.
 */

import { MAX_MESSAGE_LENGTH, readJsonPayload, readYamlPayload } from "./result-payload.js";

export { MAX_MESSAGE_LENGTH };

export interface HostRecap {
  host: string;
  ok: number;
  changed: number;
  unreachable: number;
  failed: number;
  skipped: number;
  /** 0 when the Ansible version does not print it (before 2.8). */
  rescued: number;
  /** 0 when the Ansible version does not print it (before 2.8). */
  ignored: number;
}

export type FailureKind = "failed" | "unreachable";

export interface TaskFailure {
  /** Inventory name of the host the task ran for (a delegate is left out). */
  host: string;
  /** Name from the `TASK [...]` (or `RUNNING HANDLER [...]`) banner before the failure. */
  task: string;
  /** Name from the `PLAY [...]` banner, when one came before. */
  play?: string;
  kind: FailureKind;
  /** The result's `msg`, else its `reason`, `stderr` or `module_stderr`; at most 500 characters. */
  message: string;
  /** The loop item's label, for `failed: [host] (item=...)` lines. */
  item?: string;
  /**
   * The failure did not stop the host: `...ignoring` followed it (`ignore_errors`), or, for an
   * unreachable host, the recap counts no unreachable task for it (`ignore_unreachable`).
   */
  ignored: boolean;
  /**
   * Whether a `rescue` section took over. The log does not say so next to the failure; it is
   * worked out from the host's recap, and left out when the log does not settle it.
   */
  rescued?: boolean;
}

export interface AnsibleRun {
  /** Recap rows in the order Ansible printed them; a host in several recaps has their sum. */
  hosts: HostRecap[];
  failures: TaskFailure[];
  /** Whether a `PLAY RECAP` banner was seen: without it the run did not finish. */
  recapFound: boolean;
  /** Play names in the order they started. */
  plays: string[];
}

export interface RecapParser {
  /** One line of the log, without its newline; text holding several lines is split. */
  push(line: string): void;
  /** What has been read so far. Pushing more lines afterwards is allowed. */
  result(): AnsibleRun;
}

/** Longest result payload kept in memory; beyond it the message is read from what was kept. */
const MAX_PAYLOAD_LENGTH = 64 * 1024;

// CSI sequences (colours, `\e[0K`), OSC sequences and two-character escapes.
// eslint-disable-next-line no-control-regex -- matching the escape character is the point
const ANSI_ESCAPE = /\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])/g;

const RECAP_BANNER = /^PLAY RECAP \*{3,}$/;
const PLAY_BANNER = /^PLAY(?: \[(.*?)\])?(?: \[CHECK MODE\])? \*{3,}$/;
const TASK_BANNER = /^(?:TASK|RUNNING HANDLER|CLEANUP TASK) \[(.*?)\](?: \[CHECK MODE\])? \*{3,}$/;
const ANY_BANNER = /^[A-Z].* \*{3,}$/;
const TASK_FAILURE = /^fatal: \[(.+?)\]: (FAILED|UNREACHABLE)! =>(.*)$/;
const ITEM_FAILURE = /^failed: \[(.+?)\](?: =>)? \(item=(.*?)\) =>(.*)$/;
const IGNORING = /^\.\.\.ignoring\s*$/;
const RECAP_ROW = /^(\S+)\s+:\s+(ok=\d+.*)$/;
const RECAP_PAIR = /(\w+)=(\d+)/g;
/** A line that can continue a pretty-printed JSON payload: indented, or closing it. */
const CONTINUATION = /^[\s}\]]/;
/** A line of a YAML result: indented under the `=>` line. */
const YAML_CONTINUATION = /^\s/;
/** A recap's own line under its banner before the rows: Ansible 2.0's retry hint. */
const RECAP_NOTE = /^\s*to retry, use: --limit @/;

interface FailureRecord {
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

type FailureDraft = Omit<FailureRecord, "message">;

interface BraceScan {
  depth: number;
  inString: boolean;
  escaped: boolean;
}

interface PendingPayload {
  draft: FailureDraft;
  text: string;
  scan: BraceScan;
  /** The YAML result format: the result is on the indented lines below `=>`. */
  yaml: boolean;
}

export function createRecapParser(): RecapParser {
  const plays: string[] = [];
  const hosts = new Map<string, HostRecap>();
  const records: FailureRecord[] = [];
  let recapFound = false;
  let inRecap = false;
  let recapRows = 0;
  let play: string | undefined;
  let task = "";
  let taskSeq = 0;
  let pending: PendingPayload | undefined;
  /**
   * Failures of the current task not yet marked by `...ignoring`, latest last: each marks the
   * latest, found without a search back through every failure the task has had.
   */
  let unmarked: FailureRecord[] = [];

  function addRecord(record: FailureRecord): void {
    records.push(record);
    unmarked.push(record);
  }

  function failureDraft(label: string, kind: FailureKind, item: string | undefined): FailureDraft {
    return { host: hostName(label), task, play, kind, item, ignored: false, taskSeq };
  }

  function startFailure(draft: FailureDraft, payload: string): void {
    const text = payload.trimStart();
    const scan: BraceScan = { depth: 0, inString: false, escaped: false };
    if (text === "") {
      // `ANSIBLE_CALLBACK_RESULT_FORMAT=yaml` (or the `yaml` callback): nothing after `=>`.
      pending = { draft, text: "", scan, yaml: true };
      return;
    }
    if (text.startsWith("{")) {
      scanBraces(scan, text);
      if (scan.depth > 0) {
        pending = { draft, text: text.slice(0, MAX_PAYLOAD_LENGTH), scan, yaml: false };
        return;
      }
    }
    addRecord(finishFailure(draft, text, false));
  }

  function continuePayload(open: PendingPayload, line: string): void {
    if (open.text.length < MAX_PAYLOAD_LENGTH) {
      open.text = `${open.text}\n${line}`.slice(0, MAX_PAYLOAD_LENGTH);
    }
    if (open.yaml) return;
    scanBraces(open.scan, line);
    if (open.scan.depth <= 0) {
      addRecord(finishFailure(open.draft, open.text, open.yaml));
      pending = undefined;
    }
  }

  /** `...ignoring` belongs to the latest failure of the current task not yet marked. */
  function markIgnored(): void {
    const record = unmarked.pop();
    if (record !== undefined) record.ignored = true;
  }

  function readRecapRow(line: string): boolean {
    const row = RECAP_ROW.exec(line);
    if (!row?.[1] || !row[2]) return false;
    const counts = new Map<string, number>();
    for (const [, key, value] of row[2].matchAll(RECAP_PAIR)) {
      if (key !== undefined && value !== undefined) counts.set(key, Number(value));
    }
    const ok = counts.get("ok");
    const changed = counts.get("changed");
    const unreachable = counts.get("unreachable");
    const failed = counts.get("failed");
    if (ok === undefined || changed === undefined || unreachable === undefined) return false;
    if (failed === undefined) return false;
    const host = row[1];
    const sum = hosts.get(host) ?? emptyRecap(host);
    sum.ok += ok;
    sum.changed += changed;
    sum.unreachable += unreachable;
    sum.failed += failed;
    sum.skipped += counts.get("skipped") ?? 0;
    sum.rescued += counts.get("rescued") ?? 0;
    sum.ignored += counts.get("ignored") ?? 0;
    hosts.set(host, sum);
    return true;
  }

  function readLine(raw: string): void {
    const line = visibleText(raw);

    if (pending !== undefined) {
      const continues = pending.yaml ? YAML_CONTINUATION : CONTINUATION;
      if (line.trim() !== "" && continues.test(line)) {
        continuePayload(pending, line);
        return;
      }
      addRecord(finishFailure(pending.draft, pending.text, pending.yaml));
      pending = undefined;
    }

    const trimmed = line.trimEnd();

    if (inRecap) {
      if (readRecapRow(trimmed)) {
        recapRows++;
        return;
      }
      if (recapRows === 0 && RECAP_NOTE.test(trimmed)) return;
      if (trimmed !== "" || recapRows > 0) inRecap = false;
      if (trimmed === "") return;
    }

    if (RECAP_BANNER.test(trimmed)) {
      recapFound = true;
      inRecap = true;
      recapRows = 0;
      return;
    }
    const playBanner = PLAY_BANNER.exec(trimmed);
    if (playBanner) {
      play = playBanner[1] ?? "";
      plays.push(play);
      task = "";
      taskSeq++;
      unmarked = [];
      return;
    }
    const taskBanner = TASK_BANNER.exec(trimmed);
    if (taskBanner) {
      task = taskBanner[1] ?? "";
      taskSeq++;
      unmarked = [];
      return;
    }
    if (ANY_BANNER.test(trimmed)) return;

    const fatal = TASK_FAILURE.exec(trimmed);
    if (fatal?.[1] !== undefined) {
      const kind: FailureKind = fatal[2] === "UNREACHABLE" ? "unreachable" : "failed";
      startFailure(failureDraft(fatal[1], kind, undefined), fatal[3] ?? "");
      return;
    }
    const itemFailure = ITEM_FAILURE.exec(trimmed);
    if (itemFailure?.[1] !== undefined) {
      startFailure(
        failureDraft(itemFailure[1], "failed", itemFailure[2] ?? ""),
        itemFailure[3] ?? "",
      );
      return;
    }
    if (IGNORING.test(trimmed)) markIgnored();
  }

  return {
    push(line: string): void {
      if (!line.includes("\n")) {
        readLine(line);
        return;
      }
      for (const part of line.split("\n")) readLine(part);
    },
    result(): AnsibleRun {
      const all =
        pending === undefined
          ? records
          : [...records, finishFailure(pending.draft, pending.text, pending.yaml)];
      return {
        hosts: [...hosts.values()].map((h) => ({ ...h })),
        failures: describeFailures(all, hosts),
        recapFound,
        plays: [...plays],
      };
    },
  };
}

/** Parses a whole log; the same as pushing its lines one by one. */
export function parseAnsibleOutput(text: string): AnsibleRun {
  const parser = createRecapParser();
  let start = 0;
  for (;;) {
    const end = text.indexOf("\n", start);
    if (end === -1) {
      parser.push(text.slice(start));
      return parser.result();
    }
    parser.push(text.slice(start, end));
    start = end + 1;
  }
}

/** The text a terminal would show for one log line: no escape codes, nothing before a `\r`. */
function visibleText(raw: string): string {
  const line = raw.replace(ANSI_ESCAPE, "").replace(/\r+$/, "");
  const cr = line.lastIndexOf("\r");
  return cr === -1 ? line : line.slice(cr + 1);
}

/** `host -> delegate` becomes `host`. */
function hostName(label: string): string {
  const arrow = label.indexOf(" -> ");
  return arrow === -1 ? label : label.slice(0, arrow);
}

function emptyRecap(host: string): HostRecap {
  return { host, ok: 0, changed: 0, unreachable: 0, failed: 0, skipped: 0, rescued: 0, ignored: 0 };
}

/** Follows `{`/`[` nesting through `text`, skipping brackets inside JSON strings. */
function scanBraces(scan: BraceScan, text: string): void {
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

function finishFailure(draft: FailureDraft, payload: string, yaml: boolean): FailureRecord {
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
function describeFailures(records: FailureRecord[], recap: Map<string, HostRecap>): TaskFailure[] {
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

function outcomeKey(record: FailureRecord): string {
  return `${record.taskSeq}\u0000${record.kind}\u0000${record.host}`;
}
