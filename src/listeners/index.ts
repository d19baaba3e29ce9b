import type { App, BlockButtonAction } from "@slack/bolt";
import type { Access } from "../access.js";
import { createCreateSubmission, type CreateSubmitDeps } from "../actions/create-submit.js";
import { registerDestroyApprove } from "../actions/destroy-approve.js";
import { registerExtendActions } from "../actions/extend.js";
import { registerLeaseActions } from "../actions/lease.js";
import { createApproveAction, type PlanDecisionDeps } from "../actions/plan-decision.js";
import { createPlanAgainAction, type PlanAgainDeps } from "../actions/plan-again.js";
import { createRejectAction, createRejectSubmission } from "../actions/reject.js";
import { createRetryConfigureAction } from "../actions/retry-configure.js";
import { createWithdrawAction } from "../actions/withdraw.js";
import { registerDestroyActions, type DestroyDeps } from "../commands/destroy.js";
import { createVmCommand } from "../commands/vm.js";
import type { CapacityDeps } from "../commands/capacity.js";
import type { CreateCommandDeps } from "../commands/create.js";
import type { ListDeps } from "../commands/list.js";
import {
  CREATE_MODAL,
  PLAN_APPROVE,
  PLAN_REJECT,
  PLAN_REJECT_MODAL,
  REQUEST_PLAN_AGAIN,
  REQUEST_RETRY_CONFIGURE,
  REQUEST_WITHDRAW,
  UNLOCK_CANCEL,
  UNLOCK_CONFIRM,
  VM_COMMAND,
} from "../ids.js";
import type { HomePublisher } from "../home/publisher.js";
import type { UnlockService } from "../unlock/service.js";
import { registerHome } from "./home.js";
import { unlockCancel, unlockCommand, unlockConfirm } from "./unlock.js";

export type ListenerDeps = CreateCommandDeps &
  CapacityDeps &
  ListDeps &
  CreateSubmitDeps &
  PlanDecisionDeps &
  PlanAgainDeps &
  DestroyDeps & {
    access: Access;
    /** Unlocking Terraform state, a feature of its own. */
    unlock: UnlockService;
    /** The Home tabs, published when opened and after changes. */
    home: HomePublisher;
  };

/**
 * Every command, action and form submission vmbot answers, in one place: each ID in `ids.ts` the
 * bot's messages and forms carry is registered here, with the listener that answers it.
 */
export function registerListeners(app: App, deps: ListenerDeps): void {
  const { unlock } = deps;
  app.command(VM_COMMAND, createVmCommand(deps, { unlock: unlockCommand(unlock) }));

  app.view(CREATE_MODAL, createCreateSubmission(deps));

  app.action<BlockButtonAction>(PLAN_APPROVE, createApproveAction(deps));
  app.action<BlockButtonAction>(PLAN_REJECT, createRejectAction(deps));
  app.view(PLAN_REJECT_MODAL, createRejectSubmission(deps));

  app.action<BlockButtonAction>(REQUEST_WITHDRAW, createWithdrawAction(deps));
  app.action<BlockButtonAction>(REQUEST_RETRY_CONFIGURE, createRetryConfigureAction(deps));
  app.action<BlockButtonAction>(REQUEST_PLAN_AGAIN, createPlanAgainAction(deps));

  app.action<BlockButtonAction>(
    UNLOCK_CONFIRM,
    unlockConfirm(unlock, { channel: deps.config.slack.channel, log: deps.log }),
  );
  app.action<BlockButtonAction>(UNLOCK_CANCEL, unlockCancel(unlock));

  registerDestroyActions(app, deps);
  registerDestroyApprove(app, deps);
  registerLeaseActions(app, deps);
  registerExtendActions(app, deps);
  registerHome(app, deps);
}
