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
import {
  deriveCounts,
  countsMismatch,
  type OutputChange,
  type PlanCounts,
  type PlanDiagnostic,
  type PlanResource,
  type PlanTextParser,
  type PlanTextResult,
} from "./plan-summary.js";
import {
  ATTRIBUTE_NAME,
  BOX_CONTENT,
  DEPOSED,
  detached,
  finishDiagnostic,
  FORCES_REPLACEMENT,
  HEADING,
  HEADING_PHRASES,
  HEREDOC_OPEN,
  isSpace,
  isWordCharacter,
  LEGACY_ACTIONS_HEADER,
  LEGACY_RESOURCE,
  LEGACY_SYMBOLS,
  MARKER,
  MAX_DETAIL_CHARS,
  MAX_DETAIL_LINES,
  mayBeMarker,
  MOVED_HEADING,
  NO_CHANGES,
  OTHER_HEADING,
  OUTPUT_ENTRY,
  OUTPUT_SYMBOLS,
  OUTPUTS_HEADER,
  PLAIN_DIAGNOSTIC,
  PLAN_LINE,
  REASON_COMMENT,
  resourceReason,
  UNFRAMED_BULLET,
  WARNING_COMMENT,
  type ResourceState,
  type DiagnosticState,
} from "./plan-text-lines.js";

export * from "./plan-summary.js";
export { isSpace } from "./plan-text-lines.js";

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
