import { describe, expect, it } from "vitest";
import { UNLOCK_CANCEL, UNLOCK_CONFIRM } from "../../src/ids.js";
import {
  age,
  stateMissing,
  unlockedNotice,
  unlockPrompt,
  type UnlockTarget,
} from "../../src/views/unlock.js";
import { expectWithinSlackLimits } from "../support/block-kit.js";

const now = new Date("2026-12-02T12:00:00Z");
const lock = { name: "general", lockedAt: "2026-12-02T08:47:30Z", lockedBy: "alice" };

interface Button {
  action_id: string;
  value: string;
  style?: string;
  confirm?: { title: { text: string }; text: { text: string }; confirm: { text: string } };
}

const buttons = (blocks: unknown[]) =>
  (blocks.find((block) => (block as { type: string }).type === "actions") as { elements: Button[] })
    .elements;

describe("age", () => {
  it("reads a lock's age at a glance", () => {
    expect(age("2026-12-02T11:59:15Z", now)).toBe("45 s");
    expect(age("2026-12-02T11:18:00Z", now)).toBe("42 min");
    expect(age(lock.lockedAt, now)).toBe("3 h 12 min");
    expect(age("2026-11-29T09:00:00Z", now)).toBe("3 d 3 h");
    expect(age("2026-12-02T12:00:05Z", now)).toBe("0 s");
  });
});

describe("unlockPrompt", () => {
  const prompt = unlockPrompt(lock, now);

  it("names the state, the holder, when and how long ago", () => {
    expectWithinSlackLimits(prompt);
    expect(JSON.stringify(prompt.blocks)).toContain(
      ":lock: The Terraform state `general` is locked by *alice* since <!date^1796201250^{date_short_pretty} {time}|2026-12-02T08:47:30Z> (3 h 12 min ago).",
    );
    expect(prompt.text).toBe("The Terraform state general is locked by alice (3 h 12 min).");
  });

  it("puts Force-unlock behind a confirmation that names the holder, the age and the risk", () => {
    const [confirm, cancel] = buttons(prompt.blocks);
    expect(confirm?.action_id).toBe(UNLOCK_CONFIRM);
    expect(confirm?.style).toBe("danger");
    expect(JSON.parse(confirm?.value ?? "")).toEqual({
      state: "general",
      lockedAt: lock.lockedAt,
    } satisfies UnlockTarget);
    expect(confirm?.confirm?.title.text).toBe("Force-unlock general?");
    expect(confirm?.confirm?.text.text).toBe(
      "alice's lock is 3 h 12 min old. If a job still runs against general, a second run can write over it and corrupt the state.",
    );
    expect(cancel?.action_id).toBe(UNLOCK_CANCEL);
  });

  it("says when GitLab does not name the holder, and stays within Slack's limits for long names", () => {
    const long = "s".repeat(255);
    const anonymous = unlockPrompt({ name: long, lockedAt: lock.lockedAt, lockedBy: null }, now);
    expectWithinSlackLimits(anonymous);
    expect(JSON.stringify(anonymous.blocks)).toContain("someone GitLab does not name");
  });

  it("escapes a holder's name in mrkdwn (the dialog's plain text is never parsed)", () => {
    const hostile = unlockPrompt({ ...lock, lockedBy: "<!here>" }, now);
    const mrkdwn = JSON.stringify(hostile.blocks.slice(0, 2));
    expect(mrkdwn).not.toContain("<!here>");
    expect(mrkdwn).toContain("*&lt;!here&gt;*");
  });
});

describe("the other answers", () => {
  it("lists the project's states when the asked one does not exist", () => {
    expect(stateMissing("prod", "infra/vms", ["general", "staging"]).text).toBe(
      "GitLab has no Terraform state `prod` in `infra/vms`. Its states: `general`, `staging`.",
    );
    expect(stateMissing("prod", "infra/vms", []).text).toContain("It has no Terraform states yet.");
  });

  it("tells the channel who unlocked which state and whose lock it was", () => {
    const notice = unlockedNotice("U0ADMIN", lock, now);
    expectWithinSlackLimits(notice);
    expect(notice.text).toBe(
      ":unlock: <@U0ADMIN> force-unlocked the Terraform state `general`, locked by *alice* since <!date^1796201250^{date_short_pretty} {time}|2026-12-02T08:47:30Z> (3 h 12 min).",
    );
  });
});
