"""warpsim.load_policy: a run's trained role acts from Python as it acts in evaluation, batched or for one
agent, with its observation history kept."""

from typing import Any

import numpy as np
import pytest
import torch

import warpsim
from warpsim.analysis.evaluate import load_run
from warpsim.analysis.play import Player
from warpsim.errors import InvalidTypeError, InvalidValueError, UnavailableError
from warpsim.roles import roles_of
from warpsim.train import TrainConfig
from warpsim.train.loop import train

GRID: dict[str, Any] = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=12),
            num_envs=4, rollout_steps=8, backend="numpy", iterations=2, opponents={"runner": "random"})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Taggers that saw their last two observations at once; runners at random."""
    run = tmp_path_factory.mktemp("policy") / "run"
    train(TrainConfig(**GRID, stack_observations=2), run, progress=None)
    return run


def test_a_loaded_policy_acts_as_the_run_plays_greedily(run):
    """Step for step over an episode, the actions the evaluation's Player writes for the taggers."""
    env, policies, _ = load_run(run, 4, backend="numpy", seed=3)
    player = Player(env, policies, greedy=True, random_roles=("runner",), stack_observations=2, seed=3)
    taggers = next(role for role in roles_of(env.spec, env.device) if role.name == "tagger")
    policy = warpsim.load_policy(run, "tagger")
    player.reset()
    policy.reset()
    steps = 0
    while not env.done.any():  # up to the first end of an episode, after which the histories restart per row
        expected = policy.act(taggers.of(env.observations))
        player.step()
        assert torch.equal(taggers.of(env.actions), expected)
        steps += 1
    assert steps >= 3


def test_one_agent_or_a_batch_numpy_or_torch_give_the_same_actions_in_the_input_s_kind(tmp_path):
    train(TrainConfig(**GRID), tmp_path / "run", progress=None)
    policy = warpsim.load_policy(tmp_path / "run", "tagger")
    observations = np.random.default_rng(0).uniform(-1, 1, (6, policy.observation_size)).astype(np.float32)
    batch = policy.act(observations)
    assert isinstance(batch, np.ndarray) and batch.dtype == np.int32 and batch.shape == (6, 1)
    assert all(np.array_equal(policy.act(row), batch[index]) for index, row in enumerate(observations))
    as_tensor = policy.act(torch.from_numpy(observations).to(torch.bfloat16).float())
    assert isinstance(as_tensor, torch.Tensor) and as_tensor.dtype == torch.int32
    assert policy.act(observations.reshape(2, 3, -1)).shape == (2, 3, 1)
    assert policy.act(observations.tolist()).shape == (6, 1)
    assert ((0 <= policy.act(observations, greedy=False)) & (policy.act(observations, greedy=False) < 5)).all()


def test_the_history_is_per_row_and_restarts_with_reset(run):
    policy = warpsim.load_policy(run, "tagger")
    size = policy.observation_size
    first, second = torch.zeros(3, size), torch.ones(3, size)
    policy.act(first)
    policy.act(second)
    assert policy._history is not None
    assert torch.equal(policy._history, torch.cat([second, first], dim=-1)), "the newest observation first"
    with pytest.raises(InvalidValueError, match=r"observations of shape \(2, \d+\) follow a batch of \(3,\) rows; "
                                                r".*call reset\(\) when an episode starts"):
        policy.act(torch.zeros(2, size))
    policy.reset()
    policy.act(second)
    assert policy._history is not None and torch.equal(policy._history, torch.cat([second, second], dim=-1))


def test_reset_with_a_mask_restarts_the_rows_whose_episodes_start(run):
    """A batch whose episodes end at different steps: only the masked rows start their history anew."""
    policy = warpsim.load_policy(run, "tagger")
    size = policy.observation_size
    first, second, third = (torch.full((3, size), value) for value in (0.0, 1.0, 2.0))
    policy.act(first)
    policy.act(second)
    policy.reset(np.array([False, True, False]))
    policy.act(third)
    expected = torch.cat([third, second], dim=-1)
    expected[1] = torch.cat([third[1], third[1]])
    assert policy._history is not None and torch.equal(policy._history, expected)
    with pytest.raises(InvalidValueError, match=r"reset\(mask\) got a mask of shape \(2,\); the batch has rows \(3,\)"):
        policy.reset(torch.ones(2, dtype=torch.bool))
    with pytest.raises(InvalidTypeError, match=r"reset\(mask\) takes a bool mask of rows; got dtype torch.int64"):
        policy.reset(np.array([0, 1, 0]))


@pytest.mark.parametrize("call, error, message", [
    (lambda run: warpsim.load_policy(run, "walker"), InvalidValueError,
     r"'walker' is not a role of tag_gridworld, .*; its roles: tagger, runner"),
    (lambda run: warpsim.load_policy(run, "runner"), InvalidValueError,
     r"runner played uniformly at random in the run of .*: it has no trained policy; trained roles: tagger"),
    (lambda run: warpsim.load_policy(run, "tagger", device="tpu"), InvalidValueError,
     r"device='tpu' is not allowed; give 'cpu', 'cuda', 'cuda:N' or 'auto'"),
    (lambda run: warpsim.load_policy(run, "tagger").act(np.zeros(3, np.float32)), InvalidValueError,
     r"tagger policy: observations have shape \(3,\); give float\[..., \d+\]"),
    (lambda run: warpsim.load_policy(run, "tagger").act(np.zeros((2, 9), np.float32)), InvalidValueError,
     r"observations have shape \(2, 9\)"),
    (lambda run: warpsim.load_policy(run, "tagger").act(np.zeros((2, 9), np.int64)), InvalidTypeError,
     r"tagger policy: observations have dtype torch.int64; give floats"),
    (lambda run: warpsim.load_policy(run, "tagger").act(np.zeros((2, 9), bool)), InvalidTypeError,
     r"observations have dtype torch.bool; give floats"),
    (lambda run: warpsim.load_policy(run, "tagger").act(np.zeros((2, 9), np.complex64)), InvalidTypeError,
     r"observations have dtype torch.complex64; give floats"),
    (lambda run: warpsim.load_policy(run, "tagger").act(torch.zeros(2, 9, device="meta")), InvalidValueError,
     r"tagger policy: observations are on the meta device, which holds no values"),
    (lambda run: (policy := warpsim.load_policy(run, "tagger")).act(np.full(policy.observation_size, np.nan)),
     InvalidValueError, r"tagger policy: observations hold NaN or an infinity; give finite values"),
    (lambda run: warpsim.load_policy(None, "tagger"), InvalidTypeError,  # type: ignore[arg-type]
     r"^load_policy: source=None is not allowed; give a run directory or a checkpoint file, as a path$"),
    (lambda run: warpsim.load_policy(run, 3), InvalidTypeError,  # type: ignore[arg-type]
     r"load_policy: role=3 is not allowed"),
    (lambda run: warpsim.load_policy(run, "tagger", seed=2**64), InvalidValueError,
     r"^seed=18446744073709551616 is not allowed; give an integer in \[0, 4294967295\]$"),
    (lambda run: warpsim.load_policy(run, "tagger").act(torch.zeros(2, 1, dtype=torch.int32)), InvalidTypeError,
     r"tagger policy: observations have dtype torch.int32; give floats"),
    (lambda run: warpsim.load_policy(run, "tagger").act("obs"), InvalidTypeError,
     r"observations of type str cannot be read as float"),
])
def test_mistakes_are_one_line_errors(run, call, error, message):
    with pytest.raises(error, match=message):
        call(run)


def test_a_gpu_is_asked_for_only_where_there_is_one(run):
    if torch.cuda.is_available():
        assert warpsim.load_policy(run, "tagger", device="cuda").device.type == "cuda"
    else:
        with pytest.raises(UnavailableError, match=r"device='cuda': no CUDA GPU is visible here; give device='cpu'"):
            warpsim.load_policy(run, "tagger", device="cuda")


@pytest.mark.gpu
def test_a_run_trained_on_the_gpu_acts_on_the_cpu(tmp_path):
    train(TrainConfig(**{**GRID, "backend": "cuda"}), tmp_path / "run", progress=None)
    policy = warpsim.load_policy(tmp_path / "run", "tagger")
    assert policy.device.type == "cpu" and all(p.device.type == "cpu" for p in policy.network.parameters())
    gpu = warpsim.load_policy(tmp_path / "run", "tagger", device="cuda")
    observations = torch.rand(8, policy.observation_size)
    assert torch.equal(policy.act(observations), gpu.act(observations.cuda()).cpu())
