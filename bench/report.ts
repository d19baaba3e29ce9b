/** One target of the requirements, and how this run measured against it. */
export interface Verdict {
  target: string;
  /** The figure the target is judged on, with its baseline where it has one. */
  figure: string;
  met: boolean;
}

/** One benchmark's part of docs/BENCHMARKS.md. */
export interface Section {
  /** Markdown: what is measured and how, and the table of figures. */
  body: string;
  verdicts: Verdict[];
}

/** A Markdown table (prettier aligns it when the report is written). */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(headers), line(headers.map(() => "---")), ...rows.map(line)].join("\n");
}

/** Milliseconds, to a precision that suits their size. */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return "–";
  if (value >= 1000 && value % 1000 === 0) return `${value / 1000} s`;
  if (value >= 1000) return `${(value / 1000).toFixed(2)} s`;
  return `${value.toFixed(value >= 100 ? 0 : 2)} ms`;
}

export function ratio(value: number, baseline: number): string {
  return `${(value / baseline).toFixed(2)}×`;
}

export function mb(value: number): string {
  return `${value.toFixed(0)} MB`;
}

export function verdictText(verdict: Verdict): string {
  return verdict.met ? "met" : "**missed**";
}

/** `3 rounds`, `1 round`. */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** An environment variable as a whole number, or `fallback`. */
export function setting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number`);
  return value;
}
