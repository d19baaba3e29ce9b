import type { AnsibleRun } from "../ansible/recap.js";
import { escapeMrkdwn, truncate } from "../slack/mrkdwn.js";

const SHOWN_FAILURES = 10;

/** Ansible's PLAY RECAP per host, and the tasks that failed, as mrkdwn for the thread. */
export function recapText(run: AnsibleRun): string {
  if (!run.recapFound) return "Ansible printed no PLAY RECAP: the playbook did not finish.";
  // Ansible prints the banner alone when the play matched no host.
  if (run.hosts.length === 0 && run.failures.length === 0) {
    return "Ansible's PLAY RECAP lists no host: the playbook ran on none.";
  }
  const hosts = run.hosts.map(
    (h) =>
      `\`${escapeMrkdwn(h.host)}\` ok=${h.ok} changed=${h.changed} unreachable=${h.unreachable} failed=${h.failed} skipped=${h.skipped} rescued=${h.rescued} ignored=${h.ignored}`,
  );
  const failures = run.failures.filter((f) => !f.ignored && f.rescued !== true);
  const lines = failures.slice(0, SHOWN_FAILURES).map((f) => {
    const item = f.item === undefined ? "" : ` (item ${escapeMrkdwn(truncate(f.item, 80))})`;
    const kind = f.kind === "unreachable" ? "unreachable" : "failed";
    return `• *${escapeMrkdwn(f.host)}* ${kind} in _${escapeMrkdwn(truncate(f.task, 120))}_${item}: ${escapeMrkdwn(truncate(f.message, 300))}`;
  });
  if (failures.length > SHOWN_FAILURES) lines.push(`and ${failures.length - SHOWN_FAILURES} more`);
  return truncate([...hosts, ...lines].join("\n"), 3000);
}
