import { describe, expect, it } from "vitest";
import { createRedactor, REDACTED } from "../src/redact.js";
import { PLANTED_SECRETS, plantedSecretsOutput, TEST_SECRETS } from "./support/secrets.js";

const redact = createRedactor();

describe("createRedactor", () => {
  it("removes known secrets by value, also URL-encoded and JSON-escaped", () => {
    const redactor = createRedactor([TEST_SECRETS.webhookSecret]);
    expect(redactor(`token=${TEST_SECRETS.webhookSecret}&x=1`)).toBe(`token=${REDACTED}&x=1`);
    const odd = 's3cr3t/with+chars"and\\';
    redactor.add(odd);
    expect(redactor(`q=${encodeURIComponent(odd)}`)).toBe(`q=${REDACTED}`);
    expect(redactor(JSON.stringify({ msg: `it is ${odd}` }))).toBe(`{"msg":"it is ${REDACTED}"}`);
  });

  it.each([
    ["a GitLab personal access token", "glpat-AbCdEf1234567890xyz"],
    ["a GitLab personal access token of the dotted form", "glpat-AbCdEf1234567890xyz.01.0k1abcdef"],
    ["a GitLab OAuth application secret", "gloas-0123456789abcdef0123456789abcdef"],
    ["a GitLab deploy token", "gldt-AbCdEf1234567890xyz"],
    ["a GitLab runner authentication token", "glrt-AbCdEf1234567890xyz"],
    ["a GitLab runner token created by registration", "glrtr-AbCdEf1234567890xyz"],
    ["a GitLab runner registration token", "GR1348941AbCdEf1234567890"],
    ["a GitLab CI/CD job token", "glcbt-64_AbCdEf1234567890xyz"],
    ["a GitLab trigger token", "glptt-0123456789abcdef0123"],
    ["a GitLab feed token", "glft-AbCdEf1234567890xyz"],
    ["a GitLab incoming mail token", "glimt-AbCdEf1234567890xyz01"],
    ["a GitLab agent token", "glagent-AbCdEf1234567890xyzAbCdEf1234567890xyz"],
    ["a GitLab workspace token", "glwt-AbCdEf1234567890xyz"],
    ["a GitLab SCIM token", "glsoat-AbCdEf1234567890xyz"],
    ["a GitLab feature flags client token", "glffct-AbCdEf1234567890xyz"],
    ["a Slack bot token", "xoxb-123-456-AbCdEf123456"],
    ["a Slack app token", "xapp-1-A01-123-abcdef012345"],
    ["a Slack incoming webhook", "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX"],
    ["a Vault service token", "hvs.CAESIAbCdEf0123456789abcdef"],
    ["a Vault batch token", "hvb.AAAAAQJxAbCdEf0123456789abcdef"],
    ["a Vault recovery token", "hvr.AbCdEf0123456789abcdef"],
    ["a legacy Vault service token", "s.Xq7Lw2Nk9Pz4Rt6Vb8Mc1Hd3"],
    ["an AWS access key ID", "AKIAIOSFODNN7EXAMPLE"],
    ["an AWS temporary access key ID", "ASIAIOSFODNN7EXAMPLE"],
    [
      "a JWT",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ],
  ])("removes %s by its shape", (_label, token) => {
    expect(redact(`the token is ${token}.`)).toBe(`the token is ${REDACTED}.`);
    expect(redact(`${token}\nnext`)).toBe(`${REDACTED}\nnext`);
  });

  it("removes the secret of a Proxmox API token and keeps who it belongs to", () => {
    const text = "PVEAPIToken=terraform@pve!vmbot=0c7b1a52-3c1f-4a0e-9f5a-2d4c8e6b1f00";
    expect(redact(text)).toBe(`PVEAPIToken=terraform@pve!vmbot=${REDACTED}`);
  });

  it.each([
    ["shell", "PM_API_TOKEN_SECRET=6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b", "PM_API_TOKEN_SECRET="],
    ["shell, upper case", "DB_PASSWORD=hunter2hunter2 make deploy", "DB_PASSWORD="],
    ["a flag", "vault login --password=hunter2x", "vault login --password="],
    ["YAML", "ansible_become_password: Planted-Passw0rd!", "ansible_become_password: "],
    ["YAML, quoted", "api_key: 'abc def ghi'", "api_key: '"],
    ["JSON", '{"client_secret": "abc123def", "changed": false}', '{"client_secret": "'],
    ["HCL", '  passphrase = "correct horse battery staple"', '  passphrase = "'],
    ["a header", "PRIVATE-TOKEN: abcdefgh12345678", "PRIVATE-TOKEN: "],
    ["a query string", "GET /feed?private_token=abcdef123456&page=2", "GET /feed?private_token="],
    ["apikey", "apikey=0123456789", "apikey="],
  ])("removes the value of a secret's name in %s", (_label, text, kept) => {
    const out = redact(text);
    expect(out.startsWith(`${kept}${REDACTED}`)).toBe(true);
    for (const word of [
      "6f1d2c3b",
      "hunter2",
      "Passw0rd",
      "abc",
      "staple",
      "abcdefgh",
      "0123456789",
    ])
      expect(out).not.toContain(word);
  });

  it("keeps what follows the value of a secret's name", () => {
    expect(redact("DB_PASSWORD=hunter2 make deploy")).toBe(`DB_PASSWORD=${REDACTED} make deploy`);
    expect(redact("?token=abcdef&page=2")).toBe(`?token=${REDACTED}&page=2`);
    expect(redact('{"token": "abc", "n": 1}')).toBe(`{"token": "${REDACTED}", "n": 1}`);
  });

  it("removes both values of a secret Terraform shows changing", () => {
    expect(redact('  ~ token = "old-value" -> "new-value"')).toBe(
      `  ~ token = "${REDACTED}" -> "${REDACTED}"`,
    );
  });

  it("removes a basic or bearer credential and a password in a URL", () => {
    expect(redact("Authorization: Basic dXNlcjpwYXNzd29yZA==")).toBe(
      `Authorization: Basic ${REDACTED}`,
    );
    expect(redact("git clone https://deploy:s3cretvalue@gitlab.example.com/a/b.git")).toBe(
      `git clone https://deploy:${REDACTED}@gitlab.example.com/a/b.git`,
    );
  });

  it("removes an AWS secret key after its name, also without a separator", () => {
    const key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    expect(redact(`aws_secret_access_key = ${key}`)).not.toContain(key);
    expect(redact(`AWS_SECRET_ACCESS_KEY=${key}`)).not.toContain(key);
    expect(redact(`aws_secret_key     ${key} shared-credentials-file`)).toBe(
      `aws_secret_key     ${REDACTED} shared-credentials-file`,
    );
  });

  describe("private keys", () => {
    const key = [
      "-----BEGIN RSA PRIVATE KEY-----",
      "Proc-Type: 4,ENCRYPTED",
      "DEK-Info: AES-128-CBC,0123456789ABCDEF",
      "",
      "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MbvkzJ4zMEhlL3gN",
      "q8Rb2KeyLastLine0001Zk3T==",
      "-----END RSA PRIVATE KEY-----",
    ].join("\n");

    it("removes a whole block and keeps the lines around it", () => {
      expect(redact(`before\n${key}\nafter`)).toBe(`before\n${REDACTED}\nafter`);
    });

    it("removes a block a log cut after its BEGIN line", () => {
      const cut = key.split("\n").slice(0, 5).join("\n");
      expect(redact(`before\n${cut}`)).toBe(`before\n${REDACTED}`);
    });

    it("removes a block an excerpt starts inside of", () => {
      const cut = key.split("\n").slice(4).join("\n");
      expect(redact(`${cut}\nError: ssh failed`)).toBe(`${REDACTED}\nError: ssh failed`);
    });

    it("removes PGP and OpenSSH blocks", () => {
      const pgp =
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0\n-----END PGP PRIVATE KEY BLOCK-----";
      expect(redact(pgp)).toBe(REDACTED);
      const ssh =
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz\n-----END OPENSSH PRIVATE KEY-----";
      expect(redact(ssh)).toBe(REDACTED);
    });

    it("keeps a JSON line valid when the key is JSON-escaped, once or twice", () => {
      const once = JSON.stringify({ msg: `out: ${key}\nnext` });
      const twice = JSON.stringify({ msg: `body: ${once}` });
      for (const line of [once, twice]) {
        const out = redact(line);
        expect(() => JSON.parse(out) as unknown).not.toThrow();
        expect(out).not.toContain("MIIEpAIB");
        expect(out).not.toContain("KeyLastLine");
      }
      const cutOnce = JSON.stringify({ msg: `out: ${key.split("\n").slice(4).join("\n")}` });
      const cutTwice = JSON.stringify({ msg: `body: ${JSON.stringify({ text: cutOnce })}` });
      for (const line of [cutOnce, cutTwice]) {
        const out = redact(line);
        expect(() => JSON.parse(out) as unknown).not.toThrow();
        expect(out).not.toContain("KeyLastLine");
      }
    });
  });

  it("finds every planted secret in JSON-escaped text and keeps the JSON valid", () => {
    const text = plantedSecretsOutput();
    const once = JSON.stringify({ msg: text });
    const twice = JSON.stringify({ msg: `http request body: ${JSON.stringify({ text })}` });
    for (const form of [text, once, twice]) {
      const out = redact(form);
      if (form !== text) expect(() => JSON.parse(out) as unknown).not.toThrow();
      for (const [name, secret] of Object.entries(PLANTED_SECRETS)) {
        expect(out, name).not.toContain(secret);
      }
    }
  });

  it("gives the same text when run twice", () => {
    const once = redact(plantedSecretsOutput());
    expect(redact(once)).toBe(once);
  });

  it.each([
    ["a plan summary", "Plan: 1 to add, 0 to change, 0 to destroy. web-01 on pve"],
    [
      "Terraform's sensitive markers",
      "  + password = (sensitive value)\n  ~ token = (sensitive value)",
    ],
    ["a value known after apply", "  + api_token_id = (known after apply)"],
    ["masked values", "CI_JOB_TOKEN: [MASKED]\npassword: ********"],
    ["booleans and null", '{"no_log": true, "password": null, "secret_set": false}'],
    ["addresses and names", "ok: [web-01] => 192.168.1.50/24 gw 192.168.1.1 vm 101 on pve2"],
    ["a UUID not after a secret's name", "vm_uuid = 0c7b1a52-3c1f-4a0e-9f5a-2d4c8e6b1f00"],
    ["a request ID", "request 4f6c2a1e-3c1f-4a0e-9f5a-2d4c8e6b1f00 created pipeline #12"],
    ["prose about tokens", "The bot's token cannot create pipelines: it needs the api scope."],
    [
      "a Terraform resource about tokens",
      '  # gitlab_project_access_token.bot will be created\n  + resource "gitlab_project_access_token" "bot" {',
    ],
    ["words that start like tokens", "s.example.com asia AKIA eyJ glpat- xoxb-"],
    [
      "a git SHA and a digest",
      "sha256:4f2a91c07d3e8b1a4f2a91c07d3e8b1a4f2a91c07d3e8b1a4f2a91c07d3e8b1a",
    ],
    ["an ordinary URL", "https://gitlab.example.com/infra/vms/-/jobs/123"],
    ["a format explained", "Check the `api_token` in Vault (user@realm!tokenid=secret)."],
  ])("leaves %s alone", (_label, text) => {
    expect(createRedactor(["abc"])(text)).toBe(text);
  });
});
