/** Ansible jobs' logs, and synthetic `ansible-playbook` runs. */
import { ESC, runnerTrace } from "./runner.js";
import { type TraceOptions } from "./terraform.js";

const ANSIBLE_IMAGE = "registry.gitlab.com/platform/ansible-runner:2.17";

/**
 * `ansible-playbook`'s exit code for its output: 2 when a host failed, 4 when one was unreachable
 * (and none failed), 1 when no `PLAY RECAP` was printed (the playbook did not run), else 0.
 */
export function ansibleExitCode(output: string): number {
  const plain = output.replace(/\x1b\[[0-9;]*m/g, ""); // eslint-disable-line no-control-regex
  if (!/^PLAY RECAP \*/m.test(plain)) return 1;
  let failed = 0;
  let unreachable = 0;
  for (const match of plain.matchAll(
    / : ok=\d+\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)/g,
  )) {
    unreachable += Number(match[1]);
    failed += Number(match[2]);
  }
  if (failed > 0) return 2;
  return unreachable > 0 ? 4 : 0;
}

/** The configure job's log: `ansible-playbook` printing `ansibleOutput`. */
export function ansibleTrace(ansibleOutput: string, options: TraceOptions = {}): string {
  const exitCode = ansibleExitCode(ansibleOutput);
  return runnerTrace({
    ...options,
    image: ANSIBLE_IMAGE,
    steps: [
      {
        command: 'echo "$SSH_PRIVATE_KEY" > ~/.ssh/id_ed25519 && chmod 600 ~/.ssh/id_ed25519',
        output: "",
      },
      { command: "ansible-playbook -i inventory.ini site.yml", output: ansibleOutput },
    ],
    outcome: options.outcome ?? (exitCode === 0 ? "success" : "failed"),
    exitCode: exitCode === 0 ? 1 : exitCode,
  });
}

type TaskResult = "ok" | "changed" | "skipping" | "fatal" | "unreachable";

export interface SyntheticTask {
  name: string;
  result: TaskResult;
  /** For `fatal`: the module's message. */
  msg?: string;
}

export interface SyntheticAnsibleRun {
  host?: string;
  play?: string;
  tasks?: SyntheticTask[];
  /** Colour as `ANSIBLE_FORCE_COLOR=1` does in CI. Default true. */
  color?: boolean;
}

// ansible's colour codes (ansible.utils.color.codeCodes) for its default theme.
const ANSIBLE_COLOR = {
  ok: "0;32",
  changed: "0;33",
  error: "0;31",
  unreachable: "1;31",
  skip: "0;36",
  warn: "1;35",
} as const;

/** Banner as the default callback prints it: the title, a space, stars up to 80 columns. */
function banner(title: string): string {
  return `${title} ${"*".repeat(Math.max(3, 79 - title.length))}`;
}

/**
 * `ansible-playbook` output with the default stdout callback. Stops at the first `fatal` task,
 * as Ansible does for a single host.
 */
export function syntheticAnsibleRun(run: SyntheticAnsibleRun = {}): string {
  const host = run.host ?? "web-01";
  const color = run.color ?? true;
  const paint = (code: string, text: string): string =>
    color ? `${ESC}[${code}m${text}${ESC}[0m` : text;
  const tasks = run.tasks ?? DEFAULT_TASKS;
  const counts = {
    ok: 0,
    changed: 0,
    unreachable: 0,
    failed: 0,
    skipped: 0,
    rescued: 0,
    ignored: 0,
  };

  let out = `\n${banner(`PLAY [${run.play ?? "Configure VM"}]`)}\n`;
  for (const task of tasks) {
    out += `\n${banner(`TASK [${task.name}]`)}\n`;
    if (task.result === "ok") {
      counts.ok += 1;
      out += `${paint(ANSIBLE_COLOR.ok, `ok: [${host}]`)}\n`;
    } else if (task.result === "changed") {
      counts.ok += 1;
      counts.changed += 1;
      out += `${paint(ANSIBLE_COLOR.changed, `changed: [${host}]`)}\n`;
    } else if (task.result === "skipping") {
      counts.skipped += 1;
      out += `${paint(ANSIBLE_COLOR.skip, `skipping: [${host}]`)}\n`;
    } else if (task.result === "unreachable") {
      counts.unreachable += 1;
      const result = JSON.stringify({
        changed: false,
        msg:
          task.msg ??
          `Failed to connect to the host via ssh: ssh: connect to host ${host} port 22: No route to host`,
        unreachable: true,
      });
      out += `${paint(ANSIBLE_COLOR.unreachable, `fatal: [${host}]: UNREACHABLE! => ${result}`)}\n`;
      break;
    } else {
      counts.failed += 1;
      const result = JSON.stringify({ changed: false, msg: task.msg ?? "Task failed" });
      out += `${paint(ANSIBLE_COLOR.error, `fatal: [${host}]: FAILED! => ${result}`)}\n`;
      break;
    }
  }

  const field = (name: keyof typeof counts, code: string): string => {
    const text = `${name}=${String(counts[name]).padEnd(4)}`;
    return counts[name] !== 0 ? paint(code, text) : text;
  };
  const hostCode =
    counts.failed > 0 || counts.unreachable > 0
      ? ANSIBLE_COLOR.error
      : counts.changed > 0
        ? ANSIBLE_COLOR.changed
        : ANSIBLE_COLOR.ok;
  // `%-26s` of the host, or `%-37s` of the coloured host (whose codes take 11 of the 37).
  const hostColumn = color ? paint(hostCode, host).padEnd(37) : host.padEnd(26);
  const recap = [
    field("ok", ANSIBLE_COLOR.ok),
    field("changed", ANSIBLE_COLOR.changed),
    field("unreachable", ANSIBLE_COLOR.unreachable),
    field("failed", ANSIBLE_COLOR.error),
    field("skipped", ANSIBLE_COLOR.skip),
    field("rescued", ANSIBLE_COLOR.ok),
    field("ignored", ANSIBLE_COLOR.warn),
  ].join(" ");
  out += `\n${banner("PLAY RECAP")}\n${hostColumn} : ${recap}\n\n`;
  return out;
}

const DEFAULT_TASKS: SyntheticTask[] = [
  { name: "Gathering Facts", result: "ok" },
  { name: "Wait for cloud-init to finish", result: "ok" },
  { name: "Install qemu-guest-agent", result: "changed" },
  { name: "Enable and start qemu-guest-agent", result: "changed" },
  { name: "Set the hostname", result: "ok" },
];

/** A configure run that fails starting the guest agent. */
export const FAILING_TASKS: readonly SyntheticTask[] = [
  { name: "Gathering Facts", result: "ok" },
  { name: "Install qemu-guest-agent", result: "changed" },
  {
    name: "Enable and start qemu-guest-agent",
    result: "fatal",
    msg: "Unable to start service qemu-guest-agent: Job for qemu-guest-agent.service failed.",
  },
];

/** A configure run that cannot reach the new VM over SSH: the first task is as far as it gets. */
export const UNREACHABLE_TASKS: readonly SyntheticTask[] = [
  { name: "Gathering Facts", result: "unreachable" },
];
