import { describe, expect, it } from "vitest";
import {
  sharedState,
  STATE_NAME,
  stateNameFor,
  stateNameTemplateProblem,
} from "../../src/vm/state-name.js";

describe("state names from TF_STATE_NAME_TEMPLATE", () => {
  it("names each VM's state from the template, every {vm_name} replaced", () => {
    expect(stateNameFor("vm-{vm_name}", "web-01")).toBe("vm-web-01");
    expect(stateNameFor("{vm_name}.{vm_name}", "db")).toBe("db.db");
    expect(stateNameFor("general", "web-01")).toBe("general");
    expect(sharedState("general")).toBe(true);
    expect(sharedState("vm-{vm_name}")).toBe(false);
  });

  it("accepts templates whose names GitLab takes for any VM name, and says what is wrong with others", () => {
    for (const good of ["vm-{vm_name}", "general", "{vm_name}", "proxmox_{vm_name}.tfstate"]) {
      expect(stateNameTemplateProblem(good), good).toBeUndefined();
      expect(stateNameFor(good, "a".repeat(63))).toMatch(STATE_NAME);
    }
    expect(stateNameTemplateProblem("vm-{VM_NAME}")).toMatch(/only placeholder is \{vm_name\}/);
    expect(stateNameTemplateProblem("vm {vm_name}")).toMatch(/letters, digits/);
    expect(stateNameTemplateProblem("")).toMatch(/letters, digits/);
    expect(stateNameTemplateProblem("vm-}{vm_name}")).toMatch(/opens or closes/);
  });
});
