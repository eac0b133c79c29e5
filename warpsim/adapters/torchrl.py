"""TorchRL adapter: a whole warpsim batch as one TorchRL environment of batch size [E].

Agents are grouped by role, as TorchRL's multi-agent environments do; with G a role
name, n_G its number of agents, D its observation size and A its action components (each
role's own, ``EnvSpec.observation_size_of`` and ``action_size_of``):

* ``(G, "observation")``  float32[E, n_G, D] (bfloat16 where ``EnvSpec.observation_dtype`` says so)
* ``(G, "action")``       int32[E, n_G] (``Categorical``) when A == 1, else
  int32[E, n_G, A] (``MultiCategorical``, one index per component); continuous actions
  (``EnvSpec.action_bounds``) float32[E, n_G, A] (``Bounded`` by each component's bounds)
* ``(G, "reward")``       float32[E, n_G, 1]
* ``"done"``, ``"terminated"``, ``"truncated"``  bool[E, 1], per environment

Episode ends. ``Environment.step()`` resets finished environments at once, which would
put the first observation of the next episode where TorchRL expects the last one of the
episode that ended. The adapter steps with ``auto_reset=False`` instead, so
``("next", ...)`` holds the true final observation, and resets the environments that
TorchRL names in ``"_reset"`` (``rollout`` and the collectors do so after every step that
ends an episode). ``"terminated"`` is the environment's ``terminated`` flag (an end by
its rules, ``Environment.game_over()``); ``"truncated"`` is every other end (a time limit).
"""

from __future__ import annotations

import torch

from warpsim.environment import Environment
from warpsim.errors import InvalidTypeError, InvalidValueError
from warpsim.extras import install_hint
from warpsim.kernels.random import random_key
from warpsim.roles import Role, roles_of

try:
    from tensordict import TensorDict, TensorDictBase
    from torchrl.data import Bounded, Categorical, Composite, MultiCategorical, Unbounded
    from torchrl.envs import EnvBase
except ImportError as error:
    raise ImportError(f"the TorchRL adapter needs torchrl: {install_hint('torchrl')}") from error

DONE_KEYS = ("done", "terminated", "truncated")


class TorchRLEnv(EnvBase):
    """Wraps a warpsim ``Environment`` as a TorchRL ``EnvBase`` (see the module docstring).

    The data stays on ``env.device``. Actions are copied once per step into
    ``env.actions``; observations, rewards and done flags are returned as copies of the
    environment's buffers, because TorchRL keeps every step's tensordict (``rollout``,
    collectors, replay buffers) and the next step overwrites the buffers in place.
    """

    def __init__(self, env: Environment):
        if not isinstance(env, Environment):
            raise InvalidTypeError(f"TorchRLEnv wraps a warpsim.Environment (e.g. warpsim.make(...)), got {env!r}")
        super().__init__(device=env.device, batch_size=torch.Size([env.num_envs]))
        self.env = env
        self.roles = roles_of(env.spec, env.device)
        clashes = [role.name for role in self.roles if role.name in (*DONE_KEYS, "_reset")]
        if clashes:
            raise InvalidValueError(f"role name(s) {clashes} of {type(env).__name__} clash with TorchRL's keys "
                             f"{', '.join(DONE_KEYS)}, _reset; rename the roles")
        self._make_specs()

    def _make_specs(self) -> None:
        spec, e, device = self.env.spec, self.env.num_envs, self.device  # TorchRL's form: 'cuda:0', not 'cuda'

        def group(n: int, **entries) -> Composite:
            return Composite(entries, shape=(e, n), device=device)

        def action(role: str, n: int):
            """The role's own action components (``EnvSpec.action_size_of``)."""
            if spec.continuous_of(role):
                low, high = torch.tensor(spec.action_bounds_of(role), dtype=torch.float32).T
                return Bounded(low.expand(e, n, -1), high.expand(e, n, -1), shape=(e, n, len(low)),
                               dtype=torch.float32, device=device)
            levels = spec.action_levels_of(role)
            if len(levels) == 1:
                return Categorical(levels[0], shape=(e, n), dtype=torch.int32, device=device)
            return MultiCategorical(levels, shape=(e, n, len(levels)), dtype=torch.int32, device=device)

        self.full_observation_spec = Composite(
            {r.name: group(r.count, observation=Unbounded((e, r.count, r.observation_size),
                                                          dtype=self.env.observations.dtype, device=device))
             for r in self.roles}, shape=(e,), device=device)
        self.full_action_spec = Composite(
            {r.name: group(r.count, action=action(r.name, r.count)) for r in self.roles}, shape=(e,), device=device)
        self.full_reward_spec = Composite(
            {r.name: group(r.count, reward=Unbounded((e, r.count, 1), dtype=torch.float32, device=device))
             for r in self.roles}, shape=(e,), device=device)
        self.full_done_spec = Composite(
            {key: Categorical(2, shape=(e, 1), dtype=torch.bool, device=device) for key in DONE_KEYS},
            shape=(e,), device=device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        env = self.env
        for role in self.roles:
            action = tensordict.get((role.name, "action"))
            # Categorical drops the component
            one_index = not env.spec.continuous_of(role.name) and env.spec.action_size_of(role.name) == 1
            role.write(env.actions, action.unsqueeze(-1) if one_index else action)
        env.step(auto_reset=False)
        done = env.done.unsqueeze(-1)
        terminated = env.terminated.unsqueeze(-1)
        return self._output(done.clone(), terminated.clone(), done & ~terminated, rewards=True)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs) -> TensorDictBase:
        env = self.env
        reset = None if tensordict is None else tensordict.get("_reset", None)
        if reset is None:
            env.reset()
        else:
            env.reset(reset.reshape(env.num_envs))
        not_done = torch.zeros((env.num_envs, 1), dtype=torch.bool, device=env.device)
        return self._output(not_done, not_done.clone(), not_done.clone(), rewards=False)

    def _output(self, done: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor,
                rewards: bool) -> TensorDictBase:
        env = self.env
        groups = {}
        for role in self.roles:
            entries = {"observation": _fresh(role.observed(env.observations, 1), role)}
            if rewards:
                entries["reward"] = _fresh(role.of(env.rewards), role).unsqueeze(-1)
            groups[role.name] = TensorDict(entries, batch_size=(env.num_envs, role.count), device=self.device)
        return TensorDict({**groups, "done": done, "terminated": terminated, "truncated": truncated},
                          batch_size=self.batch_size, device=self.device)

    def _set_seed(self, seed: int | None) -> None:
        """Gives the environment a new seed: the next reset starts as ``warpsim.make(..., seed=seed)``
        would. ``None`` keeps the current seed."""
        if seed is None:
            return
        self.env.seed = random_key(seed, self.env.streams)
        self.env.state.episode.zero_()


def _fresh(part: torch.Tensor, role: Role) -> torch.Tensor:
    """``part`` as a tensor of its own: a contiguous role's part is a view, which gets copied."""
    return part.clone() if isinstance(role.agents, slice) else part
