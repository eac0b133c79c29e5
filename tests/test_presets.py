"""Every preset names valid settings and environment parameters, and those sized for a GPU fit one
H100's memory by the trainer's own estimate, so a preset no CPU run trains cannot go stale unseen."""

from pathlib import Path

import pytest

from warpsim.registry import layout
from warpsim.train.config import TrainConfig, build_config
from warpsim.train.presets import PRESETS, sized_for_gpu
from warpsim.train.storage import SAFETY, training_bytes

H100_BYTES = 78 * 2**30
"""What an H100 of 80 GB leaves free to a process."""
TRAINING_PAGE = Path(__file__).resolve().parents[1] / "docs" / "training.md"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds_its_environment(name):
    config = build_config(PRESETS[name])
    spec, per_env = layout(config.env, 1, **config.env_params)
    assert spec.num_agents >= 1 and per_env > 0


@pytest.mark.parametrize("name", sorted(filter(sized_for_gpu, PRESETS)))
def test_the_gpu_presets_fit_an_h100(name):
    config = build_config(PRESETS[name])
    spec, per_env = layout(config.env, 1, **config.env_params)
    assert training_bytes(config, spec, per_env, "bf16") <= SAFETY * H100_BYTES


def test_the_estimate_counts_the_minibatches_that_minibatch_size_makes():
    # 5M samples: in 4 minibatches the update's copies and activations dwarf the rollout; in 77 of 65,536, not
    env_params = dict(N=100, num_agent_neighbors=5, num_landmark_neighbors=5)
    spec, per_env = layout("simple_spread", 1, **env_params)
    in_four, by_size = (training_bytes(TrainConfig(env="simple_spread", env_params=env_params, num_envs=2000,
                                                   rollout_steps=25, minibatch_size=size), spec, per_env)
                        for size in (0, 2**16))
    assert by_size < in_four / 2


def test_the_training_page_names_every_preset_where_it_lists_them():
    """docs/training.md's Configuration section lists what ``--config`` takes: a new preset is named there."""
    section = TRAINING_PAGE.read_text().split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    assert [name for name in PRESETS if f"`{name}`" not in section] == []
