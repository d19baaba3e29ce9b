import { z } from "zod";

/**
 * What each effect records as its result, one schema per step: a result read back from the store
 * (after a restart, or by a second caller) is checked against it before anyone uses it. Results
 * found by reconciling carry `reconciled: true` in the store; the schemas leave it out.
 */

/** `post_request_message`, and every `reply_<step>` in a request's thread: the message's ts. */
export const PostedResultSchema = z.object({ ts: z.string() });

/** `post_request_message` ended as failed: Slack's error code (`not_in_channel`), or "error". */
export const PostFailedSchema = z.object({ failed: z.string() });

/** The time until which a pipeline GitLab may still create late is looked for. */
const watched = { watchUntil: z.string().optional() };

/** `create_pipeline`: the pipeline, `sure: false` when found by time alone after a crash. */
export const PipelineCreatedSchema = z.object({
  id: z.number().int(),
  webUrl: z.string(),
  sure: z.boolean(),
  ...watched,
});

/**
 * `create_pipeline` ended as failed: the error's code, what the requester is told (whichever
 * replica tells them), and how long a pipeline whose creation was in flight is looked for.
 */
export const PipelineFailedSchema = z.object({
  failed: z.string(),
  words: z.string().optional(),
  ...watched,
});

/** `record_pipeline`: the pipeline the request now names, recorded and audited once. */
export const PipelineRecordedSchema = z.object({ pipelineId: z.number().int() });

/**
 * `cancel_pipeline`: the pipeline's status read back after the cancel. Results recorded before
 * every one carried its address may lack `webUrl`.
 */
export const CanceledResultSchema = z.object({
  status: z.string(),
  webUrl: z.string().optional(),
});

/** `cancel_late_pipeline:<id>`: the late pipeline's status after the cancel. */
export const LateCanceledResultSchema = z.object({ status: z.string() });

/** `erase_plan:<job>`: the plan's artifacts are gone, or GitLab refused (its error code). */
export const ErasedResultSchema = z.union([
  z.object({ erased: z.boolean() }),
  z.object({ refused: z.string() }),
]);

/** `play_apply:…`: the apply job and its status once played (or played by someone else). */
export const PlayedResultSchema = z.object({
  jobId: z.number().int(),
  status: z.string(),
  playedElsewhere: z.boolean().optional(),
});

/**
 * A play step ended without a play: the approval given back (nothing started in GitLab), or
 * refused (`abandoned`: the plan run again, the job canceled).
 */
export const NotPlayedResultSchema = z.union([
  z.object({ failed: z.literal(true) }),
  z.object({ abandoned: z.string() }),
]);
export type NotPlayedResult = z.infer<typeof NotPlayedResultSchema>;

/** `retry_configure:…`: the new job GitLab made, `confirmedByReading` when the answer was lost. */
export const RetriedResultSchema = z.object({
  jobId: z.number().int(),
  webUrl: z.string(),
  confirmedByReading: z.boolean().optional(),
});

/** `upload_plan:<job>`: the plan job uploaded, or the message found in the thread with it. */
export const UploadedResultSchema = z.union([
  z.object({ jobId: z.number().int() }),
  z.object({ ts: z.string() }),
]);

/**
 * `unlock:<lockedAt>`: done; `gone` when the lock was gone by the time vmbot came to remove it
 * (or was found gone after a restart); `changed` when another lock held the state then, and was
 * left. Never a failure's record, which would otherwise read as done with nothing to say.
 */
export const UnlockedResultSchema = z.object({
  gone: z.boolean().optional(),
  changed: z.boolean().optional(),
  failed: z.never().optional(),
});
export type UnlockedResult = z.infer<typeof UnlockedResultSchema>;

/**
 * An unlock that failed, and was told so: GitLab's error code, or `unknown` when vmbot could not
 * tell whether the lock was removed. No restart tries it again; the admin may confirm again.
 */
export const UnlockFailedSchema = z.object({ failed: z.string() });
