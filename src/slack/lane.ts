import type { RequestTurns } from "./after-ack.js";

/**
 * Runs follow-up work (updating forms already open, say) at most `width` tasks at a time, each
 * started only after the Slack requests that came before it have had their turn (`turns`). A burst of such work,
 * such as every waiting form released at once when Proxmox answers, then never stands between a
 * new command and its acknowledgement or its form.
 */
export function createLane(width: number, turns: RequestTurns) {
  let running = 0;
  const waiting: (() => void)[] = [];
  const slot = async (): Promise<void> => {
    if (running < width) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    await turns.afterPending();
  };
  const free = () => {
    const next = waiting.shift();
    if (next === undefined) running--;
    else next();
  };
  return async <T>(task: () => Promise<T>): Promise<T> => {
    await slot();
    try {
      return await task();
    } finally {
      free();
    }
  };
}
