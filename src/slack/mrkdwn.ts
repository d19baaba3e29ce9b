/** Escapes text from outside (people, GitLab, Terraform) so Slack shows it and never parses it. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** A link whose label is escaped; the URL must come from a trusted system. */
export function link(url: string, label: string): string {
  return `<${url.replace(/[<>|]/g, encodeURIComponent)}|${escapeMrkdwn(label).replace(/\|/g, "¦")}>`;
}

/** Cuts text to `max` characters, marking the cut. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Undoes the `&amp;`, `&lt;` and `&gt;` Slack puts in slash-command text. */
export function unescapeSlack(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}
