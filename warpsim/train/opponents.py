"""Roles that do not learn: uniformly random players and policies frozen from another run.

``TrainConfig.opponents`` maps a role name to ``"random"`` (every action component drawn
uniformly) or ``"checkpoint:RUN_DIR"`` (that run's policy for the role, never updated).
Roles not named learn by self-play. The trainer runs no optimizer over an opponent's
network and takes no gradient through it; ``warpsim evaluate`` and ``warpsim render``
play a run's random roles at random again, and its frozen ones from its own checkpoint.
"""

from __future__ import annotations

from pathlib import Path

import torch

from warpsim.actions import RandomActions
from warpsim.environment import Environment
from warpsim.errors import InvalidValueError, RunFileError
from warpsim.roles import Role
from warpsim.train import checkpoint

RANDOM = "random"
CHECKPOINT = "checkpoint:"
SELF_PLAY = "self"
KINDS = f"{RANDOM!r}, '{CHECKPOINT}RUN_DIR' (a frozen policy from another run) or {SELF_PLAY!r} (learn)"


def check_kind(role: str, kind: object) -> None:
    """Raises InvalidValueError unless ``kind`` is an opponent kind (roles are checked against an environment later)."""
    if not isinstance(role, str) or not role:
        raise InvalidValueError(f"opponent role {role!r} is not allowed; give a role name, e.g. runner")
    if isinstance(kind, str) and (kind == RANDOM or (kind.startswith(CHECKPOINT) and len(kind) > len(CHECKPOINT))):
        return
    raise InvalidValueError(f"opponent {role}={kind!r} is not allowed; choose {KINDS}")


def parse_setting(text: str) -> tuple[str, str]:
    """``ROLE=KIND`` from the command line (``--opponent runner=random``)."""
    role, sep, kind = text.partition("=")
    if not sep or not role:
        raise InvalidValueError(f"--opponent {text!r}: expected ROLE=KIND with KIND {KINDS}")
    if kind != SELF_PLAY:
        check_kind(role, kind)
    return role, kind


def random_roles(opponents: dict) -> tuple[str, ...]:
    """The roles that play uniformly at random."""
    return tuple(role for role, kind in opponents.items() if kind == RANDOM)


def check_roles(opponents: dict, env: Environment, role_names: list[str]) -> None:
    """Raises InvalidValueError for a role the environment does not have, or when no role is left to learn."""
    unknown = sorted(set(opponents) - set(role_names))
    if unknown:
        raise InvalidValueError(f"opponent role(s) {', '.join(unknown)} are not roles of {env.display_name}; "
                                f"its roles: {', '.join(role_names)}")
    if set(role_names) <= set(opponents):
        raise InvalidValueError(f"every role of {env.display_name} is an opponent ({', '.join(role_names)}); "
                                f"leave at least one to learn")


def frozen_network_state(role: str, kind: str, env: Environment, role_names: list[str], shapes: dict) -> dict:
    """The state dict of ``role``'s network in the run named by ``kind`` ('checkpoint:RUN_DIR').

    ``shapes`` holds this run's settings that shape a network (stack_observations,
    hidden_size, ...), which the other run's must equal.
    """
    source = Path(kind[len(CHECKPOINT):])
    if not source.exists():
        raise RunFileError(f"opponent {role}={kind!r}: {source} does not exist; give a run directory "
                           f"or a {checkpoint.FILE_NAME} file")
    saved = checkpoint.load(source)
    checkpoint.check_compatible(saved, env, saved["path"])
    config = saved["config"]
    different = [f"{name} {config[name]!r} there, {value!r} here" if name in config
                 else f"{name} not recorded there (a run of an earlier warpsim), {value!r} here"
                 for name, value in shapes.items() if config.get(name) != value]
    if different:
        raise InvalidValueError(f"opponent {role}={kind!r}: its network has another shape ({'; '.join(different)})")
    if config.get("opponents", {}).get(role) == RANDOM:
        raise InvalidValueError(f"opponent {role}={kind!r}: that run did not train {role} (it played at random)")
    prefix = f"networks.{role_names.index(role)}."
    return {key[len(prefix):]: value for key, value in saved["policies"].items() if key.startswith(prefix)}


def write_random_actions(roles: list[Role], actions: torch.Tensor, random_actions: RandomActions,
                         generator: torch.Generator) -> None:
    """Writes uniformly random actions of every role of ``roles`` into ``actions`` [E, N, A], in order."""
    for role in roles:
        role.write(actions, random_actions((actions.shape[0], role.count), generator, role.name))
