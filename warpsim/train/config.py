"""The trainer's configuration: a frozen dataclass, one documented field per setting.

Settings come, later ones winning, from the defaults, a named preset, a config file
(JSON, or TOML) and the command line; a run writes the resolved result to
``config.json`` in its run directory.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from warpsim.device import BACKENDS
from warpsim.errors import InvalidValueError, RunFileError, WarpsimError
from warpsim.train import fused_backward, opponents
from warpsim.validation import check_fields, not_allowed, require_bool, require_choice, require_int, require_real

if sys.version_info >= (3, 11):
    import tomllib
else:  # tomllib is new in Python 3.11; tomli is the same parser (a dependency on 3.10)
    import tomli as tomllib

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
GRAPHS = ("auto", "on", "off")
MAX_SEED = 2**32 - 1
"""The largest seed: environments draw from 32-bit streams (warpsim.kernels.random)."""
COMPILE_SETTINGS = ("auto", "on", "off")
GRADIENT_KERNELS = ("auto", "on", "off", "loss")
LR_SCHEDULES = ("kl", "linear", "constant")
POLICY_HEADS = ("gaussian", "tanh_normal")
MAX_ENV_STEPS = 10**12
"""Most environment steps one run may ask for (iterations x rollout_steps x num_envs): more would
take days on any device, so such a figure is a mistake, refused rather than run until killed."""
WORK_FIELDS = ("num_envs", "iterations", "rollout_steps", "stagger_steps")
"""The fields whose product with each other is a run's environment steps."""
MAX_DEVICE_INDEX = 127
"""Largest N of cuda:N that torch can hold (its device index is 8 bits)."""
CONFIG_FIELD = "config field {}"
"""How a message names a field."""


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run depends on (see the field docs)."""

    env: str = "tag_continuous"
    """Environment id, e.g. tag_continuous, tag_gridworld, or package.module:Class."""
    env_params: dict = field(default_factory=dict)
    """Environment parameters by name; the ones not given keep the environment's defaults."""
    opponents: dict = field(default_factory=dict)
    """Roles that do not learn, by name: 'random' (uniform play) or 'checkpoint:RUN_DIR' (frozen); others self-play."""
    num_envs: int = 64
    """Environments each process steps together (E)."""
    backend: str = "auto"
    """Where the environments run: auto (cuda when a GPU is there), cuda or numpy."""
    policy_device: str = "auto"
    """Where the networks run: auto (the environments' device), cpu, cuda or cuda:N (e.g. numpy environments)."""
    seed: int = 0
    """Seeds the environments, the network initialisation and the action sampling."""
    iterations: int = 100
    """PPO iterations (one rollout and one update each)."""
    rollout_steps: int = 32
    """Steps every environment takes per rollout (T)."""
    epochs: int = 4
    """Passes over each rollout in the update."""
    minibatches: int = 4
    """Shuffled minibatches per pass, at least: each role's samples are split this many ways, or more
    (see minibatch_size)."""
    minibatch_size: int = 32768
    """Most samples of one role in a minibatch: a larger rollout is split into more minibatches, so that
    many environments still make many gradient steps (0: minibatches alone decides)."""
    learning_rate: float = 1e-3
    """Adam step size at the first iteration."""
    lr_schedule: str = "kl"
    """How the step size moves: kl (up or down 1.5x after each epoch towards target_kl, within
    min_learning_rate and max_learning_rate), linear (down to min_learning_rate at the last iteration)
    or constant."""
    target_kl: float = 0.01
    """The approx_kl an epoch of updates aims at under lr_schedule kl."""
    min_learning_rate: float = 1e-5
    """Lowest step size of the kl schedule, and where the linear one ends."""
    max_learning_rate: float = 1e-2
    """Highest step size of the kl schedule."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE lambda: 0 is one-step TD, 1 is the Monte Carlo return."""
    clip_coef: float = 0.2
    """PPO clips the probability ratio to [1 - clip_coef, 1 + clip_coef]."""
    shared_trunk: bool = False
    """One trunk under the policy and value heads, instead of separate actor and critic networks."""
    value_normalization: bool = True
    """The critic learns returns normalised by their running mean and standard deviation."""
    value_clip: float | None = None
    """Clip the value change per update to this much (None: no value clipping)."""
    value_coef: float = 0.5
    """Weight of the value loss."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus."""
    max_grad_norm: float = 0.5
    """Gradients are scaled down to at most this global norm."""
    normalize_advantages: bool = True
    """Normalise advantages to zero mean and unit variance in each minibatch."""
    stagger_steps: int = 0
    """Random-play steps before training, with every environment reset once at a random one of them, so that
    rollouts see every phase of an episode (about the episode length; 0: all environments start together)."""
    stack_observations: int = 1
    """Observations a policy sees at once: the latest and the ones before it (2 shows motion)."""
    hidden_size: int = 64
    """Width of each hidden layer of the networks."""
    hidden_layers: int = 2
    """Hidden layers of the networks."""
    policy_head: str = "gaussian"
    """Continuous actions' distribution: gaussian (a learned log-std per component, the sample clipped to the
    bounds where it is written) or tanh_normal (squashed into the bounds by tanh, its scale from the network);
    discrete actions ignore it."""
    precision: str = "auto"
    """Network precision: auto (bf16 autocast on a GPU of compute capability 8.0 or newer, fp32 on older GPUs and the
    CPU), fp32, bf16, or fp16 (CUDA, gradient scaler)."""
    graphs: str = "auto"
    """Rollouts and updates as replayed CUDA graphs: auto (with CUDA and one process), on (an error without CUDA),
    off."""
    compile: str = "off"
    """The fused path: the rollout's policy step and the update's minibatch step each one torch.compile region
    (the same arithmetic up to rounding; compiled at the first iteration). off: eager, the reference; on (a CPU needs
    a C++ compiler); auto: on with CUDA in one process, but for fp16, and for bf16 on a GPU older than compute
    capability 8.0 (warpsim's bfloat16 kernels need 8.0; on refuses it)."""
    gradient_kernels: str = "auto"
    """On the fused path under bf16, the update's networks and their gradients as warpsim's Triton kernels, which
    read the observations again where autograd keeps every activation. auto: on where the fused path runs on a
    Hopper GPU (H100, H200) with networks of at most two layers 64 wide, where they were measured faster (an H200
    at train-ref: an update of 202 ms against 214, for 6 s more of compiling; docs/training.md); on (needs compile
    on, or auto on a GPU, and bf16); off: the compiled eager networks and autograd. Wider than 64, the first
    layer's gradients take 112 KB of shared memory a block: more than an RTX 30x0, 40x0 or 50x0 has (99 KB), where
    on stops the first update with an error naming this field. loss: on, and PPO's loss computed inside the
    gradients' kernels too, where a minibatch step otherwise runs the networks' forward kernel and the loss's kernels
    before them (discrete actions whose components have equal levels, a trunk each of at most two layers 64 wide;
    not yet timed on a GPU)."""
    log_every: int = 10
    """Iterations between metric reads (the trainer's only host synchronisations) and progress lines."""
    checkpoint_every: int = 50
    """Iterations between checkpoints (one is also written at the end)."""

    def __post_init__(self):
        def need(ok: bool, name: str, allowed: str):
            if not ok:
                raise not_allowed(CONFIG_FIELD.format(name), getattr(self, name), allowed)

        check_fields(self, require_int, ("num_envs", "iterations", "rollout_steps", "epochs", "minibatches",
                                         "stack_observations", "hidden_size", "hidden_layers", "log_every",
                                         "checkpoint_every"), 1, what=CONFIG_FIELD)
        check_fields(self, require_int, ("stagger_steps", "minibatch_size"), 0, what=CONFIG_FIELD)
        check_fields(self, require_int, ("seed",), 0, MAX_SEED, what=CONFIG_FIELD)
        work = (self.iterations * self.rollout_steps + self.stagger_steps) * self.num_envs
        if work > MAX_ENV_STEPS:  # named after the field furthest above its default, the likely slip
            largest = max(WORK_FIELDS, key=lambda name: getattr(self, name) // max(1, getattr(TrainConfig, name)))
            made = f"{work:.3g}" if work < 1e300 else f"about 1e{len(str(work)) - 1}"
            need(False, largest, f"a run's (iterations x rollout_steps + stagger_steps) x num_envs environment steps "
                                 f"must be at most {MAX_ENV_STEPS:.0e}, and these settings make {made}")
        check_fields(self, require_real, ("learning_rate", "max_grad_norm", "clip_coef"), 0, low_exclusive=True,
                     what=CONFIG_FIELD)
        check_fields(self, require_real, ("target_kl", "max_learning_rate"), 0, low_exclusive=True, what=CONFIG_FIELD)
        check_fields(self, require_real, ("min_learning_rate",), 0, what=CONFIG_FIELD)
        check_fields(self, require_real, ("gamma", "gae_lambda"), 0, 1, what=CONFIG_FIELD)
        check_fields(self, require_real, ("value_coef", "entropy_coef"), 0, what=CONFIG_FIELD)
        if self.value_clip is not None:
            check_fields(self, require_real, ("value_clip",), 0, low_exclusive=True, what=CONFIG_FIELD)
        check_fields(self, require_bool, ("shared_trunk", "value_normalization", "normalize_advantages"),
                     what=CONFIG_FIELD)
        check_fields(self, require_choice, ("lr_schedule",), LR_SCHEDULES, what=CONFIG_FIELD)
        check_fields(self, require_choice, ("policy_head",), POLICY_HEADS, what=CONFIG_FIELD)
        if self.lr_schedule != "constant":
            need(self.min_learning_rate <= self.learning_rate, "min_learning_rate",
                 f"give at most learning_rate ({self.learning_rate})")
        if self.lr_schedule == "kl":
            need(self.min_learning_rate > 0, "min_learning_rate", "give a rate > 0: the kl schedule multiplies it")
            need(self.learning_rate <= self.max_learning_rate, "max_learning_rate",
                 f"give at least learning_rate ({self.learning_rate})")
        check_fields(self, require_choice, ("precision",), PRECISIONS, what=CONFIG_FIELD)
        check_fields(self, require_choice, ("graphs",), GRAPHS, what=CONFIG_FIELD)
        check_fields(self, require_choice, ("compile",), COMPILE_SETTINGS, what=CONFIG_FIELD)
        check_fields(self, require_choice, ("gradient_kernels",), GRADIENT_KERNELS, what=CONFIG_FIELD)
        if self.gradient_kernels in ("on", "loss"):
            need(self.compile != "off" and self.precision in ("auto", "bf16"), "gradient_kernels",
                 f"{self.gradient_kernels} needs the fused path under bf16, and this config has compile="
                 f"{self.compile!r}, precision={self.precision!r}: set compile='on' (or 'auto' on a GPU) and "
                 f"precision='bf16', or gradient_kernels 'auto' or 'off'")
        if self.gradient_kernels == "loss":
            need(not self.shared_trunk and fused_backward.whole_trunks_fit(self.hidden_size, self.hidden_layers),
                 "gradient_kernels", f"loss needs a trunk each of at most two layers "
                 f"{fused_backward.WHOLE_TRUNK_HIDDEN} wide, and this config has shared_trunk={self.shared_trunk}, "
                 f"hidden_size={self.hidden_size}, hidden_layers={self.hidden_layers}: change those, or set "
                 f"gradient_kernels 'on'")
        check_fields(self, require_choice, ("backend",), BACKENDS, what=CONFIG_FIELD)
        need(is_policy_device(self.policy_device), "policy_device",
             f"choose auto, cpu, cuda or cuda:N (N in [0, {MAX_DEVICE_INDEX}], no leading zero)")
        need(isinstance(self.env, str) and bool(self.env), "env", "give an environment id or package.module:Class")
        need(isinstance(self.env_params, dict) and all(isinstance(k, str) for k in self.env_params),
             "env_params", "give a mapping of parameter names to values")
        need(isinstance(self.opponents, dict), "opponents", "give a mapping of role names to opponent kinds")
        for role, kind in self.opponents.items():
            opponents.check_kind(role, kind)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def minibatch_count(self, most_samples: int) -> int:
        """Minibatches per pass when the learning role with the most samples has ``most_samples``."""
        by_size = -(-most_samples // self.minibatch_size) if self.minibatch_size else 0
        return max(self.minibatches, by_size)


def is_policy_device(value) -> bool:
    """Whether ``value`` names a policy device: auto, cpu, cuda or cuda:N, N written as torch reads it
    (no leading zero) and within its device index (at most 127)."""
    if not isinstance(value, str):
        return False
    if value in ("auto", "cpu", "cuda"):
        return True
    index = re.fullmatch(r"cuda:(0|[1-9][0-9]{0,2})", value)
    return index is not None and int(index[1]) <= MAX_DEVICE_INDEX


def field_names() -> list[str]:
    return [f.name for f in dataclasses.fields(TrainConfig)]


def field_docs(cls: type = TrainConfig) -> dict[str, str]:
    """The docstring under each field of a dataclass, by field name (for --help)."""
    (definition,) = ast.parse(inspect.getsource(cls)).body
    assert isinstance(definition, ast.ClassDef)
    body = definition.body
    docs = {}
    for statement, following in zip(body, body[1:]):
        if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str)):
            docs[statement.target.id] = following.value.value
    return docs


def build_config(*layers: dict) -> TrainConfig:
    """A TrainConfig from mappings of settings, later layers winning; ``env_params`` and
    ``opponents`` merge (an opponent 'self' removes the role from the opponents).

    Unknown fields raise ValueError naming them and the valid ones.
    """
    settings: dict = {}
    env_params: dict = {}
    opponent_kinds: dict = {}
    valid = field_names()
    for layer in layers:
        unknown = sorted(set(layer) - set(valid))
        if unknown:
            raise InvalidValueError(f"unknown config field(s) {', '.join(unknown)}; valid: {', '.join(valid)}")
        if "env" in layer and not (isinstance(layer["env"], str) and layer["env"] == settings.get("env", layer["env"])):
            env_params = {}  # another environment's parameters do not carry over
        for name, example in (("env_params", '{"num_runners": 10}'), ("opponents", '{"runner": "random"}')):
            if layer.get(name) is not None and not isinstance(layer[name], dict):
                raise not_allowed(CONFIG_FIELD.format(name), layer[name], f"give a mapping, e.g. {example}")
        settings.update(layer)
        env_params.update(layer.get("env_params") or {})
        opponent_kinds.update(layer.get("opponents") or {})
    settings["env_params"] = env_params
    settings["opponents"] = {role: kind for role, kind in opponent_kinds.items()
                             if not (isinstance(kind, str) and kind == opponents.SELF_PLAY)}
    return TrainConfig(**settings)


def read_config_file(path: Path) -> dict:
    """Settings from a JSON or TOML file (by its suffix)."""
    path = Path(path)
    if path.is_dir():
        raise RunFileError(f"config file {path} is a directory; give a .json or .toml file")
    if not path.is_file():
        raise RunFileError(f"config file {path} does not exist")
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise RunFileError(f"config file {path} is not text (UTF-8); give a .json or .toml file") from None
    try:
        if path.suffix == ".toml":
            settings = tomllib.loads(text)
        elif path.suffix == ".json":
            settings = json.loads(text)
        else:
            raise RunFileError(f"config file {path}: unknown suffix {path.suffix!r}; use .json or .toml")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as error:
        raise RunFileError(f"config file {path} cannot be read: {error}") from None
    if not isinstance(settings, dict):
        raise RunFileError(f"config file {path} must hold a table of settings, not {type(settings).__name__}")
    return settings


EARLIER_DEFAULTS = dict(shared_trunk=True, value_normalization=False, minibatch_size=0, min_learning_rate=0.0,
                       stagger_steps=0)
"""What a run saved before these fields existed was trained with."""


def build_saved_config(settings: dict) -> TrainConfig:
    """The config of a run from its saved settings; a run saved before the networks and
    schedules of today keeps those it was trained with (``EARLIER_DEFAULTS``, and
    ``anneal_lr`` read as the linear or constant schedule); one saved with ``compile_loss``
    (before ``compile``) continues eagerly, as it was trained, and one saved with ``gradient_kernels`` True or
    False (before 'auto') continues with them 'on' or 'off'."""
    if isinstance(settings, dict) and "compile_loss" in settings:
        settings = {**{key: value for key, value in settings.items() if key != "compile_loss"}, "compile": "off"}
    if isinstance(settings, dict) and isinstance(settings.get("gradient_kernels"), bool):
        settings = {**settings, "gradient_kernels": "on" if settings["gradient_kernels"] else "off"}
    if not isinstance(settings, dict) or "lr_schedule" in settings or "anneal_lr" not in settings:
        return build_config(settings)
    earlier = {key: value for key, value in settings.items() if key != "anneal_lr"}
    schedule = "linear" if settings["anneal_lr"] else "constant"
    return build_config({**EARLIER_DEFAULTS, "lr_schedule": schedule}, earlier)


def saved_config(checkpoint: dict) -> TrainConfig:
    """The config a loaded checkpoint was trained with; a RunFileError naming the file when unusable."""
    try:
        return build_saved_config(checkpoint["config"])
    except (WarpsimError, TypeError) as error:
        raise RunFileError(f"checkpoint {checkpoint['path']} holds an unusable config: {error}") from None
