"""Every integer option takes NumPy integers (``np.int64(2)``, as NumPy arithmetic returns them) like
Python ints, and refuses a bool or a value out of range: all go through ``validation.require_int``."""

import numpy as np
import pytest

import warpsim
from warpsim.analysis.render import write_gif
from warpsim.bench.peers import taggers_and_runners
from warpsim.bench.policy_tiers import run_policy_tier
from warpsim.bench.runner import run_sim
from warpsim.bench.sweeps import NAMED_SWEEPS
from warpsim.check import check
from warpsim.configs import BenchConfig
from warpsim.errors import InvalidValueError


def beacon(num_envs=2):
    return warpsim.make("beacon", num_envs, backend="numpy", num_agents=2, episode_length=2)


def test_the_environment_and_its_runtime_options_take_numpy_integers():
    env = beacon(np.int64(2))
    assert env.num_envs == 2 and type(env.num_envs) is int
    env.check_every = np.int64(3)
    assert env.check_every == 3 and type(env.check_every) is int
    graph = env.graph(steps=np.int32(2))
    assert graph.steps == 2 and type(graph.steps) is int
    graph.replay()
    assert check("beacon", np.int64(1), steps=np.int64(2), num_agents=2).steps == 2


def test_benchmark_options_take_numpy_integers():
    config = BenchConfig("beacon", np.int64(1), dict(num_agents=2))
    assert config.num_envs == 1 and type(config.num_envs) is int
    record = run_sim(config, backend="numpy", steps=np.int64(1), repeats=np.int64(1), warmup_steps=np.int64(1))
    assert record["steps_per_repeat"] == 1 and record["repeats"] == 1
    assert taggers_and_runners(np.int64(25)) == (2, 23)
    sweep = NAMED_SWEEPS["sweep-E"]
    assert sweep.point(np.int64(4)).num_envs == 4


def test_render_takes_a_numpy_integer_fps(tmp_path):
    with pytest.raises(InvalidValueError, match="no frames to render"):  # past the fps check
        write_gif([], beacon(), tmp_path / "run.gif", fps=np.int64(5))


@pytest.mark.parametrize("call, name", [
    (lambda: beacon(np.int64(0)), "num_envs"),
    (lambda: setattr(beacon(), "check_every", True), "check_every"),
    (lambda: beacon().graph(steps=np.int64(0)), "steps"),
    (lambda: check("beacon", 1, steps=np.int64(0)), "steps"),
    (lambda: BenchConfig("beacon", True), "num_envs"),
    (lambda: run_sim(BenchConfig("beacon", 1), backend="numpy", repeats=np.int64(0)), "repeats"),
    (lambda: run_policy_tier(BenchConfig("beacon", 1), "sim+policy", backend="numpy", warmup_steps=np.int64(0)),
     "warmup_steps"),
    (lambda: taggers_and_runners(np.int64(1)), "num_agents"),
    (lambda: NAMED_SWEEPS["sweep-E"].point(np.int64(0)), "sweep-E: E"),
    (lambda: write_gif([], beacon(), "run.gif", fps=np.int64(0)), "fps"),
])
def test_an_integer_option_out_of_range_or_a_bool_is_refused(call, name):
    with pytest.raises(InvalidValueError, match=rf"^{name}=.* is not allowed; give an integer"):
        call()
