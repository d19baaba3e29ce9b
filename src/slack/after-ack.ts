/**
 * Resolves once the requests already received have had their turn: Node runs the I/O that is
 * ready (the next Slack requests, which each need their acknowledgement within three seconds)
 * before `setImmediate` callbacks. A listener awaits it right after `ack()`, before the slower
 * work the acknowledgement promised, so that in a burst every request is acknowledged before any
 * of them builds a form or a message, instead of each waiting behind the others' work.
 */
export function afterPendingRequests(): Promise<void> {
  return new Promise((resolve) => {
    setImmediate(resolve);
  });
}
