import { cpus, loadavg } from "node:os";
import { DEFAULT_LIMITS } from "../src/server.js";
import { burst, type BurstResult, type Contender } from "./load-run.js";
import { HOSTILE_BYTES, HOSTILE_COUNT, hostileBodies } from "./load-hostile.js";
import { mb, ms, plural, ratio, setting, table, type Section, type Verdict } from "./report.js";
import { median, percentile } from "./stats.js";

/** The bot's peak resident memory during the burst must stay under this. */
export const LOAD_MEMORY_TARGET_MB = 250;
/** …and grow by less than this under 60 bodies of 4 MB sent at once. */
const HOSTILE_GROWTH_TARGET_MB = 80;
/** Every acknowledgement within this; Slack gives up at 3 s and shows the person an error. */
const ACK_TARGET_MS = 1_000;
/** The smaller burst, besides `BENCH_LOAD_COUNT`. */
const SMALL_BURST = 50;

interface AckFigures {
  acked: number;
  sent: number;
  within: number;
  p50: number;
  p99: number;
  max: number;
}

function ackFigures(times: readonly number[], acked: number): AckFigures {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    acked,
    sent: times.length,
    within: times.filter((t) => t <= ACK_TARGET_MS).length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
  };
}

const commandAcks = (r: BurstResult) => ackFigures(r.commandAckMs, r.commandsAcked);
const submissionAcks = (r: BurstResult) => ackFigures(r.submissionAckMs, r.submissionsAcked);
const lost = (r: BurstResult) => r.submissionsAcked - r.requestsWithPipeline;

function contenderName(contender: Contender): string {
  if (contender.app === "bare") return "bare Bolt app (baseline)";
  return contender.bound === "none"
    ? "vmbot without a per-client bound"
    : `vmbot (at most ${contender.bound} connections per client)`;
}

/**
 * One round of one size of burst: the bare app and vmbot, in an order that alternates from one
 * round to the next.
 */
interface Size {
  count: number;
  /** 1 for the first round of its size. */
  round: number;
  /** How many rounds its size runs. */
  rounds: number;
  bare: BurstResult;
  vmbot: BurstResult;
}

/** Each of `counts` in `rounds` rounds. */
async function measureSizes(counts: readonly number[], rounds: number): Promise<Size[]> {
  const bound = DEFAULT_LIMITS.maxConnectionsPerClient;
  const sizes: Size[] = [];
  for (const count of counts) {
    for (let round = 1; round <= rounds; round += 1) {
      const bareFirst = sizes.length % 2 === 0;
      const first = await burst(bareFirst ? { app: "bare" } : { app: "vmbot", bound }, count);
      const second = await burst(bareFirst ? { app: "vmbot", bound } : { app: "bare" }, count);
      const [bare, vmbot] = bareFirst ? [first, second] : [second, first];
      sizes.push({ count, round, rounds, bare, vmbot });
    }
  }
  return sizes;
}

/** A size's name in the tables: its N, and its round when it runs more than one. */
const sizeName = (size: Size) =>
  size.rounds === 1 ? String(size.count) : `${size.count}, round ${size.round} of ${size.rounds}`;

function ackTable(what: string, sizes: readonly Size[], figures: typeof commandAcks): string {
  const rows = sizes.flatMap((size) =>
    [size.bare, size.vmbot].map((r) => {
      const f = figures(r);
      const { bare } = size;
      return [
        sizeName(size),
        contenderName(r.contender),
        `${f.acked} of ${f.sent}`,
        `${f.within} of ${f.sent}`,
        ms(f.p50),
        ms(f.p99),
        ms(f.max),
        ratio(f.p99, figures(bare).p99),
      ];
    }),
  );
  return table(
    [
      "N",
      what,
      "answered 200",
      `within ${ms(ACK_TARGET_MS)}`,
      "p50",
      "p99",
      "slowest",
      "p99 ÷ bare app's",
    ],
    rows,
  );
}

/** Each burst's outcome, its time against the bare app's in the same round. */
function outcomeTable(results: readonly { name: string; r: BurstResult; bare: BurstResult }[]) {
  return table(
    [
      "N",
      "burst",
      "forms opened",
      "pipelines",
      "lost",
      "time",
      "÷ bare app's",
      "memory (before → peak)",
    ],
    results.map(({ name, r, bare }) => [
      name,
      contenderName(r.contender),
      `${r.formsOpened} (${r.formsRefused.length} refused)`,
      String(r.pipelines),
      r.contender.app === "bare" ? "–" : String(lost(r)),
      ms(r.elapsedMs),
      ratio(r.elapsedMs, bare.elapsedMs),
      `${mb(r.idleMb)} → ${mb(r.peakMb)}`,
    ]),
  );
}

/**
 * The acknowledgement targets of one size over its rounds: every acknowledgement within the
 * target in every round (one round's misses are misses), and the median of the rounds' p99
 * ratios within 1.5× (each round's vmbot against the bare app of the same round).
 */
function ackVerdicts(rounds: readonly Size[]): Verdict[] {
  const count = rounds[0]?.count ?? 0;
  const several = rounds.length > 1;
  return (
    [
      ["`/vm create`", commandAcks],
      ["form submissions", submissionAcks],
    ] as const
  ).flatMap(([what, figures]) => {
    const mine = rounds.map((size) => figures(size.vmbot));
    const theirs = rounds.map((size) => figures(size.bare));
    const ratios = mine.map((f, i) => f.p99 / (theirs[i]?.p99 ?? Number.NaN));
    const allIn = (f: AckFigures) => f.within === f.sent && f.acked === f.sent;
    const within = (list: AckFigures[]) => list.map((f) => f.within).join(", ");
    const slowest = mine.map((f) => ms(f.max)).join(", ");
    const p99 = median(ratios);
    return [
      {
        target: `${count} concurrent ${what}: every one acknowledged within ${ms(ACK_TARGET_MS)}`,
        figure: several
          ? `${mine.filter(allIn).length} of ${rounds.length} rounds: ${within(mine)} of ${count} (slowest ${slowest}); bare app ${within(theirs)}`
          : `${mine[0]?.within} of ${count} (slowest ${slowest})`,
        met: mine.every(allIn),
      },
      {
        target: `${count} concurrent ${what}: acknowledgement p99 within 1.5× a bare Bolt app's`,
        figure: several
          ? `median of ${rounds.length} rounds: ${p99.toFixed(2)}× (${ratios.map((r) => `${r.toFixed(2)}×`).join(", ")})`
          : `${ms(mine[0]?.p99 ?? Number.NaN)} against ${ms(theirs[0]?.p99 ?? Number.NaN)}: ${p99.toFixed(2)}×`,
        met: p99 <= 1.5,
      },
    ];
  });
}

export async function loadSection(): Promise<Section> {
  const count = setting("BENCH_LOAD_COUNT", 200);
  const bound = DEFAULT_LIMITS.maxConnectionsPerClient;
  const machineLoad = loadavg()[0] ?? Number.NaN;
  const rounds = setting("BENCH_LOAD_ROUNDS", 3);
  const sizes = await measureSizes(count > SMALL_BURST ? [SMALL_BURST, count] : [count], rounds);
  const largest = sizes.at(-1);
  if (largest === undefined) throw new Error("the load benchmark measured nothing");
  const unbound = await burst({ app: "vmbot", bound: "none" }, count);
  const unsignedGrowth = await hostileBodies(false);
  const signedGrowth = await hostileBodies(true);
  const bounded = largest.vmbot;
  const body = `N signed \`/vm create\` commands are posted at once, each with its own trigger_id, from one
client address (as Slack's traffic arrives through one load balancer); then N forms are submitted,
all at once (those opened, and for any that Slack refused to open, a copy of the first, which is a
form of its own to the bot). N is ${[...new Set(sizes.map((s) => s.count))].join(" and ")}, each in
${plural(largest.rounds, "round")}, as one burst on two shared cores lands either side of the targets by chance.

Each burst meets a fresh server in a process of its own, started with the same Node options, and
fresh simulated Slack and GitLab in the benchmark's process. vmbot is configured like \`npm start\`
(\`bench/load-bot.ts\`, with the per-client bound it ships with, ${bound}). The baseline is a bare
Bolt app (\`bench/load-bare.ts\`) that acknowledges \`/vm\` and opens a fixed modal (vmbot's create
form, built once), and acknowledges a submission and creates one pipeline with gitbeaker: no
store, no checks. Both serve ${plural(20, "command")} and submissions one at a time first, as a process in
use has. The two take turns, from one burst to the next: the bare app first at N = ${sizes[0]?.count ?? count},
vmbot first in the next round, and so on.

An acknowledgement's time is from the post to the HTTP answer, as Slack sees it; Slack shows
the person an error after 3 s. The burst is done when every submission has its pipeline (for
vmbot: recorded in its store). A form is refused by Slack when \`views.open\` comes after its
trigger_id's three seconds. Memory is resident memory before the burst (\`VmRSS\`) and its peak
(\`VmHWM\`, from \`/proc/<pid>/status\`). The machine's load average when the bursts began:
${machineLoad.toFixed(1)} on ${plural(cpus().length, "CPU")}.

Targets: every acknowledgement within ${ms(ACK_TARGET_MS)} at N = ${count} in every round, and p99 within 1.5× the
bare app's (the median of the rounds' ratios, each round's vmbot against that round's bare app).

What vmbot does before it acknowledges: for a command, one write recording its delivery (so that
a command delivered twice acts once); for a submission, its checks in order (fields and node, the
name and address matched against the requests that hold them by the store, access, the policy,
adding up what people hold only when the policy has a quota) and one write of the request with
its audit entry. The form, the request message and the pipeline come after, at the first turn of
the event loop that brings no new Slack request and leaves none unanswered, or after 1 s
(\`src/slack/after-ack.ts\`): a burst reaches the bot over many turns, and the work of its first
requests, run between the arrivals of the later ones, made theirs the last and latest
acknowledgements when the work waited for one turn only. Everything here shares the machine's two cores with the
simulators and the benchmark, and with whatever else runs on it: at the load average above, each
process gets a fraction of a core, and Slack's three seconds (for the acknowledgement, which Bolt
answers with 404 when it has not come, and for the trigger_id of \`views.open\`) are missed by
the bare app as well, so the burst's counts below vary from run to run with the machine's load.

${ackTable("`/vm create` acknowledged", sizes, commandAcks)}

${ackTable("form submission acknowledged", sizes, submissionAcks)}

What came of each burst, with vmbot once more at N = ${count} without its per-client bound:

${outcomeTable([
  ...sizes.flatMap((size) =>
    [size.bare, size.vmbot].map((r) => ({ name: sizeName(size), r, bare: size.bare })),
  ),
  { name: String(count), r: unbound, bare: largest.bare },
])}

Bodies too large, sent at once: ${HOSTILE_COUNT} bodies of ${mb(HOSTILE_BYTES / (1024 * 1024))} each
are posted to a fresh bot's \`/slack/events\` (with the bound), and the figure is how much its peak
resident memory grew. An unsigned request is refused before its body is read; one with a
signature header is read up to 1 MB, then refused with 413 and its connection closed.

${table(
  ["bodies sent at once", "peak memory growth"],
  [
    [`${HOSTILE_COUNT} × ${mb(HOSTILE_BYTES / (1024 * 1024))}, unsigned`, mb(unsignedGrowth)],
    [
      `${HOSTILE_COUNT} × ${mb(HOSTILE_BYTES / (1024 * 1024))}, with a made-up signature`,
      mb(signedGrowth),
    ],
  ],
)}`;
  const complete = (r: BurstResult) =>
    r.commandsAcked === count &&
    r.formsOpened === count &&
    r.submissionsAcked === count &&
    r.pipelines === count &&
    lost(r) === 0;
  return {
    body,
    verdicts: [
      ...[...new Set(sizes.map((size) => size.count))].flatMap((n) =>
        ackVerdicts(sizes.filter((size) => size.count === n)),
      ),
      {
        target: `${count} concurrent \`/vm create\` and submissions with the per-client bound: all acked, all forms opened, ${count} pipelines, 0 lost`,
        figure: `${bounded.commandsAcked} acked, ${bounded.formsOpened} forms, ${bounded.pipelines} pipelines, ${lost(bounded)} lost (without the bound: ${unbound.commandsAcked}, ${unbound.formsOpened}, ${unbound.pipelines}, ${lost(unbound)})`,
        met: complete(bounded),
      },
      {
        target: "the per-client bound costs the burst no more than 1.5× its time",
        figure: `${ms(bounded.elapsedMs)} against ${ms(unbound.elapsedMs)} without: ${ratio(bounded.elapsedMs, unbound.elapsedMs)}`,
        met: bounded.elapsedMs <= 1.5 * unbound.elapsedMs,
      },
      {
        target: `${HOSTILE_COUNT} bodies of 4 MB at once grow the bot's memory by less than ${HOSTILE_GROWTH_TARGET_MB} MB`,
        figure: `unsigned: ${mb(unsignedGrowth)}, with a made-up signature: ${mb(signedGrowth)}`,
        met: Math.max(unsignedGrowth, signedGrowth) < HOSTILE_GROWTH_TARGET_MB,
      },
      {
        target: `the bot's peak memory during the burst under ${LOAD_MEMORY_TARGET_MB} MB`,
        figure: `${mb(bounded.peakMb)} (before ${mb(bounded.idleMb)})`,
        met: bounded.peakMb < LOAD_MEMORY_TARGET_MB,
      },
    ],
  };
}
