/** Drivers for GitLab-managed Terraform states and their locks, as the tests set them up. */
import { randomUUID } from "node:crypto";
import { emptyTerraformState } from "./defaults.js";
import type { FakeGitlab } from "./fake.js";
import type { GitlabModel } from "./runner.js";

type TerraformDrivers = Pick<
  FakeGitlab,
  | "terraformStates"
  | "addTerraformState"
  | "terraformState"
  | "lockTerraformState"
  | "unlockTerraformState"
  | "deleteTerraformState"
>;

export function terraformDrivers(model: GitlabModel): TerraformDrivers {
  return {
    terraformStates: model.terraformStates,
    addTerraformState: (projectIdOrPath, name, stateOptions = {}) => {
      const project = model.projectByIdOrPath(projectIdOrPath);
      if (model.findTerraformState(project, name)) {
        throw new Error(`project ${project.path} already has a Terraform state ${name}`);
      }
      const holder =
        stateOptions.lockedBy === undefined
          ? undefined
          : model.userByUsername(stateOptions.lockedBy);
      const now = model.now();
      const lockedAt = stateOptions.lockedAt ?? now;
      const createdAt =
        stateOptions.createdAt ?? (holder !== undefined && lockedAt < now ? lockedAt : now);
      const state = model.findOrCreateTerraformState(project, name, createdAt);
      const content =
        stateOptions.content === undefined ? emptyTerraformState() : stateOptions.content;
      if (content !== null) {
        const text =
          typeof content === "string" ? content : `${JSON.stringify(content, null, 2)}\n`;
        model.storeTerraformState(state, text, null, createdAt);
      }
      if (holder !== undefined) {
        model.lockTerraformState(state, stateOptions.lockId ?? randomUUID(), holder, lockedAt);
      }
      return state;
    },
    terraformState: (projectIdOrPath, name) =>
      model.findTerraformState(model.projectByIdOrPath(projectIdOrPath), name),
    lockTerraformState: (projectIdOrPath, name, lock) => {
      const project = model.projectByIdOrPath(projectIdOrPath);
      const holder = model.userByUsername(lock.lockedBy);
      const state = model.findOrCreateTerraformState(project, name, lock.lockedAt);
      if (state.lock !== null) {
        throw new Error(
          `Terraform state ${name} of ${project.path} is already locked by ${state.lock.user.username}`,
        );
      }
      model.lockTerraformState(state, lock.info?.ID ?? randomUUID(), holder, lock.lockedAt);
      return state;
    },
    unlockTerraformState: (projectIdOrPath, name) => {
      const project = model.projectByIdOrPath(projectIdOrPath);
      const state = model.findTerraformState(project, name);
      if (!state) throw new Error(`project ${project.path} has no Terraform state ${name}`);
      model.unlockTerraformState(state);
      return state;
    },
    deleteTerraformState: (projectIdOrPath, name) => {
      const project = model.projectByIdOrPath(projectIdOrPath);
      const state = model.findTerraformState(project, name);
      if (!state) throw new Error(`project ${project.path} has no Terraform state ${name}`);
      model.removeTerraformState(state);
    },
  };
}
