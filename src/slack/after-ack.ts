import type { ServerResponse } from "node:http";

/**
 * Longest a task waits for the requests before it: a form's `views.open` must still come within
 * the three seconds of its trigger_id, of which the acknowledgement took at most one in a burst.
 */
export const MOST_WAIT_MS = 1_000;

/**
 * The turn the work after an acknowledgement waits for: Slack requests have theirs first.
 *
 * A listener awaits `afterPending()` right after `ack()`, before the slower work the
 * acknowledgement promised (a form, a request message, a pipeline). It resolves at the first turn
 * of the event loop at which no Slack request has arrived since the turn before and none is
 * still unanswered, or after `MOST_WAIT_MS`. A burst reaches the bot over many turns (Node reads
 * what the sockets hold, then runs `setImmediate` callbacks, then reads again): waiting for one
 * turn only let the work of the first requests run between the arrivals of the later ones, whose
 * acknowledgements came last and late (200 `/vm create` at once: 150–196 of 200 within 1 s, p99
 * 1.23–1.48× a bare Bolt app's; waiting for a quiet turn, 200 of 200 in each of three rounds,
 * 0.83–0.91×).
 *
 * Counted by the HTTP server's Slack route (`received`), once a request's body is read and its
 * signature checked: a client that sends a body slowly, or floods the route with unsigned
 * requests, cannot hold the work back. In Socket Mode nothing is counted, and the work waits for
 * one turn.
 */
export interface RequestTurns {
  /** A Slack request arrived; it is unanswered until its response closes. */
  received(res: ServerResponse): void;
  afterPending(): Promise<void>;
}

export function createRequestTurns(mostWaitMs = MOST_WAIT_MS): RequestTurns {
  let arrived = 0;
  let unanswered = 0;
  return {
    received(res) {
      arrived += 1;
      unanswered += 1;
      res.once("close", () => {
        unanswered -= 1;
      });
    },
    afterPending() {
      const until = performance.now() + mostWaitMs;
      return new Promise((resolve) => {
        let seen = arrived;
        const turn = () => {
          if ((arrived === seen && unanswered === 0) || performance.now() >= until) {
            resolve();
            return;
          }
          seen = arrived;
          setImmediate(turn);
        };
        setImmediate(turn);
      });
    },
  };
}
