"""What training allocates, estimated before anything is: the environments, the rollout
storage, the update's temporaries, the networks and the optimizer.

The estimate errs high (activations are counted for the forward and the backward pass
of every layer, and roles that do not learn are stored as if they did); training is
refused with a DoesNotFitError when it exceeds 90% of the memory free where it runs.
"""

from __future__ import annotations

import math
from collections import Counter

from warpsim.device import Placement, available_bytes
from warpsim.environment import EnvSpec
from warpsim.errors import DoesNotFitError
from warpsim.train import fused_forward
from warpsim.train.config import TrainConfig

FLOAT = 4
"""Bytes of every stored value but bf16 observations: float32 observations, log-probs, values, rewards;
int32 actions."""
SAFETY = 0.9
"""Share of the free memory training may plan to use."""


def network_parameters(input_size: int, outputs: int, hidden_size: int, hidden_layers: int,
                       shared_trunk: bool) -> int:
    """Parameters of one ActorCritic: the hidden layers (twice without a shared trunk), the
    policy head and the value head."""
    count, width = 0, input_size
    for _ in range(hidden_layers):
        count += width * hidden_size + hidden_size
        width = hidden_size
    trunks = 1 if shared_trunk else 2
    return trunks * count + width * (outputs + 1) + outputs + 1


def observation_bytes(precision: str) -> int:
    """Bytes of a stored observation value for networks of the resolved ``precision``: bfloat16
    under bf16 (what their first layer rounds inputs to), float32 otherwise."""
    return 2 if precision == "bf16" else FLOAT


def training_bytes(config: TrainConfig, spec: EnvSpec, env_bytes_per_env: int, precision: str = "fp32") -> int:
    """Bytes one process's training allocates with ``config`` on an environment of ``spec``, for
    networks of the resolved ``precision``."""
    e, t = config.num_envs, config.rollout_steps
    n, d = spec.num_agents, spec.observation_size * config.stack_observations
    # continuous actions: a mean and a log standard deviation per component (the widest role's, an upper bound)
    a = spec.action_size
    outputs = max(2 * spec.action_size_of(role) if spec.continuous_of(role) else sum(spec.action_levels_of(role))
                  for role in spec.role_names)
    width = max(d, config.hidden_size * config.hidden_layers, outputs)
    samples = t * e * n
    # observations, actions, log-probs, values, rewards; under bf16 the fused path stores the inputs' rows padded
    # as its kernels read them (counted so even where it is off)
    stored = fused_forward.aligned_size(d) if precision == "bf16" else d
    rollout = samples * (observation_bytes(precision) * stored + FLOAT * (a + 3)) + t * e * FLOAT
    # advantages, returns, the critic's targets in its own units and an epoch's shuffle (int64); then the
    # roles' minibatches together: their copies and activations
    most = t * e * max(Counter(spec.agent_roles).values())
    minibatch = math.ceil(samples / config.minibatch_count(most))
    update = samples * (FLOAT * 4 + 8) + 2 * minibatch * FLOAT * (d + a + 4 + 4 * width)
    collect = e * n * FLOAT * (d + 4 * width)  # one step's inputs and activations
    networks = len(spec.role_names) * network_parameters(d, outputs, config.hidden_size, config.hidden_layers,
                                                         config.shared_trunk)
    return e * env_bytes_per_env + rollout + update + collect + networks * FLOAT * 4  # weights, grads, Adam moments


def check_training_fits(config: TrainConfig, spec: EnvSpec, env_bytes_per_env: int, placement: Placement,
                        precision: str = "fp32", runs: int = 1) -> None:
    """Raises DoesNotFitError, naming the settings to lower, when training ``runs`` runs together would not fit."""
    per_run = training_bytes(config, spec, env_bytes_per_env, precision)
    needed = runs * per_run
    free = available_bytes(placement)
    if needed > SAFETY * free and runs > 1:
        fitting = int(SAFETY * free // per_run)
        raise DoesNotFitError(
            f"{runs} runs of {config.env} with num_envs={config.num_envs} and rollout_steps={config.rollout_steps} "
            f"together need about {needed / 2**30:.3g} GiB, but only {free / 2**30:.2f} GiB is free on "
            f"{placement.torch_device} (at most {SAFETY:.0%} may be used); "
            + (f"at most {fitting} of them fit at once: give fewer seeds or sweep values" if fitting else
               "not even one fits: lower num_envs or rollout_steps"))
    if needed > SAFETY * free:
        raise DoesNotFitError(
            f"training {config.env} with num_envs={config.num_envs}, rollout_steps={config.rollout_steps} and "
            f"{spec.num_agents} agents of {spec.observation_size * config.stack_observations} inputs needs about "
            f"{needed / 2**30:.3g} GiB (environments, rollout storage, update, networks and optimizer), but only "
            f"{free / 2**30:.2f} GiB is free on {placement.torch_device} (at most {SAFETY:.0%} may be used); "
            f"lower num_envs or rollout_steps")


def fitting_rollout_steps(config: TrainConfig, spec: EnvSpec, env_bytes_per_env: int, placement: Placement,
                          precision: str = "fp32") -> int:
    """The longest rollout, at most ``config.rollout_steps``, whose training fits; 0 if none does."""
    free = SAFETY * available_bytes(placement)
    steps = config.rollout_steps
    while steps >= 1:
        trial = TrainConfig(**{**config.to_dict(), "rollout_steps": steps})
        if training_bytes(trial, spec, env_bytes_per_env, precision) <= free:
            return steps
        steps //= 2
    return 0
