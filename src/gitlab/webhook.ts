import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { z } from "zod";
import type { Logger } from "../logger.js";

/** GitLab's Pipeline Hook and Job Hook, as far as the bot reads them: which kind, which pipeline. */
const HookSchema = z.object({
  object_kind: z.string(),
  object_attributes: z.object({ id: z.number().int() }).optional(),
  pipeline_id: z.number().int().optional(),
});

const MAX_BODY_BYTES = 1024 * 1024;

/** Compares two secrets in constant time, whatever their lengths. */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

function answer(res: ServerResponse, status: number, body: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  if (Number(req.headers["content-length"] ?? 0) > MAX_BODY_BYTES) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * `POST /gitlab/webhook`: checks `X-Gitlab-Token` and wakes the tracker. A hook is only a hint:
 * the tracker reads what happened from the API, so a forged or replayed body changes nothing.
 */
export function createWebhookHandler(options: {
  secret: string;
  /** Wakes the tracker; with the pipeline the hook is about, its jobs are read on that pass. */
  wake: (pipelineId?: number) => void;
  log: Logger;
}): RequestListener {
  return (req, res) => {
    void (async () => {
      if (req.method !== "POST") {
        res.setHeader("allow", "POST");
        answer(res, 405, { error: "use POST" });
        return;
      }
      const token = req.headers["x-gitlab-token"];
      if (typeof token !== "string" || !sameSecret(token, options.secret)) {
        options.log.warn({ event: req.headers["x-gitlab-event"] }, "webhook with a wrong token");
        answer(res, 401, { error: "wrong or missing X-Gitlab-Token" });
        return;
      }
      const body = await readBody(req);
      if (body === undefined) {
        // The rest of the body is not read: the connection cannot be reused.
        res.setHeader("connection", "close");
        answer(res, 413, { error: "body too large" });
        return;
      }
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        answer(res, 400, { error: "body is not JSON" });
        return;
      }
      const hook = HookSchema.safeParse(json);
      if (!hook.success) {
        answer(res, 400, { error: "not a GitLab webhook body" });
        return;
      }
      if (hook.data.object_kind === "pipeline" || hook.data.object_kind === "build") {
        const pipelineId =
          hook.data.object_kind === "build"
            ? hook.data.pipeline_id
            : (hook.data.pipeline_id ?? hook.data.object_attributes?.id);
        options.log.debug(
          { kind: hook.data.object_kind, pipelineId },
          "webhook: waking the tracker",
        );
        options.wake(pipelineId);
      }
      answer(res, 200, { status: "ok" });
    })().catch((error: unknown) => {
      options.log.error({ err: error }, "webhook handling failed");
      if (!res.headersSent) answer(res, 500, { error: "internal error" });
    });
  };
}
