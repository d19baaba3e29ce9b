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
