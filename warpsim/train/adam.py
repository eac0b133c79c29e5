"""Adam over parameters stacked along a leading run dimension, each run at its own rate.

torch's Adam takes one learning rate per parameter group; a batch of training runs needs
one per run, and the KL schedule moves each of them on the device. Adam's moments are
per element, so stacked parameters keep every run's moments apart already; only the
step's size is per run. The arithmetic is torch's Adam (no weight decay, no AMSGrad), and
nothing reads the device from the host, so a CUDA graph captures the step.

Each run's part of the state reads and writes as the state dict of torch's Adam over that
run's own parameters, the format of every checkpoint.
"""

from __future__ import annotations

import torch

BETAS = (0.9, 0.999)
EPS = 1e-5


class RunAdam(torch.optim.Optimizer):
    """Parameter groups of float32[R, ...] parameters, each group's ``lr`` a float32[R] tensor
    on the parameters' device (written in place by the schedules)."""

    def __init__(self, groups: list[dict]):
        super().__init__(groups, {"betas": BETAS, "eps": EPS})

    @torch.no_grad()
    def step(self, closure=None):
        learning = [(parameter, group["lr"]) for group in self.param_groups for parameter in group["params"]
                    if parameter.grad is not None]
        adam_update([parameter for parameter, _ in learning], [parameter.grad for parameter, _ in learning],
                    [self.state_of(parameter) for parameter, _ in learning], [rate for _, rate in learning])

    def state_of(self, parameter: torch.Tensor) -> dict:
        """The parameter's step count and moments, made (zero) at their first use."""
        state = self.state[parameter]
        if not state:
            state["step"] = torch.zeros((), dtype=torch.float32, device=parameter.device)
            state["exp_avg"] = torch.zeros_like(parameter)
            state["exp_avg_sq"] = torch.zeros_like(parameter)
        return state

    def run_state_dict(self, run: int) -> dict:
        """Run ``run``'s part, as torch's Adam over that run's parameters would save it (on the CPU)."""
        state, groups, index = {}, [], 0
        for group in self.param_groups:
            indices = []
            for parameter in group["params"]:
                own = self.state.get(parameter)
                if own:
                    state[index] = {"step": own["step"].cpu().clone(), "exp_avg": own["exp_avg"][run].cpu(),
                                    "exp_avg_sq": own["exp_avg_sq"][run].cpu()}
                indices.append(index)
                index += 1
            groups.append({"lr": float(group["lr"][run]), "betas": BETAS, "eps": EPS, "weight_decay": 0,
                           "amsgrad": False, "params": indices})
        return {"state": state, "param_groups": groups}

    @torch.no_grad()
    def load_run_state_dict(self, run: int, saved: dict) -> None:
        """Loads ``run_state_dict``'s format (or torch Adam's) into run ``run``; a ValueError naming what
        does not fit."""
        parameters = [parameter for group in self.param_groups for parameter in group["params"]]
        saved_groups = saved["param_groups"]
        if [len(group["params"]) for group in saved_groups] != [len(group["params"]) for group in self.param_groups]:
            raise ValueError("its parameter groups differ from this run's")
        for index, parameter in enumerate(parameters):
            entry = saved["state"].get(index)
            if entry is None:
                continue
            state = self.state_of(parameter)
            for name in ("exp_avg", "exp_avg_sq"):
                if tuple(entry[name].shape) != tuple(parameter.shape[1:]):
                    raise ValueError(f"parameter {index}'s {name} has shape {tuple(entry[name].shape)}, "
                                     f"expected {tuple(parameter.shape[1:])}")
                state[name][run].copy_(entry[name])
            state["step"].copy_(torch.as_tensor(entry["step"], dtype=torch.float32))


def adam_update(parameters: list[torch.Tensor], gradients: list[torch.Tensor], states: list[dict],
                rates: list[torch.Tensor]) -> None:
    """One Adam step of each parameter float32[R, ...] (in place) along its gradient, at its ``rates`` entry,
    float32[R] (each run's rate): torch's arithmetic, each state (``RunAdam.state_of``) moved on. Foreach
    operations, so that compiled for a GPU the step is a few kernels for all the parameters, not a few each;
    on a CPU they run tensor by tensor, the same arithmetic as one parameter at a time."""
    if not parameters:
        return
    beta1, beta2 = BETAS
    steps = [state["step"] for state in states]
    exp_avgs, exp_avg_sqs = [state["exp_avg"] for state in states], [state["exp_avg_sq"] for state in states]
    torch._foreach_add_(steps, 1)
    torch._foreach_lerp_(exp_avgs, gradients, 1 - beta1)
    torch._foreach_mul_(exp_avg_sqs, beta2)
    torch._foreach_addcmul_(exp_avg_sqs, gradients, gradients, value=1 - beta2)
    first_corrections = [1 - beta1 ** step for step in steps]
    second_corrections = [(1 - beta2 ** step).sqrt() for step in steps]
    step_sizes = [rate.reshape(-1, *(1,) * (parameter.dim() - 1)) / correction
                  for rate, parameter, correction in zip(rates, parameters, first_corrections)]
    denominators = torch._foreach_div(torch._foreach_sqrt(exp_avg_sqs), second_corrections)
    torch._foreach_add_(denominators, EPS)
    torch._foreach_sub_(parameters, torch._foreach_div(torch._foreach_mul(step_sizes, exp_avgs), denominators))
