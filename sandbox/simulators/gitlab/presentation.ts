/** How statuses, times, sizes and avatars are presented in entities. */
import { createHash } from "node:crypto";
import { type FakePipeline, type PipelineStatus } from "./types.js";

export function isoDiffSeconds(from: string | null, to: string | null): number | null {
  if (from === null || to === null) return null;
  return (Date.parse(to) - Date.parse(from)) / 1000;
}

/** `Ci::Pipeline#queued_duration`: whole seconds from creation to start, null when none. */
export function pipelineQueuedDuration(pipeline: FakePipeline): number | null {
  const seconds = isoDiffSeconds(pipeline.createdAt, pipeline.startedAt);
  if (seconds === null) return null;
  const whole = Math.trunc(seconds);
  return whole === 0 ? null : whole;
}

/** How webhook payloads show a time (Ruby's `Time#to_s` in UTC): `2016-08-12 15:23:28 UTC`. */
export function hookTime(iso: string | null): string | null {
  return iso === null ? null : `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}

/** The `*_iso` fields of a Job Hook: ISO 8601 to the second, `2021-02-23T02:41:37Z`. */
export function hookIsoTime(iso: string | null): string | null {
  return iso === null ? null : `${iso.slice(0, 19)}Z`;
}

/** The size of a ZIP archive holding the files uncompressed (stored), for `artifacts_file.size`. */
export function storedZipSize(files: ReadonlyMap<string, string>): number {
  let size = 22; // end of central directory
  for (const [path, content] of files) {
    const name = Buffer.byteLength(path);
    size += 30 + name + Buffer.byteLength(content) + 46 + name;
  }
  return size;
}

/** Workhorse's `mime.TypeByExtension` (Go's built-in table) for an artifact entry. */
export function artifactContentType(path: string): string {
  const extension = /\.[^./]+$/.exec(path)?.[0].toLowerCase() ?? "";
  const types: Record<string, string> = {
    ".avif": "image/avif",
    ".css": "text/css; charset=utf-8",
    ".gif": "image/gif",
    ".htm": "text/html; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".jpeg": "image/jpeg",
    ".jpg": "image/jpeg",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".mjs": "text/javascript; charset=utf-8",
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
    ".wasm": "application/wasm",
    ".webp": "image/webp",
    ".xml": "text/xml; charset=utf-8",
  };
  return types[extension] ?? "application/octet-stream";
}

/** A user's Gravatar, as GitLab links it for a user without an uploaded avatar. */
export function avatarUrl(username: string): string {
  const hash = createHash("md5").update(`${username}@example.com`).digest("hex");
  return `https://www.gravatar.com/avatar/${hash}?s=80&d=identicon`;
}

interface StatusPresentation {
  text: string;
  label: string;
  icon: string;
  group: string;
  illustration: { image: string; size: string; title: string; content?: string } | null;
}

const NOT_TRIGGERED = {
  image: "/assets/illustrations/job_not_triggered.svg",
  size: "svg-306",
  title: "This job has not been triggered yet",
  content:
    "This job depends on upstream jobs that need to succeed in order for this job to be triggered",
};

/** Gitlab::Ci::Status::* for a pipeline (a `manual` pipeline is "blocked"). */
export const PIPELINE_STATUS: Record<PipelineStatus, StatusPresentation> = {
  created: {
    text: "Created",
    label: "created",
    icon: "status_created",
    group: "created",
    illustration: NOT_TRIGGERED,
  },
  waiting_for_resource: {
    text: "Waiting",
    label: "waiting for resource",
    icon: "status_pending",
    group: "waiting-for-resource",
    illustration: null,
  },
  preparing: {
    text: "Preparing",
    label: "preparing",
    icon: "status_preparing",
    group: "preparing",
    illustration: null,
  },
  pending: {
    text: "Pending",
    label: "pending",
    icon: "status_pending",
    group: "pending",
    illustration: {
      image: "/assets/illustrations/pending_job_empty.svg",
      size: "svg-430",
      title: "This job has not started yet",
      content: "This job is in pending state and is waiting to be picked by a runner",
    },
  },
  running: {
    text: "Running",
    label: "running",
    icon: "status_running",
    group: "running",
    illustration: null,
  },
  success: {
    text: "Passed",
    label: "passed",
    icon: "status_success",
    group: "success",
    illustration: null,
  },
  failed: {
    text: "Failed",
    label: "failed",
    icon: "status_failed",
    group: "failed",
    illustration: null,
  },
  canceled: {
    text: "Canceled",
    label: "canceled",
    icon: "status_canceled",
    group: "canceled",
    illustration: null,
  },
  skipped: {
    text: "Skipped",
    label: "skipped",
    icon: "status_skipped",
    group: "skipped",
    illustration: {
      image: "/assets/illustrations/skipped-job_empty.svg",
      size: "svg-430",
      title: "This job has been skipped",
    },
  },
  manual: {
    text: "Blocked",
    label: "waiting for manual action",
    icon: "status_manual",
    group: "manual",
    illustration: null,
  },
  scheduled: {
    text: "Scheduled",
    label: "scheduled",
    icon: "status_scheduled",
    group: "scheduled",
    illustration: null,
  },
};
