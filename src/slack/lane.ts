import { afterPendingRequests } from "./after-ack.js";

/**
 * Runs follow-up work (updating forms already open, say) at most `width` tasks at a time, each
 * started only after the requests already received have had their turn. A burst of such work,
 * such as every waiting form released at once when Proxmox answers, then never stands between a
 * new command and its acknowledgement or its form.
 */
export function createLane(width: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  const slot = async (): Promise<void> => {
    if (running < width) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    await afterPendingRequests();
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
