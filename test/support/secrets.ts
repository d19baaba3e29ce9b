/** The credentials every test uses. No log line of the whole suite may contain any of them. */
export const TEST_SECRETS = {
  botToken: "xoxb-1111111111-2222222222-TestBotTokenValue0001",
  appToken: "xapp-1-A0000000001-3333333333-TestAppTokenValue0001",
  signingSecret: "8f742231b10e8888abcd99yyyzzz85a5".replace(/[yz]/g, "0"),
  gitlabToken: "glpat-TestGitlabToken000000001",
  webhookSecret: "test-webhook-secret-0001",
  proxmoxToken: "vmbot@pve!capacity=0b7e9c4e-5a1d-4c1e-9a7b-3f2d1c0e9a01",
  vaultToken: "hvs.TestVaultRootToken000000000001",
  vaultSecretId: "3c9a6d4e-7f21-4b8a-9e0c-5d1f2a3b4c01",
} as const;

/**
 * Secrets a job could print, one of each shape the bot must keep out of Slack and its logs. Tests
 * plant them in job logs; the suite's scan looks for every one of them.
 */
export const PLANTED_SECRETS = {
  privateKeyBody: "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7PlantedKeyLine01",
  privateKeyTail: "q8Rb2PlantedKeyLastLine0001Zk3T",
  proxmoxSecret: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b",
  vaultLegacyToken: "s.Xq7Lw2Nk9Pz4Rt6Vb8Mc1Hd3",
  vaultBatchToken: "hvb.AAAAAQJxPlantedBatchToken00001",
  awsAccessKeyId: "AKIAPLANTED0EXAMPLE1",
  awsSecretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTED001",
  password: "Planted-Passw0rd!",
  slackWebhook: "hooks.slack.com/services/T0PLANTED/B0PLANTED/PlantedWebhookSecret01",
  gitlabDeployToken: "gldt-PlantedDeployToken00001",
  gitlabRunnerToken: "glrt-PlantedRunnerToken00001",
  gitlabJobToken: "glcbt-64_PlantedJobToken00001",
  gitlabTriggerToken: "glptt-PlantedTriggerToken0001",
  jwt: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.PlantedJwtSignature0001",
  apiKey: "PlantedApiKey00000001",
  passphrase: "Planted passphrase 0001",
  registryPassword: "PlantedRegistryPw0001",
} as const;

/**
 * Job output carrying every planted secret, in the shapes logs print them: a key block, shell
 * `NAME=value`, YAML `name: value`, JSON, HCL, a header, a URL.
 */
export function plantedSecretsOutput(): string {
  const s = PLANTED_SECRETS;
  return [
    "$ cat deploy_key",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    s.privateKeyBody,
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    s.privateKeyTail,
    "-----END OPENSSH PRIVATE KEY-----",
    "$ env | sort",
    `PM_API_TOKEN_SECRET=${s.proxmoxSecret}`,
    `VAULT_TOKEN=${s.vaultLegacyToken}`,
    `AWS_ACCESS_KEY_ID=${s.awsAccessKeyId}`,
    `AWS_SECRET_ACCESS_KEY=${s.awsSecretKey}`,
    `CI_JOB_TOKEN=${s.gitlabJobToken}`,
    `batch token ${s.vaultBatchToken} issued`,
    `ansible_become_password: ${s.password}`,
    `notify: https://${s.slackWebhook}`,
    `deploy token ${s.gitlabDeployToken}, runner ${s.gitlabRunnerToken}`,
    `curl -X POST -F token=${s.gitlabTriggerToken} https://gitlab.example.com/api/v4/trigger`,
    `Authorization: Bearer ${s.jwt}`,
    `{"api_key": "${s.apiKey}", "changed": false}`,
    `passphrase = "${s.passphrase}"`,
    `docker login https://ci:${s.registryPassword}@registry.example.com`,
  ].join("\n");
}
