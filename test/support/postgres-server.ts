import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";

/**
 * A throwaway PostgreSQL server for the tests' run (test/setup/postgres.ts) and for the
 * benchmarks (bench/postgres.ts): a copy of a fresh cluster in a temporary folder, loopback
 * only, trust authentication, no fsync.
 */

const run = promisify(execFile);

/** The one command that makes the PostgreSQL tests run on a Debian or Ubuntu machine. */
export const INSTALL_POSTGRES = "sudo apt-get install -y postgresql";

/** The superuser the tests connect as (trust authentication, loopback only). */
const TEST_USER = "vmbot";

/** The folder holding initdb, pg_ctl and postgres: on PATH, or Debian's versioned folders. */
export function findPostgresBin(): string | undefined {
  const onPath = (process.env.PATH ?? "").split(delimiter).filter(Boolean);
  const debian = existsSync("/usr/lib/postgresql")
    ? readdirSync("/usr/lib/postgresql")
        .sort((a, b) => Number(b) - Number(a))
        .map((version) => join("/usr/lib/postgresql", version, "bin"))
    : [];
  return [...onPath, ...debian].find(
    (dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")),
  );
}

/** A port free on loopback now (the server takes it a moment later). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no loopback port");
  return address.port;
}

/**
 * PostgreSQL refuses to run as root. As root, the server runs as Debian's `postgres` user (or
 * `nobody`), owning its temporary folder; otherwise as whoever runs the tests.
 */
function serverUser(): string | undefined {
  if (userInfo().uid !== 0) return undefined;
  const passwd = readFileSync("/etc/passwd", "utf8");
  return /^postgres:/m.test(passwd) ? "postgres" : "nobody";
}

function asUser(user: string | undefined, command: string, args: string[]): [string, string[]] {
  return user === undefined ? [command, args] : ["runuser", ["-u", user, "--", command, ...args]];
}

type Exec = (command: string, args: string[]) => Promise<unknown>;

/**
 * A fresh cluster made once per PostgreSQL version and server user, kept in the temporary
 * folder: initdb takes seconds, a copy of its result a fraction of one. Of runs making it at
 * once, the first to finish keeps its own.
 */
async function clusterTemplate(bin: string, user: string | undefined, exec: Exec): Promise<string> {
  const version = bin.replace(/[^A-Za-z0-9]+/g, "-");
  const template = join(tmpdir(), `vmbot-pg-template${version}-${user ?? String(userInfo().uid)}`);
  if (existsSync(join(template, "PG_VERSION"))) return template;
  const building = `${template}-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  await exec("initdb", [
    "-D",
    building,
    "-U",
    TEST_USER,
    "--auth=trust",
    "--encoding=UTF8",
    "--no-sync",
  ]);
  try {
    renameSync(building, template);
  } catch {
    // Another run kept its template first: it is the same cluster.
    rmSync(building, { recursive: true, force: true });
  }
  return template;
}

export interface PostgresServer {
  /** A connection string to its `postgres` database, as a superuser. */
  url: string;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

/**
 * Starts a throwaway server with the server programs in `bin` (findPostgresBin): a copy of a
 * fresh cluster in a temporary folder, loopback only, trust authentication, no fsync.
 */
export async function startPostgresServer(bin: string): Promise<PostgresServer> {
  const user = serverUser();
  const dir = mkdtempSync(join(tmpdir(), "vmbot-pg-"));
  if (user !== undefined) {
    const { stdout } = await run("id", ["-u", user]);
    const { stdout: gid } = await run("id", ["-g", user]);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = join(dir, "data");
  const port = await freePort();
  const exec = (command: string, args: string[]) =>
    run(...asUser(user, command.startsWith("/") ? command : join(bin, command), args), {
      env: { ...process.env, LC_ALL: "C" },
    });
  try {
    await exec("/bin/cp", ["-a", await clusterTemplate(bin, user, exec), data]);
    const options = [
      "-c listen_addresses=127.0.0.1",
      `-p ${port}`,
      `-k ${dir}`,
      "-c fsync=off",
      "-c synchronous_commit=off",
      "-c full_page_writes=off",
      "-c max_connections=200",
    ].join(" ");
    await exec("pg_ctl", ["start", "-w", "-D", data, "-l", join(dir, "server.log"), "-o", options]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL (${bin}) did not start: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return {
    url: `postgresql://${TEST_USER}@127.0.0.1:${port}/postgres`,
    async stop() {
      await exec("pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w"]).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The server's connection string `url` with another database in it. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Runs one statement on the server at `url` as the superuser, on a connection of its own. */
export async function runOnServer(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A database of its own on the server at `url`, made now: its connection string, and how to drop it. */
export async function createDatabase(
  url: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `vmbot_${randomBytes(6).toString("hex")}`;
  await runOnServer(url, `CREATE DATABASE ${name}`);
  return {
    url: withDatabase(url, name),
    // Connections still open are ended.
    drop: () => runOnServer(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
