/**
 * Reading the human plan that `terraform plan -no-color` and `terraform show -no-color` print,
 * also when it is wrapped in other output: a GitLab job log, or an Atlantis pull-request comment
 * with markdown around one plan per project.
 *
 * Each resource comes from its heading, `  # <address> will be created` and the like (Terraform's
 * `resourceChangeComment`), refined by the marker line below it (`-/+ resource "type" "name" {`)
 * and by `# forces replacement` inside its body. Headings Terraform prints for drift ("has
 * changed", "has been deleted") and for deferred changes are not planned actions and are skipped.
 * Terraform before 0.12 has no headings: its resources are the `+ address`, `-/+ address (new
 * resource required)` lines under "Terraform will perform the following actions:". A heredoc
 * attribute value (`<<EOT` … `EOT`, a cloud-init file say) is data and is skipped unread.
 *
 * The parser takes one line at a time and keeps only what it reports (resources, counts, error
 * diagnostics of bounded size), so a long job log is read in little memory.
 */

export type ResourceAction = "create" | "update" | "delete" | "replace" | "read" | "no-op";

/** `delete-first` is Terraform's `-/+` (the default), `create-first` its `+/-`. */
export type ReplaceOrder = "delete-first" | "create-first";

export interface PlanResource {
  address: string;
  action: ResourceAction;
  replaceOrder?: ReplaceOrder;
  /** Why, in Terraform's words: "because x.y is not in configuration", "disk forces replacement". */
  reason?: string;
  /** The deposed object's key, for the leftover of an interrupted create-before-destroy. */
  deposed?: string;
  /** The resource is imported by this plan (Terraform 1.5+ import blocks). */
  importing?: boolean;
}

/** Terraform's own counts, as on its `Plan:` line. */
export interface PlanCounts {
  add: number;
  change: number;
  destroy: number;
  import?: number;
  forget?: number;
}

/** Counts worked out from the resources; a replace is one add and one destroy, as Terraform counts. */
export interface DerivedCounts {
  add: number;
  change: number;
  destroy: number;
  replace: number;
  import: number;
}

export interface PlanDiagnostic {
  summary: string;
  detail: string;
}

export interface OutputChange {
  name: string;
  action: ResourceAction;
}

/** What both plan readers (text and JSON) report. */
export interface PlanSummary {
  resources: PlanResource[];
  /** From Terraform's `Plan:` line(s); undefined when there is none. */
  counts: PlanCounts | undefined;
  derivedCounts: DerivedCounts;
  /** Terraform said "No changes." and nothing else in the input plans a change. */
  noChanges: boolean;
  errors: PlanDiagnostic[];
  /** A sentence for a person when the counts and the resources disagree. */
  mismatch?: string;
  outputChanges: OutputChange[];
  /** Things a reader should know about how the result was put together. */
  notes: string[];
}

export interface PlanTextResult extends PlanSummary {
  /** How many `Plan:` lines were counted (several projects give several). */
  planLines: number;
}

export interface PlanTextParser {
  /** Feeds one line of output (a trailing `\r` is ignored). */
  push(line: string): void;
  /** What has been read so far; may be called at any time. */
  result(): PlanTextResult;
}

/** Counts from the resources: a replace adds one and destroys one. */
export function deriveCounts(resources: readonly PlanResource[]): DerivedCounts {
  const counts: DerivedCounts = { add: 0, change: 0, destroy: 0, replace: 0, import: 0 };
  for (const resource of resources) {
    if (resource.importing === true) counts.import += 1;
    switch (resource.action) {
      case "create":
        counts.add += 1;
        break;
      case "update":
        counts.change += 1;
        break;
      case "delete":
        counts.destroy += 1;
        break;
      case "replace":
        counts.add += 1;
        counts.destroy += 1;
        counts.replace += 1;
        break;
      case "read":
      case "no-op":
        break;
    }
  }
  return counts;
}

/** `1 to import, 2 to add, 0 to change, 1 to destroy`, as Terraform words it. */
export function describeCounts(
  counts: { add: number; change: number; destroy: number },
  importing?: number,
): string {
  const head = importing !== undefined && importing > 0 ? `${importing} to import, ` : "";
  return `${head}${counts.add} to add, ${counts.change} to change, ${counts.destroy} to destroy`;
}

/** A sentence when Terraform's counts and the listed resources disagree; undefined when they agree. */
export function countsMismatch(
  counts: PlanCounts | undefined,
  derived: DerivedCounts,
  countsSource: string,
): string | undefined {
  if (counts === undefined) {
    if (derived.add + derived.change + derived.destroy === 0) return undefined;
    return `Resources with changes were listed (${describeCounts(derived)}) but no "Plan:" line was found; the output may have been cut short.`;
  }
  const importDiffers = counts.import !== undefined && counts.import !== derived.import;
  if (
    counts.add === derived.add &&
    counts.change === derived.change &&
    counts.destroy === derived.destroy &&
    !importDiffers
  ) {
    return undefined;
  }
  const shown = (c: { add: number; change: number; destroy: number }, importing?: number) =>
    describeCounts(c, counts.import === undefined ? undefined : importing);
  return `${countsSource} says ${shown(counts, counts.import)}, but the resources listed add up to ${shown(derived, derived.import)}.`;
}

const HEADING_PHRASES: Record<string, { action: ResourceAction | "forget"; reason?: string }> = {
  "will be created": { action: "create" },
  "will be read during apply": { action: "read" },
  "will be updated in-place": { action: "update" },
  "will be destroyed": { action: "delete" },
  "must be replaced": { action: "replace" },
  "is tainted, so must be replaced": { action: "replace", reason: "tainted" },
  "will be replaced, as requested": { action: "replace", reason: "replacement requested" },
  "will be replaced due to changes in replace_triggered_by": {
    action: "replace",
    reason: "due to changes in replace_triggered_by",
  },
  // Terraform counts this as an add: the old object stays, unmanaged (`destroy = false`).
  "must be replaced, but the existing object will not be destroyed": {
    action: "create",
    reason: "replacement; the existing object will not be destroyed",
  },
  "will be imported": { action: "no-op" },
  "will no longer be managed by Terraform, but will not be destroyed": { action: "forget" },
  "will be removed from Terraform state, but will not be destroyed": { action: "forget" },
};

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const HEADING = new RegExp(
  `^\\s*# (.+?) (${Object.keys(HEADING_PHRASES)
    .sort((a, b) => b.length - a.length)
    .map(escapeRegExp)
    .join("|")})$`,
);
const MOVED_HEADING = /^\s*# (.+?) has moved to (.+)$/;
/** Headings that describe something other than a planned action: drift, deferrals, actions. */
const OTHER_HEADING =
  /^\s*# \S.* (?:has changed|has been deleted|was deferred|will be invoked(?: .*)?)$/;
const DEPOSED = /^(.+) \(deposed object ([^)\s]+)\)$/;
const REASON_COMMENT = /^\s*#\s*\((.+)\)$/;
const WARNING_COMMENT = /^\s*#\s*Warning: (.+)$/;
const MARKER = /^\s*(?:(-\/\+|\+\/-|<=|[+~-])\s+)?(resource|data) "([^"]+)" "([^"]+)" \{/;
const FORCES_REPLACEMENT = /#\s*forces replacement\s*$/;
const ATTRIBUTE_NAME = /^\s*(?:(?:-\/\+|\+\/-|[+~-])\s+)?("(?:[^"\\]|\\.)*"|[\w.-]+)\s*(?:=|\{)/;
const PLAN_LINE =
  /^\s*Plan: (?:(\d+) to import, )?(\d+) to add, (\d+) to change, (\d+) to destroy(?:, (\d+) to forget)?\./;
const NO_CHANGES = /^\s*No changes\./;
const OUTPUTS_HEADER = /^\s*Changes to Outputs:\s*$/;
const OUTPUT_ENTRY = /^ {0,2}([+~-]) +([^\s=]+) *=(?: |$)/;
const PLAIN_DIAGNOSTIC = /^(Error|Warning): (.*)$/;
const BOX_CONTENT = /^\s*│ ?(.*)$/;
const UNFRAMED_BULLET = /^[*-] /;
/**
 * A resource line of Terraform before 0.12, under "Terraform will perform the following actions:":
 * `  + aws_instance.web`, `-/+ aws_instance.db (tainted) (new resource required)`, ` <= data.x.y`.
 */
const LEGACY_RESOURCE =
  /^ {0,2}(-\/\+|\+\/-|<=|[+~-]) ([A-Za-z][\w-]*(?:\[[^\]]*\])?(?:\.[\w-]+(?:\[[^\]]*\])?)+)((?: \([^)]*\))*)$/;
const LEGACY_ACTIONS_HEADER = /^\s*Terraform will perform the following actions:\s*$/;
/** An attribute value that opens a heredoc: `<<EOT`, `<<-EOT`, `<<~EOT`, perhaps with a comment after. */
const HEREDOC_OPEN = /<<[-~]?([A-Za-z_]\w*)(?:\s+#.*)?$/;

const MAX_DETAIL_LINES = 200;
const MAX_DETAIL_CHARS = 10_000;

const LEGACY_SYMBOLS: Record<string, ResourceAction> = {
  "+": "create",
  "-": "delete",
  "~": "update",
  "<=": "read",
  "-/+": "replace",
  "+/-": "replace",
};

const OUTPUT_SYMBOLS: Record<string, ResourceAction> = {
  "+": "create",
  "-": "delete",
  "~": "update",
};

interface ResourceState {
  resource: PlanResource;
  headingReason?: string;
  comments: string[];
  forcedBy: string[];
}

interface DiagnosticState {
  framed: boolean;
  kind?: "Error" | "Warning";
  summary: string;
  detail: string[];
  chars: number;
  truncated: boolean;
  /** Unframed only: a paragraph of detail text has been read. */
  sawDetailText: boolean;
  /** Unframed only: the line before was blank. */
  afterBlank: boolean;
  /** Unframed only: the last line with text ended with `:`, introducing what follows. */
  introduces: boolean;
}

/** `[A-Za-z0-9_]`, by character code: cheaper per line than a pattern. */
function isWordCharacter(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 65 && code <= 90) ||
    (code >= 48 && code <= 57) ||
    code === 95
  );
}

/**
 * Whether a character is white space as `trim` and the patterns' `\s` read it: ASCII space, tab
 * and line ends, no-break and other Unicode spaces, line and paragraph separators, and the BOM.
 */
export function isSpace(code: number): boolean {
  if (code <= 32) return code === 32 || (code >= 9 && code <= 13);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/**
 * Whether the line may be a `MARKER` line, whose text begins `resource` or `data` after its
 * indentation and an optional symbol and spaces (`-/+ resource "type" "name" {`).
 */
function mayBeMarker(text: string, start: number): boolean {
  let at = start;
  let code = text.charCodeAt(at);
  if (code === 0x2d || code === 0x2b || code === 0x3c || code === 0x7e) {
    // `-`, `+`, `<`, `~`: a symbol, then spaces.
    while (at < text.length && !isSpace(text.charCodeAt(at))) at += 1;
    const symbolEnd = at;
    while (at < text.length && isSpace(text.charCodeAt(at))) at += 1;
    if (at === symbolEnd) return false;
    code = text.charCodeAt(at);
  }
  return (code === 0x72 || code === 0x64) && text.includes('" {');
}

/**
 * A copy of text read from a line, for keeping. A substring shares its parent's memory, and each
 * line is a piece of a chunk of the log: keeping an address as it was cut out would keep that
 * whole chunk alive, and over a long log nearly every chunk.
 */
function detached(text: string): string {
  // The joined string is laid out anew when it is cut, and the cut shares that copy, not the
  // line: a copy made many times faster than `structuredClone`'s, which goes through a
  // serializer.
  return ` ${text}`.slice(1);
}

function finishDiagnostic(state: DiagnosticState): PlanDiagnostic {
  const lines = [...state.detail];
  while (lines.length > 0 && lines[0]?.trim() === "") lines.shift();
  while (lines.length > 0 && lines[lines.length - 1]?.trim() === "") lines.pop();
  if (state.truncated) lines.push("…");
  return { summary: detached(state.summary), detail: detached(lines.join("\n")) };
}

function resourceReason(state: ResourceState): string | undefined {
  const parts = [
    ...(state.headingReason === undefined ? [] : [state.headingReason]),
    ...state.comments,
  ];
  if (state.forcedBy.length > 0) {
    const named = state.forcedBy.filter((name) => name !== "");
    parts.push(
      named.length > 0
        ? `${[...new Set(named)].join(", ")} forces replacement`
        : "forces replacement",
    );
  }
  return parts.length > 0 ? parts.join("; ") : undefined;
}

export function createPlanTextParser(): PlanTextParser {
  const resources: ResourceState[] = [];
  const errors: PlanDiagnostic[] = [];
  const outputChanges: OutputChange[] = [];
  const forgotten: string[] = [];
  let current: ResourceState | undefined;
  /** Between a heading and its marker line, where `# (reason)` comments belong. */
  let afterHeading = false;
  let inOutputs = false;
  let diagnostic: DiagnosticState | undefined;
  let noChangesSeen = false;
  let counts: PlanCounts | undefined;
  let planLines = 0;
  let repeatedPlanLines = 0;
  let lastPlanLine: string | undefined;
  let headingsSincePlanLine = 0;
  /** Under "Terraform will perform the following actions:" until the `Plan:` line. */
  let inActions = false;
  /** The word that ends the heredoc value being skipped. */
  let heredocEnd: string | undefined;

  const closeDiagnostic = () => {
    if (diagnostic?.kind === "Error") errors.push(finishDiagnostic(diagnostic));
    diagnostic = undefined;
  };

  const addDetail = (text: string) => {
    if (diagnostic === undefined || diagnostic.truncated) return;
    if (
      diagnostic.detail.length >= MAX_DETAIL_LINES ||
      diagnostic.chars + text.length > MAX_DETAIL_CHARS
    ) {
      diagnostic.truncated = true;
      return;
    }
    diagnostic.detail.push(text);
    diagnostic.chars += text.length + 1;
  };

  const openDiagnostic = (framed: boolean, kind?: "Error" | "Warning", summary = "") => {
    closeDiagnostic();
    current = undefined;
    afterHeading = false;
    inOutputs = false;
    diagnostic = {
      framed,
      summary,
      detail: [],
      chars: 0,
      truncated: false,
      sawDetailText: false,
      afterBlank: false,
      introduces: summary.endsWith(":"),
    };
    if (kind !== undefined) diagnostic.kind = kind;
  };

  /** A line inside a framed diagnostic; false when the frame has ended without `╵`. */
  const framedLine = (state: DiagnosticState, line: string): boolean => {
    const trimmed = line.trim();
    if (trimmed === "╵") {
      closeDiagnostic();
      return true;
    }
    if (trimmed === "╷") {
      openDiagnostic(true);
      return true;
    }
    const content = BOX_CONTENT.exec(line);
    if (content === null) {
      closeDiagnostic();
      return false;
    }
    const text = content[1] ?? "";
    const heading = state.kind === undefined ? PLAIN_DIAGNOSTIC.exec(text) : null;
    if (heading !== null) {
      state.kind = heading[1] === "Error" ? "Error" : "Warning";
      state.summary = (heading[2] ?? "").trim();
    } else if (state.kind !== undefined) {
      addDetail(text.trimEnd());
    }
    return true;
  };

  /**
   * A line inside an unframed diagnostic (Terraform before 0.15); false when it has ended. The
   * diagnostic runs on over blank lines while what follows is indented, a bullet (`* x: error`),
   * introduced by a line ending in `:`, or its first paragraph of text; the next paragraph of
   * plain text after a blank line is something else.
   */
  const unframedLine = (state: DiagnosticState, line: string): boolean => {
    if (line.trim() === "") {
      state.afterBlank = true;
      addDetail("");
      return true;
    }
    if (
      state.afterBlank &&
      state.sawDetailText &&
      !state.introduces &&
      !/^\s/.test(line) &&
      !UNFRAMED_BULLET.test(line)
    ) {
      closeDiagnostic();
      return false;
    }
    state.afterBlank = false;
    if (
      PLAIN_DIAGNOSTIC.test(line) ||
      line.trim() === "╷" ||
      PLAN_LINE.test(line) ||
      HEADING.test(line) ||
      NO_CHANGES.test(line) ||
      OUTPUTS_HEADER.test(line)
    ) {
      closeDiagnostic();
      return false;
    }
    if (!/^\s/.test(line)) state.sawDetailText = true;
    state.introduces = line.endsWith(":");
    addDetail(line);
    return true;
  };

  const planLine = (line: string, match: RegExpExecArray) => {
    current = undefined;
    afterHeading = false;
    inOutputs = false;
    inActions = false;
    const text = line.trim();
    if (planLines > 0 && text === lastPlanLine && headingsSincePlanLine === 0) {
      repeatedPlanLines += 1;
      return;
    }
    const [, importing, add, change, destroy, forget] = match;
    const sum: PlanCounts = counts ?? { add: 0, change: 0, destroy: 0 };
    sum.add += Number(add);
    sum.change += Number(change);
    sum.destroy += Number(destroy);
    if (importing !== undefined) sum.import = (sum.import ?? 0) + Number(importing);
    if (forget !== undefined) sum.forget = (sum.forget ?? 0) + Number(forget);
    counts = sum;
    planLines += 1;
    lastPlanLine = text;
    headingsSincePlanLine = 0;
  };

  const heading = (rawAddress: string, phrase: string) => {
    const meaning = HEADING_PHRASES[phrase];
    if (meaning === undefined) return;
    headingsSincePlanLine += 1;
    const deposed = DEPOSED.exec(rawAddress);
    const address = detached(deposed?.[1] ?? rawAddress);
    if (meaning.action === "forget") {
      forgotten.push(address);
      current = undefined;
      afterHeading = false;
      return;
    }
    const resource: PlanResource = { address, action: meaning.action };
    if (deposed?.[2] !== undefined) resource.deposed = detached(deposed[2]);
    if (phrase === "will be imported") resource.importing = true;
    const state: ResourceState = { resource, comments: [], forcedBy: [] };
    if (meaning.reason !== undefined) state.headingReason = meaning.reason;
    resources.push(state);
    current = state;
    afterHeading = true;
  };

  /** A resource line of Terraform before 0.12, with its `(tainted)`-like notes. */
  const legacyResource = (symbol: string, rawAddress: string, notes: string) => {
    const action = LEGACY_SYMBOLS[symbol];
    if (action === undefined) return;
    headingsSincePlanLine += 1;
    const resource: PlanResource = { address: detached(rawAddress), action };
    if (symbol === "-/+") resource.replaceOrder = "delete-first";
    if (symbol === "+/-") resource.replaceOrder = "create-first";
    const state: ResourceState = { resource, comments: [], forcedBy: [] };
    if (notes.includes("(tainted)")) state.headingReason = "tainted";
    if (notes.includes("(deposed)")) resource.deposed = "deposed";
    resources.push(state);
    // Its attributes follow as `name: "old" => "new"` lines, which are not read.
    current = undefined;
    afterHeading = false;
  };

  const marker = (state: ResourceState, symbol: string | undefined) => {
    const resource = state.resource;
    if (symbol === "-/+" || symbol === "+/-") {
      resource.action = "replace";
      resource.replaceOrder = symbol === "-/+" ? "delete-first" : "create-first";
    }
    // Any other marker agrees with its heading, which is the more explicit of the two; a replace
    // from the heading is never downgraded.
  };

  const line = (raw: string) => {
    // trimEnd also drops the `\r` of a `\r\n` line end; most lines end in something else.
    const text = isSpace(raw.charCodeAt(raw.length - 1)) ? raw.trimEnd() : raw;

    if (diagnostic !== undefined) {
      const handled = diagnostic.framed
        ? framedLine(diagnostic, text)
        : unframedLine(diagnostic, text);
      if (handled) return;
    }

    // A heredoc attribute value is data (a cloud-init file, a script): nothing in it is read.
    if (heredocEnd !== undefined) {
      const inner = text.trimStart();
      if (
        inner.startsWith(heredocEnd) &&
        (inner.length === heredocEnd.length || inner.charAt(heredocEnd.length) === " ")
      ) {
        heredocEnd = undefined;
      }
      return;
    }
    // An opener ends in its word or a comment: most lines end otherwise and are not searched.
    if (isWordCharacter(text.charCodeAt(text.length - 1)) && text.includes("<<")) {
      const opens = HEREDOC_OPEN.exec(text);
      if (opens !== null) heredocEnd = opens[1];
    }

    // The line patterns are anchored at the start, most after optional indentation: the first
    // character that is not space decides which of them can match at all, so most lines of a plan
    // (attributes, runner output) are ruled out without running them. Where the text starts is
    // kept as an index, not as a copy of the rest of the line.
    let start = 0;
    while (start < text.length && isSpace(text.charCodeAt(start))) start += 1;
    const blank = start === text.length;
    const first = text.charAt(start);
    if (first === "╷" && start === text.length - 1) {
      openDiagnostic(true);
      return;
    }
    const boxed = first === "│" ? BOX_CONTENT.exec(text) : null;
    const boxedHeading = boxed === null ? null : PLAIN_DIAGNOSTIC.exec(boxed[1] ?? "");
    if (boxedHeading !== null) {
      // A frame whose top was cut off.
      openDiagnostic(
        true,
        boxedHeading[1] === "Error" ? "Error" : "Warning",
        (boxedHeading[2] ?? "").trim(),
      );
      return;
    }
    const plain = first === "E" || first === "W" ? PLAIN_DIAGNOSTIC.exec(text) : null;
    if (plain !== null) {
      openDiagnostic(false, plain[1] === "Error" ? "Error" : "Warning", (plain[2] ?? "").trim());
      return;
    }

    const plan = first === "P" ? PLAN_LINE.exec(text) : null;
    if (plan !== null) {
      planLine(text, plan);
      return;
    }
    if (first === "N" && NO_CHANGES.test(text)) {
      noChangesSeen = true;
      current = undefined;
      return;
    }
    if (first === "T" && LEGACY_ACTIONS_HEADER.test(text)) {
      inActions = true;
      return;
    }
    if (inActions && start <= 2) {
      const legacy = LEGACY_RESOURCE.exec(text);
      if (legacy !== null) {
        legacyResource(legacy[1] ?? "", legacy[2] ?? "", legacy[3] ?? "");
        return;
      }
    }
    if (first === "C" && OUTPUTS_HEADER.test(text)) {
      inOutputs = true;
      current = undefined;
      afterHeading = false;
      return;
    }
    if (inOutputs) {
      const entry = OUTPUT_ENTRY.exec(text);
      if (entry !== null) {
        const action = OUTPUT_SYMBOLS[entry[1] ?? ""];
        if (action !== undefined && entry[2] !== undefined)
          outputChanges.push({ name: detached(entry[2]), action });
        return;
      }
      if (!blank && start > 0) return;
      inOutputs = false;
      if (blank) return;
    }

    // Headings and the `# (reason)` comments under them are comments: they start with `#`.
    const comment = first === "#";
    const found = comment ? HEADING.exec(text) : null;
    if (found !== null) {
      heading(found[1] ?? "", found[2] ?? "");
      return;
    }
    const moved = comment ? MOVED_HEADING.exec(text) : null;
    if (moved?.[2] !== undefined) {
      headingsSincePlanLine += 1;
      const state: ResourceState = {
        resource: { address: detached(moved[2]), action: "no-op" },
        comments: [detached(`moved from ${moved[1] ?? ""}`)],
        forcedBy: [],
      };
      resources.push(state);
      current = state;
      afterHeading = true;
      return;
    }
    if (comment && OTHER_HEADING.test(text)) {
      current = undefined;
      afterHeading = false;
      return;
    }
    if (current === undefined) return;

    if (afterHeading && comment) {
      const reason = (REASON_COMMENT.exec(text) ?? WARNING_COMMENT.exec(text))?.[1];
      if (reason !== undefined) {
        if (/^imported from |^will be imported first$/.test(reason))
          current.resource.importing = true;
        current.comments.push(detached(reason));
        return;
      }
    }
    const mark = mayBeMarker(text, start) ? MARKER.exec(text) : null;
    if (mark !== null) {
      const [, symbol, , type, name] = mark;
      if (afterHeading && current.resource.address.includes(`${type ?? ""}.${name ?? ""}`)) {
        marker(current, symbol);
      }
      afterHeading = false;
      return;
    }
    afterHeading = false;
    if (
      text.charCodeAt(text.length - 1) === 0x74 && // `t`
      text.endsWith("forces replacement") &&
      FORCES_REPLACEMENT.test(text)
    ) {
      current.forcedBy.push(detached(ATTRIBUTE_NAME.exec(text)?.[1] ?? ""));
      if (current.resource.action !== "replace") current.resource.action = "replace";
    }
  };

  /**
   * A line as the program wrote it. A carriage return inside it (a progress line drawn over a
   * heading) hides text from a terminal, not from Terraform: each part is read as a line, so a
   * destroy is a destroy whatever the terminal would show.
   */
  const physicalLine = (raw: string) => {
    const cr = raw.indexOf("\r");
    if (cr === -1 || cr === raw.length - 1) {
      line(raw);
      return;
    }
    for (const part of raw.replace(/\r+$/, "").split(/\r+/)) line(part);
  };

  return {
    push(chunk) {
      // Usually one line; several when a whole text is given (`parsePlanText`).
      let from = 0;
      for (let end = chunk.indexOf("\n"); end !== -1; end = chunk.indexOf("\n", from)) {
        physicalLine(chunk.slice(from, end));
        from = end + 1;
      }
      physicalLine(from === 0 ? chunk : chunk.slice(from));
    },
    result() {
      const listed = resources.map((state): PlanResource => {
        const reason = resourceReason(state);
        // In one literal: a property added to a copy afterwards costs each copy a change of shape.
        return reason === undefined ? { ...state.resource } : { ...state.resource, reason };
      });
      const allErrors = [...errors];
      if (diagnostic?.kind === "Error") allErrors.push(finishDiagnostic(diagnostic));
      const derivedCounts = deriveCounts(listed);
      const changing = derivedCounts.add + derivedCounts.change + derivedCounts.destroy;
      const notes: string[] = [];
      if (planLines > 1) {
        notes.push(
          `Found ${planLines} "Plan:" lines (one per project or run); the counts are their sum.`,
        );
      }
      if (repeatedPlanLines > 0) {
        notes.push(
          `Skipped ${repeatedPlanLines} "Plan:" line${repeatedPlanLines === 1 ? "" : "s"} that repeated the one before with no resources in between.`,
        );
      }
      for (const address of forgotten) {
        notes.push(`${address} leaves Terraform's state but is not destroyed; it is not listed.`);
      }
      const result: PlanTextResult = {
        resources: listed,
        counts: counts === undefined ? undefined : { ...counts },
        derivedCounts,
        noChanges: noChangesSeen && planLines === 0 && changing === 0,
        errors: allErrors,
        outputChanges: [...outputChanges],
        notes,
        planLines,
      };
      const mismatch = countsMismatch(
        result.counts,
        derivedCounts,
        planLines > 1 ? `The sum of the "Plan:" lines` : `The "Plan:" line`,
      );
      if (mismatch !== undefined) result.mismatch = mismatch;
      return result;
    },
  };
}

/**
 * Reads a whole plan text. A last line without its newline may have been cut short, and a cut
 * heading can read as another one ("must be replaced" of "must be replaced, but the existing
 * object will not be destroyed", or "has moved to" a shorter address): a heading there is left
 * out, so only resources whose heading line is complete are reported.
 */
export function parsePlanText(text: string): PlanTextResult {
  const parser = createPlanTextParser();
  const lastLine = text.lastIndexOf("\n") + 1;
  const cutHeading = mayBeCutHeading(text.slice(lastLine));
  parser.push(cutHeading ? text.slice(0, Math.max(0, lastLine - 1)) : text);
  return parser.result();
}

/** A text's last line, without its newline, that reads as a heading and may be one cut short. */
export function mayBeCutHeading(lastLine: string): boolean {
  const last = lastLine.trimEnd();
  return HEADING.test(last) || MOVED_HEADING.test(last);
}
