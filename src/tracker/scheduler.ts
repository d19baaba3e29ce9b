/**
 * The tracker's poll loop: a pass every `intervalMs`, one more as soon as possible when woken (a
 * webhook, a click), never two at once. A tick asked for while a pass runs waits for it and runs
 * one more after it, so what woke it is seen.
 */
export interface Scheduler {
  /** Runs a pass now, or joins the one running and runs another after it. */
  tick(): Promise<void>;
  /** Starts polling: a pass now, then every `intervalMs`. */
  start(): void;
  /** A pass as soon as possible; polling resumes `intervalMs` after it. */
  wake(): void;
  /** Stops polling and waits for a pass in progress. */
  stop(): Promise<void>;
}

/** `pass` must not throw: the scheduler runs it again whatever became of the last one. */
export function createScheduler(pass: () => Promise<void>, intervalMs: number): Scheduler {
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let wakeAgain = false;

  async function tick(): Promise<void> {
    if (running) {
      wakeAgain = true;
      return running;
    }
    running = pass().finally(() => {
      running = undefined;
    });
    await running;
    if (wakeAgain && !stopped) {
      wakeAgain = false;
      await tick();
    }
  }

  function schedule(delay: number): void {
    clearTimeout(timer);
    if (stopped) return;
    timer = setTimeout(() => {
      void tick().finally(() => {
        schedule(intervalMs);
      });
    }, delay);
  }

  return {
    tick,
    start() {
      stopped = false;
      schedule(0);
    },
    wake() {
      schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
