/** Small shared helpers (the exported ones serve the request signer too), and triggers. */
import { randomBytes } from "node:crypto";
import { type BlockProblem, formatProblem, missingField } from "./blocks.js";
import { type JsonObject } from "./types.js";

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A platform error: the fake answers `{ ok: false, error: code, response_metadata? }`. */
export class SlackApiError extends Error {
  constructor(
    readonly code: string,
    readonly messages: readonly string[] = [],
  ) {
    super(code);
  }
}

export function invalidArguments(problems: readonly BlockProblem[]): SlackApiError {
  return new SlackApiError("invalid_arguments", problems.map(formatProblem));
}

export function missingArgument(name: string): SlackApiError {
  return invalidArguments([missingField(`/${name}`, name)]);
}

export function stringArg(args: JsonObject, name: string): string | undefined {
  const value = args[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

export function numberArg(args: JsonObject, name: string): number | undefined {
  const value = args[name];
  const parsed = typeof value === "string" && value !== "" ? Number(value) : value;
  return typeof parsed === "number" && Number.isFinite(parsed) ? parsed : undefined;
}

export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString("base64url");
}

/** Sequential Slack-style IDs: `V0000000001`, `F0000000002`, … */
export class IdSequence {
  private next = 0;
  constructor(private readonly prefix: string) {}
  take(): string {
    this.next += 1;
    return `${this.prefix}${this.next.toString(36).toUpperCase().padStart(10, "0")}`;
  }
}

/** A Slack timestamp (`"1700000000.000100"`) for a time in microseconds since the epoch. */
export function slackTs(micros: number): string {
  return `${String(Math.floor(micros / 1_000_000))}.${String(micros % 1_000_000).padStart(6, "0")}`;
}

/** Message timestamps: `"1700000000.000100"`, strictly increasing. */
export class TimestampClock {
  private lastMicros = 0;
  next(): string {
    const micros = Math.max(Date.now() * 1000, this.lastMicros + 100);
    this.lastMicros = micros;
    return slackTs(micros);
  }
}

/** A view's `hash`: changes with every update, as views.update's `hash` check needs. */
export function viewHash(): string {
  return `${Math.floor(Date.now() / 1000)}.${randomBytes(4).toString("hex")}`;
}

/** A list that can be awaited for an item that matches. */
export class ObservableList<T> {
  readonly items: T[] = [];
  private readonly listeners = new Set<() => void>();

  push(item: T): void {
    this.items.push(item);
    for (const listener of [...this.listeners]) listener();
  }

  /** Calls `listener` after every push, until the returned function is called. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  waitFor(match: (item: T) => boolean, timeoutMs: number, explain: () => string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const existing = this.items.find(match);
      if (existing !== undefined) {
        resolve(existing);
        return;
      }
      const stop = (): void => {
        clearTimeout(timer);
        this.listeners.delete(listener);
      };
      const listener = (): void => {
        const found = this.items.find(match);
        if (found === undefined) return;
        stop();
        resolve(found);
      };
      const timer = setTimeout(() => {
        stop();
        reject(new Error(explain()));
      }, timeoutMs);
      this.listeners.add(listener);
    });
  }
}

interface IssuedTrigger {
  issuedAt: number;
  exchanged: boolean;
  viewId?: string;
}

/** trigger_ids: issued by interactions, usable once, within a short lifetime. */
export class TriggerRegistry {
  private readonly issued = new Map<string, IssuedTrigger>();
  private sequence = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  issue(viewId?: string): string {
    this.sequence += 1;
    const first = `${String(this.now()).slice(-10)}${String(this.sequence % 1000).padStart(3, "0")}`;
    const id = `${first}.${String(4_000_000_000_000 + this.sequence)}.${randomBytes(16).toString("hex")}`;
    this.issued.set(id, { issuedAt: this.now(), exchanged: false, viewId });
    return id;
  }

  /** Uses up a trigger_id, or throws the error Slack gives for it. */
  exchange(triggerId: string): IssuedTrigger {
    const trigger = this.issued.get(triggerId);
    if (trigger === undefined) throw new SlackApiError("invalid_trigger_id");
    if (trigger.exchanged) throw new SlackApiError("exchanged_trigger_id");
    if (this.now() - trigger.issuedAt > this.ttlMs) throw new SlackApiError("expired_trigger_id");
    trigger.exchanged = true;
    return trigger;
  }
}
