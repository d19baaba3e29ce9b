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

import {
  describeFailures,
  emptyRecap,
  finishFailure,
  hostName,
  scanBraces,
  visibleText,
  type BraceScan,
  type FailureDraft,
  type FailureRecord,
  type PendingPayload,
} from "./recap-failures.js";
import { MAX_MESSAGE_LENGTH } from "./result-payload.js";

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

/** What the parser keeps between lines. */
interface RecapState {
  plays: string[];
  hosts: Map<string, HostRecap>;
  records: FailureRecord[];
  recapFound: boolean;
  /** Between a `PLAY RECAP` banner and the end of its rows. */
  inRecap: boolean;
  recapRows: number;
  play: string | undefined;
  task: string;
  /** Counts banners, so that failures of one task can be told from the next task's. */
  taskSeq: number;
  /** A failure whose result payload continues on the next lines. */
  pending: PendingPayload | undefined;
  /**
   * Failures of the current task not yet marked by `...ignoring`, latest last: each marks the
   * latest, found without a search back through every failure the task has had.
   */
  unmarked: FailureRecord[];
}

function createRecapState(): RecapState {
  return {
    plays: [],
    hosts: new Map(),
    records: [],
    recapFound: false,
    inRecap: false,
    recapRows: 0,
    play: undefined,
    task: "",
    taskSeq: 0,
    pending: undefined,
    unmarked: [],
  };
}

function addRecord(state: RecapState, record: FailureRecord): void {
  state.records.push(record);
  state.unmarked.push(record);
}

function failureDraft(
  state: RecapState,
  label: string,
  kind: FailureKind,
  item: string | undefined,
): FailureDraft {
  const { task, play, taskSeq } = state;
  return { host: hostName(label), task, play, kind, item, ignored: false, taskSeq };
}

function startFailure(state: RecapState, draft: FailureDraft, payload: string): void {
  const text = payload.trimStart();
  const scan: BraceScan = { depth: 0, inString: false, escaped: false };
  if (text === "") {
    // `ANSIBLE_CALLBACK_RESULT_FORMAT=yaml` (or the `yaml` callback): nothing after `=>`.
    state.pending = { draft, text: "", scan, yaml: true };
    return;
  }
  if (text.startsWith("{")) {
    scanBraces(scan, text);
    if (scan.depth > 0) {
      state.pending = { draft, text: text.slice(0, MAX_PAYLOAD_LENGTH), scan, yaml: false };
      return;
    }
  }
  addRecord(state, finishFailure(draft, text, false));
}

/**
 * A line while a failure's payload is open: true when it continues the payload; else the
 * payload is finished, and the line is to be read as any other.
 */
function payloadLine(state: RecapState, open: PendingPayload, line: string): boolean {
  const continues = open.yaml ? YAML_CONTINUATION : CONTINUATION;
  if (line.trim() === "" || !continues.test(line)) {
    addRecord(state, finishFailure(open.draft, open.text, open.yaml));
    state.pending = undefined;
    return false;
  }
  if (open.text.length < MAX_PAYLOAD_LENGTH) {
    open.text = `${open.text}\n${line}`.slice(0, MAX_PAYLOAD_LENGTH);
  }
  if (open.yaml) return true;
  scanBraces(open.scan, line);
  if (open.scan.depth <= 0) {
    addRecord(state, finishFailure(open.draft, open.text, open.yaml));
    state.pending = undefined;
  }
  return true;
}

/** `...ignoring` belongs to the latest failure of the current task not yet marked. */
function markIgnored(state: RecapState): void {
  const record = state.unmarked.pop();
  if (record !== undefined) record.ignored = true;
}

/** A host's row under `PLAY RECAP`, added to its counts; false when the line is not one. */
function readRecapRow(state: RecapState, line: string): boolean {
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
  const sum = state.hosts.get(host) ?? emptyRecap(host);
  sum.ok += ok;
  sum.changed += changed;
  sum.unreachable += unreachable;
  sum.failed += failed;
  sum.skipped += counts.get("skipped") ?? 0;
  sum.rescued += counts.get("rescued") ?? 0;
  sum.ignored += counts.get("ignored") ?? 0;
  state.hosts.set(host, sum);
  return true;
}

/** A line under a `PLAY RECAP` banner: true when it was part of the recap. */
function recapLine(state: RecapState, trimmed: string): boolean {
  if (readRecapRow(state, trimmed)) {
    state.recapRows++;
    return true;
  }
  if (state.recapRows === 0 && RECAP_NOTE.test(trimmed)) return true;
  if (trimmed !== "" || state.recapRows > 0) state.inRecap = false;
  return trimmed === "";
}

/** Whether the line is a banner: the recap's, a play's, a task's, or another. */
function bannerLine(state: RecapState, trimmed: string): boolean {
  if (RECAP_BANNER.test(trimmed)) {
    state.recapFound = true;
    state.inRecap = true;
    state.recapRows = 0;
    return true;
  }
  const playBanner = PLAY_BANNER.exec(trimmed);
  if (playBanner) {
    state.play = playBanner[1] ?? "";
    state.plays.push(state.play);
    state.task = "";
    state.taskSeq++;
    state.unmarked = [];
    return true;
  }
  const taskBanner = TASK_BANNER.exec(trimmed);
  if (taskBanner) {
    state.task = taskBanner[1] ?? "";
    state.taskSeq++;
    state.unmarked = [];
    return true;
  }
  return ANY_BANNER.test(trimmed);
}

/** A task's failure (`fatal: [host]: FAILED! =>`, or a loop item's), or `...ignoring` after one. */
function failureLine(state: RecapState, trimmed: string): void {
  const fatal = TASK_FAILURE.exec(trimmed);
  if (fatal?.[1] !== undefined) {
    const kind: FailureKind = fatal[2] === "UNREACHABLE" ? "unreachable" : "failed";
    startFailure(state, failureDraft(state, fatal[1], kind, undefined), fatal[3] ?? "");
    return;
  }
  const itemFailure = ITEM_FAILURE.exec(trimmed);
  if (itemFailure?.[1] !== undefined) {
    const draft = failureDraft(state, itemFailure[1], "failed", itemFailure[2] ?? "");
    startFailure(state, draft, itemFailure[3] ?? "");
    return;
  }
  if (IGNORING.test(trimmed)) markIgnored(state);
}

function readLine(state: RecapState, raw: string): void {
  const line = visibleText(raw);
  if (state.pending !== undefined && payloadLine(state, state.pending, line)) return;
  const trimmed = line.trimEnd();
  if (state.inRecap && recapLine(state, trimmed)) return;
  if (bannerLine(state, trimmed)) return;
  failureLine(state, trimmed);
}

function recapResult(state: RecapState): AnsibleRun {
  const { pending, records, hosts } = state;
  const all =
    pending === undefined
      ? records
      : [...records, finishFailure(pending.draft, pending.text, pending.yaml)];
  return {
    hosts: [...hosts.values()].map((h) => ({ ...h })),
    failures: describeFailures(all, hosts),
    recapFound: state.recapFound,
    plays: [...state.plays],
  };
}

export function createRecapParser(): RecapParser {
  const state = createRecapState();
  return {
    push(line: string): void {
      if (!line.includes("\n")) {
        readLine(state, line);
        return;
      }
      for (const part of line.split("\n")) readLine(state, part);
    },
    result: () => recapResult(state),
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
