import { z } from "zod";

/** Message metadata as Slack returns it with `include_all_metadata`. */
const MetadataSchema = z.object({
  event_type: z.string(),
  event_payload: z.record(z.string(), z.unknown()).optional(),
});

/** A message's metadata event type and payload, or undefined when it carries none. */
export function metadataOf(
  message: { metadata?: unknown } | undefined,
): { eventType: string; payload: Record<string, unknown> } | undefined {
  const parsed = MetadataSchema.safeParse(message?.metadata);
  return parsed.success
    ? { eventType: parsed.data.event_type, payload: parsed.data.event_payload ?? {} }
    : undefined;
}
