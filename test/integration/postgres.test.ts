import pg from "pg";
import { expect, it, onTestFinished } from "vitest";
import {
  APPROVER,
  CHANNEL,
  REQUESTER,
  click,
  harnessPerTest,
  planRequest,
  runUntilSettled,
} from "../support/harness.js";
import { NOT_FINISHED } from "../../src/actions/store-failure.js";
import { describeWithPostgres, freshDatabase, useDatabase } from "../support/postgres.js";
import { waitFor } from "../support/wait.js";

const start = harnessPerTest();

describeWithPostgres("the bot on PostgreSQL (VMBOT_DB=postgres://…)", () => {
  const database = useDatabase();

  it("acknowledges /vm create while the database is still busy recording its delivery, then opens the form", async () => {
    const h = await start({ db: database.url() });
    // Another session holds the deliveries table: recording this command waits for it.
    const holder = new pg.Client({ connectionString: database.url() });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE");
      const answer = await h.signer.slashCommand({
        text: "create web-01",
        userId: REQUESTER,
        channelId: CHANNEL,
      });
      expect(answer).toMatchObject({ status: 200, body: "" });
      expect(h.slack.callsTo("views.open")).toEqual([]);
      await holder.query("COMMIT");
    } finally {
      await holder.end();
    }
    // Recorded once the table is free, the command goes on to its form.
    const opened = await h.slack.waitFor("views.open");
    expect(opened.ok).toBe(true);
  });

  it("takes a request from the form to a ready VM, keeping it in the database", async () => {
    const h = await start({ db: database.url() });
    const { pipelineId, requestId, message } = await planRequest(h);
    await click(h, message(), APPROVER, "plan_approve");
    await waitFor(
      () => (h.gitlab.job(pipelineId, "tf:apply").status === "manual" ? undefined : true),
      "the apply job to start",
    );
    h.gitlab.setJobArtifact(pipelineId, "tf:apply", "vm_ip.txt", "192.168.1.50\n");
    runUntilSettled(h, pipelineId, "tf:apply");
    await h.bot.tracker.tick();
    runUntilSettled(h, pipelineId, "ansible:configure");
    await h.bot.tracker.tick();

    expect(await h.bot.store.getRequest(requestId)).toMatchObject({
      status: "ready",
      address: "192.168.1.50",
      decision: { kind: "approved", by: APPROVER },
    });
    expect(h.gitlab.pipelines).toHaveLength(1);
    expect(h.gitlab.job(pipelineId, "tf:apply").status).toBe("success");
    expect((await h.bot.store.inventory.get("web-01"))?.status).toBe("live");
    const actions = (await h.bot.store.listAudit(requestId)).map((entry) => entry.action);
    expect(actions).toEqual(expect.arrayContaining(["requested", "approved", "ready"]));
    expect(h.logs.some((line) => line.includes('"engine":"postgresql"'))).toBe(true);
    expect(h.logs.join("\n")).not.toContain(new URL(database.url()).password || "\u0000");
    // The only replica leads.
    expect(await h.bot.health()).toEqual({
      ok: true,
      database: { engine: "postgres", reachable: true },
      leadership: { leader: true, replica: expect.stringMatching(/^.+-[0-9a-f]{6}$/) as string },
    });
  });

  it("answers an Approve click it cannot finish, the database unreachable, and plays nothing", async () => {
    // A database of its own: the file's holds the forms and the VM of the tests before.
    const own = await freshDatabase();
    // Dropped once the harness has stopped the bot (after the file's afterEach).
    onTestFinished(() => own.drop());
    const h = await start({ db: own.url });
    const { requestId, message } = await planRequest(h);
    // The database refuses every connection, and drops the bot's.
    const name = new URL(own.url).pathname.slice(1);
    const server = new URL(own.url);
    server.pathname = "/postgres";
    const admin = new pg.Client({ connectionString: server.toString() });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
      await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        [name],
      );
      await click(h, message(), APPROVER, "plan_approve");
      const answer = await h.slack.waitFor(
        "chat.postEphemeral",
        (call) => call.args.user === APPROVER,
      );
      expect(answer.args).toMatchObject({ channel: CHANNEL, text: NOT_FINISHED });
      expect(h.gitlab.requestsTo("POST", /\/jobs\/\d+\/play$/)).toHaveLength(0);
    } finally {
      await admin.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    expect((await h.bot.store.getRequest(requestId))?.status).toBe("awaiting_approval");
  });
});
