/**
 * What the four simulators share to misbehave on purpose and to show what they were sent: the
 * requests received, failures queued for the next requests they match, the waits (delays,
 * hangs, held requests) that closing a fake cuts short, and the count of requests in hand.
 */
import type { ServerResponse } from "node:http";
import type { RecordedRequest } from "./http.js";

/** Whether `pattern` matches `text`, its `g` flag ignored (it would make `test` stateful). */
export function matchesPath(pattern: RegExp, text: string): boolean {
  return new RegExp(pattern.source, pattern.flags.replace("g", "")).test(text);
}

/** Which requests a failure applies to: `path` is matched against the raw (encoded) path. */
export interface RequestMatch {
  method?: string;
  path: RegExp;
}

/** Whether `req` is one `match` names: its method (any, when unset) and its path. */
export function requestMatches(match: RequestMatch, req: RecordedRequest): boolean {
  return (
    (match.method === undefined || match.method.toUpperCase() === req.method) &&
    matchesPath(match.path, req.path)
  );
}

/** Every request a fake received, in order, including refused and failed ones. */
export class RequestLog {
  readonly requests: RecordedRequest[] = [];

  record(req: RecordedRequest): void {
    this.requests.push(req);
  }

  /** The requests whose path matches `pathPattern` and, when given, whose method is `method`. */
  to(pathPattern: RegExp, method?: string): RecordedRequest[] {
    return this.requests.filter(
      (r) =>
        (method === undefined || r.method === method.toUpperCase()) &&
        matchesPath(pathPattern, r.path),
    );
  }

  /** A mark for `since`: the number of requests received so far. */
  mark(): number {
    return this.requests.length;
  }

  since(mark: number): RecordedRequest[] {
    return this.requests.slice(mark);
  }
}

interface Queued<Match, Failure> {
  match: Match;
  failure: Failure;
  remaining: number;
}

/**
 * Failures queued for the next requests they match: each applies to `times` of them, and a
 * request takes the oldest failure that matches it.
 */
export class FaultQueue<Match, Failure, Request = RecordedRequest> {
  private readonly queued: Queued<Match, Failure>[] = [];

  constructor(private readonly matches: (match: Match, req: Request) => boolean) {}

  add(match: Match, failure: Failure, times = 1): void {
    this.queued.push({ match, failure, remaining: times });
  }

  /** The failure `req` gets, if any; it counts as used once. */
  take(req: Request): Failure | undefined {
    const index = this.queued.findIndex((queued) => this.matches(queued.match, req));
    const queued = this.queued[index];
    if (queued === undefined) return undefined;
    queued.remaining -= 1;
    if (queued.remaining <= 0) this.queued.splice(index, 1);
    return queued.failure;
  }
}

/**
 * The waits a fake keeps open (delays, held requests, requests never answered), all cut short
 * when it closes: each resolves true when it ran its course, false when the fake closed first.
 */
export class Waits {
  private readonly open = new Set<() => void>();
  private readonly hanging = new Set<ServerResponse>();

  /** Waits `ms`. */
  sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const cancel = () => {
        clearTimeout(timer);
        this.open.delete(cancel);
        resolve(false);
      };
      const timer = setTimeout(() => {
        this.open.delete(cancel);
        resolve(true);
      }, ms);
      this.open.add(cancel);
    });
  }

  /** Waits for `until` to settle, whichever way. */
  hold(until: Promise<unknown>): Promise<boolean> {
    return new Promise((resolve) => {
      const cancel = () => {
        this.open.delete(cancel);
        resolve(false);
      };
      this.open.add(cancel);
      const done = () => {
        this.open.delete(cancel);
        resolve(true);
      };
      until.then(done, done);
    });
  }

  /** Never runs its course: resolves false when the fake closes. */
  forever(): Promise<boolean> {
    return new Promise((resolve) => {
      const cancel = () => {
        this.open.delete(cancel);
        resolve(false);
      };
      this.open.add(cancel);
    });
  }

  /**
   * Leaves `res` unanswered: resolves when its connection closes, because the client gave up or
   * the fake closed (which drops it).
   */
  hang(res: ServerResponse): Promise<void> {
    return new Promise((resolve) => {
      if (res.destroyed) {
        resolve();
        return;
      }
      this.hanging.add(res);
      res.once("close", () => {
        this.hanging.delete(res);
        resolve();
      });
    });
  }

  /** Cuts every wait short and drops every hanging connection. */
  close(): void {
    for (const cancel of [...this.open]) cancel();
    for (const res of this.hanging) res.destroy();
  }
}

/** The requests a fake is handling: `idle()` resolves once it handles none. */
export class InFlight {
  private count = 0;
  private waiters: (() => void)[] = [];

  get busy(): boolean {
    return this.count > 0;
  }

  async run(work: () => Promise<void>): Promise<void> {
    this.count += 1;
    try {
      await work();
    } finally {
      this.count -= 1;
      if (this.count === 0) {
        const waiters = this.waiters;
        this.waiters = [];
        for (const resolve of waiters) resolve();
      }
    }
  }

  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push(resolve);
    });
  }
}
