import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  createRecapParser,
  MAX_MESSAGE_LENGTH,
  parseAnsibleOutput,
  type AnsibleRun,
  type HostRecap,
  type TaskFailure,
} from "../../src/ansible/recap.js";
import { fixturePath, readFixture } from "../support/fixtures.js";

// SGR and erase-line sequences as GitLab job logs carry them; stripped here independently of
// the parser so the comparison proves something.
const ESC = String.fromCharCode(27);
const ANSI_IN_TEST = new RegExp(`${ESC}\\[[0-9;]*[A-Za-z]`, "g");
const withoutAnsi = (text: string) => text.replace(ANSI_IN_TEST, "");

/** A banner as the default callback prints it on an 80-column screen. */
const banner = (title: string) => `${title} ${"*".repeat(Math.max(3, 79 - title.length))}`;

/** A recap row as the default callback prints it without colour. */
function recapRow(host: string, counts: Record<string, number>): string {
  const pairs = Object.entries(counts).map(([key, value]) => `${key}=${String(value).padEnd(4)}`);
  return `${host.padEnd(26)} : ${pairs.join(" ")}`;
}

const log = (...lines: string[]) => lines.join("\n") + "\n";

function recap(host: string, counts: Partial<Omit<HostRecap, "host">>): HostRecap {
  return {
    host,
    ok: 0,
    changed: 0,
    unreachable: 0,
    failed: 0,
    skipped: 0,
    rescued: 0,
    ignored: 0,
    ...counts,
  };
}

function pushLines(lines: string[]): AnsibleRun {
  const parser = createRecapParser();
  for (const line of lines) parser.push(line);
  return parser.result();
}

interface FixtureExpectation {
  hosts: HostRecap[];
  failures: TaskFailure[];
  plays: string[];
}

/** Written out from reading each file's PLAY RECAP, banners and failure lines. */
const FIXTURES: Record<string, FixtureExpectation> = {
  "ansible/ok-first-nocolor.txt": {
    hosts: [recap("test-vm-01", { ok: 3, changed: 2, skipped: 1 })],
    failures: [],
    plays: ["Configure VM"],
  },
  "ansible/fail-color.txt": {
    hosts: [recap("test-vm-01", { ok: 1, changed: 1, failed: 1 })],
    failures: [
      {
        host: "test-vm-01",
        task: "Start qemu-guest-agent",
        play: "Configure VM",
        kind: "failed",
        message: "non-zero return code",
        ignored: false,
        rescued: false,
      },
    ],
    plays: ["Configure VM"],
  },
  "ansible-callback/callback_default.out.default.stdout": {
    hosts: [recap("testhost", { ok: 19, changed: 11, skipped: 1, rescued: 1, ignored: 2 })],
    failures: [
      {
        host: "testhost",
        task: "Failed task",
        play: "testhost",
        kind: "failed",
        message: "no reason",
        ignored: true,
        rescued: false,
      },
      {
        host: "testhost",
        task: "debug loop",
        play: "testhost",
        kind: "failed",
        message: "debug-2",
        item: "debug-2",
        ignored: true,
        rescued: false,
      },
      {
        host: "testhost",
        task: "debug loop",
        play: "testhost",
        kind: "failed",
        message: "One or more items failed",
        ignored: true,
        rescued: false,
      },
      {
        host: "testhost",
        task: "EXPECTED FAILURE Failed task to be rescued",
        play: "testhost",
        kind: "failed",
        message: "Failed as requested from task",
        ignored: false,
        rescued: true,
      },
    ],
    plays: ["testhost", "testhost"],
  },
  "ansible-callback/callback_default.out.failed_to_stderr.stdout": {
    hosts: [recap("testhost", { ok: 19, changed: 11, skipped: 1, rescued: 1, ignored: 2 })],
    failures: [],
    plays: ["testhost", "testhost"],
  },
  "ansible-callback/callback_default.out.include_role_fails.stdout": {
    hosts: [recap("testhost", { failed: 1 })],
    failures: [
      {
        host: "testhost",
        task: "include_role : does-not-exist",
        play: "testhost",
        kind: "failed",
        message:
          "the role 'does-not-exist' was not found in TEST_PATH/roles:/<<HOMEDIR>>/.ansible/roles:/usr/share/ansible/roles:/etc/ansible/roles:TEST_PATH",
        ignored: false,
        rescued: false,
      },
    ],
    plays: ["testhost"],
  },
};

const fixtureNames = Object.keys(FIXTURES);

function expected(name: string): FixtureExpectation {
  const found = FIXTURES[name];
  if (found === undefined) throw new Error(`no expectation for ${name}`);
  return found;
}

describe("parseAnsibleOutput on real ansible-playbook output", () => {
  it("has an expectation for every file in the ansible fixture folders", () => {
    const onDisk = ["ansible", "ansible-callback"].flatMap((dir) =>
      readdirSync(fixturePath(dir)).map((file) => `${dir}/${file}`),
    );
    expect(onDisk.sort()).toEqual([...fixtureNames].sort());
  });

  it.each(fixtureNames)("reads the PLAY RECAP counts of %s exactly", (name) => {
    const run = parseAnsibleOutput(readFixture(name));
    expect(run.recapFound).toBe(true);
    expect(run.hosts).toEqual(expected(name).hosts);
  });

  it.each(fixtureNames)("finds the failed tasks of %s with their messages", (name) => {
    expect(parseAnsibleOutput(readFixture(name)).failures).toStrictEqual(expected(name).failures);
  });

  it.each(fixtureNames)("lists the plays of %s in order, repeated names included", (name) => {
    expect(parseAnsibleOutput(readFixture(name)).plays).toEqual(expected(name).plays);
  });

  it.each(fixtureNames)("gives the same result line by line as from the whole of %s", (name) => {
    const text = readFixture(name);
    expect(pushLines(text.split("\n"))).toEqual(parseAnsibleOutput(text));
  });

  it.each(fixtureNames)("gives the same result for %s with ANSI codes removed", (name) => {
    const text = readFixture(name);
    expect(parseAnsibleOutput(withoutAnsi(text))).toEqual(parseAnsibleOutput(text));
  });

  it("gives the colored failing run the same result as its plain text", () => {
    const colored = readFixture("ansible/fail-color.txt");
    const plain = withoutAnsi(colored);
    expect(colored).toContain(`${ESC}[0;31mfatal:`);
    expect(plain).not.toContain(ESC);
    const fromPlain = parseAnsibleOutput(plain);
    expect(parseAnsibleOutput(colored)).toStrictEqual(fromPlain);
    expect(fromPlain.hosts).toEqual(expected("ansible/fail-color.txt").hosts);
    expect(fromPlain.failures.map((f) => f.message)).toEqual(["non-zero return code"]);
  });

  it("reads a log wrapped in GitLab section markers with CRLF line ends the same", () => {
    const text = readFixture("ansible/fail-color.txt");
    const wrapped = [
      `section_start:1764683890:step_script\r${ESC}[0K${ESC}[0K${ESC}[36;1mExecuting "step_script" stage of the job script${ESC}[0;m`,
      `${ESC}[32;1m$ ansible-playbook -i inventory.ini site.yml${ESC}[0;m`,
      ...text.split("\n"),
      `section_end:1764683893:step_script\r${ESC}[0K`,
      `${ESC}[31;1mERROR: Job failed: exit code 2${ESC}[0;m`,
    ].join("\r\n");
    expect(parseAnsibleOutput(wrapped)).toStrictEqual(parseAnsibleOutput(text));
  });

  it("marks the loop-item failure ignored along with the task that ended with ...ignoring", () => {
    const run = parseAnsibleOutput(
      readFixture("ansible-callback/callback_default.out.default.stdout"),
    );
    const loop = run.failures.filter((f) => f.task === "debug loop");
    expect(loop.map((f) => [f.item, f.ignored])).toEqual([
      ["debug-2", true],
      [undefined, true],
    ]);
  });

  it("does not take a stray ...ignoring for a failure when the failure lines went to stderr", () => {
    const run = parseAnsibleOutput(
      readFixture("ansible-callback/callback_default.out.failed_to_stderr.stdout"),
    );
    expect(run.failures).toEqual([]);
    expect(run.hosts[0]?.ignored).toBe(2);
  });
});

describe("parseAnsibleOutput on constructed output", () => {
  const sshError =
    "Failed to connect to the host via ssh: ssh: connect to host 192.168.1.51 port 22: No route to host";

  it("reports an unreachable host with the ssh error, next to a host that went on", () => {
    const run = parseAnsibleOutput(
      log(
        "",
        banner("PLAY [Configure VM]"),
        "",
        banner("TASK [Gathering Facts]"),
        `fatal: [vm-b]: UNREACHABLE! => {"changed": false, "msg": "${sshError}", "unreachable": true}`,
        "ok: [vm-a]",
        "",
        banner("TASK [Write motd]"),
        "changed: [vm-a]",
        "",
        banner("PLAY RECAP"),
        recapRow("vm-a", { ok: 2, changed: 1, unreachable: 0, failed: 0, skipped: 0 }),
        recapRow("vm-b", { ok: 0, changed: 0, unreachable: 1, failed: 0, skipped: 0 }),
        "",
      ),
    );
    expect(run.hosts).toEqual([
      recap("vm-a", { ok: 2, changed: 1 }),
      recap("vm-b", { unreachable: 1 }),
    ]);
    expect(run.failures).toStrictEqual([
      {
        host: "vm-b",
        task: "Gathering Facts",
        play: "Configure VM",
        kind: "unreachable",
        message: sshError,
        ignored: false,
      },
    ]);
  });

  it("takes an unreachable host the recap does not count as unreachable for ignored", () => {
    const run = parseAnsibleOutput(
      log(
        banner("PLAY [Configure VM]"),
        banner("TASK [Ping]"),
        `fatal: [vm-b]: UNREACHABLE! => {"changed": false, "msg": "${sshError}", "skip_reason": "Host vm-b is unreachable", "unreachable": true}`,
        banner("PLAY RECAP"),
        recapRow("vm-b", { ok: 1, changed: 0, unreachable: 0, failed: 0, ignored: 1 }),
      ),
    );
    expect(run.failures.map((f) => [f.kind, f.ignored])).toEqual([["unreachable", true]]);
  });

  it("reads a pretty-printed result over many lines, brackets inside strings included", () => {
    const run = parseAnsibleOutput(
      log(
        banner("TASK [Render config]"),
        "fatal: [vm-a]: FAILED! => {",
        '    "changed": false,',
        '    "stdout": "} ] { [ \\" }",',
        '    "stdout_lines": [',
        '        "} ] { ["',
        "    ],",
        '    "msg": "template error while templating string: unexpected \'}\'"',
        "}",
        "...ignoring",
        banner("PLAY RECAP"),
        recapRow("vm-a", { ok: 1, changed: 0, unreachable: 0, failed: 0, ignored: 1 }),
      ),
    );
    expect(run.failures).toStrictEqual([
      {
        host: "vm-a",
        task: "Render config",
        kind: "failed",
        message: "template error while templating string: unexpected '}'",
        ignored: true,
        rescued: false,
      },
    ]);
    expect(run.hosts).toEqual([recap("vm-a", { ok: 1, ignored: 1 })]);
  });

  it("finds the msg by pattern when the result is not valid JSON", () => {
    const run = parseAnsibleOutput(
      log(
        banner("TASK [Install packages]"),
        `fatal: [vm-a]: FAILED! => {"changed": false, "cache": {'python': repr}, "msg": "No package matching 'qemu-guest-agnet' is available", "rc": 100}`,
      ),
    );
    expect(run.failures.map((f) => f.message)).toEqual([
      "No package matching 'qemu-guest-agnet' is available",
    ]);
  });

  it("reads the message of a result cut off by the end of the log", () => {
    const parser = createRecapParser();
    parser.push(banner("TASK [Install packages]"));
    parser.push("fatal: [vm-a]: FAILED! => {");
    parser.push('    "msg": "Failed to update apt cache: unknown reason",');
    parser.push('    "rc": 100,');
    const run = parser.result();
    expect(run.recapFound).toBe(false);
    expect(run.hosts).toEqual([]);
    expect(run.failures.map((f) => [f.task, f.message])).toEqual([
      ["Install packages", "Failed to update apt cache: unknown reason"],
    ]);
  });

  it("ends an unbalanced result at the next banner and goes on reading", () => {
    const run = parseAnsibleOutput(
      log(
        banner("TASK [First]"),
        'fatal: [vm-a]: FAILED! => {"msg": "first failure", "stdout_lines": [',
        banner("TASK [Second]"),
        'fatal: [vm-b]: FAILED! => {"msg": "second failure"}',
      ),
    );
    expect(run.failures.map((f) => [f.host, f.task, f.message])).toEqual([
      ["vm-a", "First", "first failure"],
      ["vm-b", "Second", "second failure"],
    ]);
  });

  it("uses stderr when a result has neither msg nor reason", () => {
    const run = parseAnsibleOutput(
      log(
        banner("TASK [Run script]"),
        'fatal: [vm-a]: FAILED! => {"changed": true, "msg": "", "rc": 2, "stderr": "bash: /opt/setup.sh: Permission denied", "stdout": ""}',
      ),
    );
    expect(run.failures[0]?.message).toBe("bash: /opt/setup.sh: Permission denied");
  });

  it("keeps only the first 500 characters of a long message", () => {
    const long = "x".repeat(MAX_MESSAGE_LENGTH + 300);
    const run = parseAnsibleOutput(
      log(banner("TASK [Noisy]"), `fatal: [vm-a]: FAILED! => {"msg": "${long}"}`),
    );
    expect(MAX_MESSAGE_LENGTH).toBe(500);
    expect(run.failures[0]?.message).toBe(long.slice(0, 500));
  });

  it("counts skipped, rescued and ignored as 0 when an older Ansible leaves them out", () => {
    const run = parseAnsibleOutput(
      log(
        banner("PLAY RECAP"),
        recapRow("vm-a", { ok: 5, changed: 2, unreachable: 0, failed: 0 }),
        recapRow("vm-b", { ok: 3, changed: 1, unreachable: 0, failed: 1 }),
      ),
    );
    expect(run.hosts).toEqual([
      recap("vm-a", { ok: 5, changed: 2 }),
      recap("vm-b", { ok: 3, changed: 1, failed: 1 }),
    ]);
  });

  it("names the inventory host, not the delegate, for a delegated task", () => {
    const run = parseAnsibleOutput(
      log(
        banner("TASK [Register DNS]"),
        'fatal: [vm-a -> localhost]: FAILED! => {"changed": false, "msg": "zone not found"}',
      ),
    );
    expect(run.failures.map((f) => [f.host, f.message])).toEqual([["vm-a", "zone not found"]]);
  });

  it("reads task names from check-mode, handler and role banners", () => {
    const run = parseAnsibleOutput(
      log(
        banner("PLAY [Configure VM] [CHECK MODE]"),
        banner("TASK [base : Write motd] [CHECK MODE]"),
        'fatal: [vm-a]: FAILED! => {"msg": "one"}',
        banner("RUNNING HANDLER [Restart sshd]"),
        'fatal: [vm-a]: FAILED! => {"msg": "two"}',
      ),
    );
    expect(run.plays).toEqual(["Configure VM"]);
    expect(run.failures.map((f) => [f.play, f.task])).toEqual([
      ["Configure VM", "base : Write motd"],
      ["Configure VM", "Restart sshd"],
    ]);
  });

  it("says the recap was not found when the run stopped before it", () => {
    const run = parseAnsibleOutput(
      log(banner("PLAY [Configure VM]"), banner("TASK [Gathering Facts]"), "ok: [vm-a]"),
    );
    expect(run).toEqual({ hosts: [], failures: [], recapFound: false, plays: ["Configure VM"] });
  });

  it("adds up the rows of a host that appears in the recaps of two runs", () => {
    const row = recapRow("vm-a", { ok: 2, changed: 1, unreachable: 0, failed: 0, skipped: 1 });
    const run = parseAnsibleOutput(
      log(banner("PLAY RECAP"), row, "", "$ ansible-playbook site.yml", banner("PLAY RECAP"), row),
    );
    expect(run.hosts).toEqual([recap("vm-a", { ok: 4, changed: 2, skipped: 2 })]);
  });

  it("leaves rescued out when the failures seen do not add up to the recap", () => {
    const run = parseAnsibleOutput(
      log(
        banner("TASK [Flaky]"),
        'fatal: [vm-a]: FAILED! => {"msg": "boom"}',
        banner("PLAY RECAP"),
        recapRow("vm-a", { ok: 1, changed: 0, unreachable: 0, failed: 0, rescued: 0 }),
      ),
    );
    expect(run.failures[0]).not.toHaveProperty("rescued");
  });

  it("takes earlier failures of a host as rescued and its last one as the one that stopped it", () => {
    const run = parseAnsibleOutput(
      log(
        banner("TASK [Try]"),
        'fatal: [vm-a]: FAILED! => {"msg": "first"}',
        banner("TASK [Recover]"),
        'fatal: [vm-a]: FAILED! => {"msg": "second"}',
        banner("PLAY RECAP"),
        recapRow("vm-a", { ok: 1, changed: 0, unreachable: 0, failed: 1, rescued: 1 }),
      ),
    );
    expect(run.failures.map((f) => [f.message, f.rescued])).toEqual([
      ["first", true],
      ["second", false],
    ]);
  });

  it("splits text of several lines pushed at once", () => {
    const text = log(
      banner("TASK [Ping]"),
      'fatal: [vm-a]: FAILED! => {"msg": "down"}',
      banner("PLAY RECAP"),
      recapRow("vm-a", { ok: 0, changed: 0, unreachable: 0, failed: 1 }),
    );
    const parser = createRecapParser();
    parser.push(text);
    expect(parser.result()).toEqual(parseAnsibleOutput(text));
  });
});

describe("parseAnsibleOutput on layouts beyond the default callback's JSON results", () => {
  it("reads each failure's message from the YAML result format's indented lines", () => {
    const run = parseAnsibleOutput(
      readFixture("corpus/ansible/callback_default.out.result_format_yaml.stdout"),
    );
    expect(
      run.failures.map(({ task, message, item, ignored }) => ({ task, message, item, ignored })),
    ).toEqual([
      { task: "Failed task", message: "no reason", item: undefined, ignored: true },
      { task: "debug loop", message: "debug-2", item: "debug-2", ignored: true },
      { task: "debug loop", message: "One or more items failed", item: undefined, ignored: true },
      {
        task: "EXPECTED FAILURE Failed task to be rescued",
        message: "Failed as requested from task",
        item: undefined,
        ignored: false,
      },
    ]);
  });

  it("reads a YAML result's block, quoted and folded messages and its unreachable flag", () => {
    const run = parseAnsibleOutput(
      log(
        banner("TASK [ping]"),
        "fatal: [web-01]: UNREACHABLE! => ",
        "    changed: false",
        "    msg: 'Failed to connect to the host via ssh: ssh: connect to host 192.168.1.50 port",
        "        22: No route to host'",
        "    unreachable: true",
        "fatal: [web-02]: FAILED! => ",
        "    changed: false",
        "    msg: |-",
        "        first line",
        "        second line",
        "    rc: 1",
        "",
        banner("PLAY RECAP"),
        recapRow("web-01", { ok: 0, changed: 0, unreachable: 1, failed: 0 }),
        recapRow("web-02", { ok: 0, changed: 0, unreachable: 0, failed: 1 }),
      ),
    );
    expect(run.failures.map(({ host, kind, message }) => ({ host, kind, message }))).toEqual([
      {
        host: "web-01",
        kind: "unreachable",
        message:
          "Failed to connect to the host via ssh: ssh: connect to host 192.168.1.50 port 22: No route to host",
      },
      { host: "web-02", kind: "failed", message: "first line\nsecond line" },
    ]);
  });

  it("reads the hosts of a recap with Ansible 2.0's retry hint under its banner", () => {
    // The layout of ansible-playbook 1.9/2.0: the hint, a blank line, then the rows.
    const run = parseAnsibleOutput(
      [
        "TASK: [system-info | Run the script] ****************************************** ",
        'failed: [localhost] => {"changed": true, "rc": 1, "msg": "non-zero return code"}',
        "",
        "PLAY RECAP ******************************************************************** ",
        "           to retry, use: --limit @/root/devenv.retry",
        "",
        "localhost                  : ok=84   changed=53   unreachable=0    failed=1   ",
        "web-01                     : ok=2    changed=0    unreachable=1    failed=0   ",
        "",
      ].join("\n"),
    );
    expect(run.recapFound).toBe(true);
    expect(run.hosts).toEqual([
      recap("localhost", { ok: 84, changed: 53, failed: 1 }),
      recap("web-01", { ok: 2, unreachable: 1 }),
    ]);
  });
});

describe("the message of a failed command", () => {
  it("follows 'non-zero return code' with the command's standard error, when it has one", () => {
    const run = parseAnsibleOutput(
      log(
        banner("TASK [Check free disk space]"),
        'fatal: [web-02]: FAILED! => {"msg": "non-zero return code", "rc": 1, "stderr": "No space left on device"}',
        'fatal: [web-03]: FAILED! => {"msg": "non-zero return code", "rc": 1, "stderr": ""}',
      ),
    );
    expect(run.failures.map((failure) => failure.message)).toEqual([
      "non-zero return code: No space left on device",
      "non-zero return code",
    ]);
  });
});
