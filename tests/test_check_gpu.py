"""``warpsim check`` on a real GPU at the sizes people use (issue: agreement on hardware).

Marked ``gpu``: skipped without one. The same checks from the command line are listed
in docs/guide.md ("Checking at scale").
"""

from typing import Any

import pytest

from warpsim.check import check
from warpsim.configs import NAMED_CONFIGS

PARTIAL_K10: dict[str, Any] = dict(use_full_observation=False, num_other_agents_observed=10)
AT_SCALE = {  # id: (environment, E, three episodes in steps, parameters)
    "tag_continuous E=8 N=1000 K=10": ("tag_continuous", 8, 300, dict(num_taggers=50, num_runners=950, **PARTIAL_K10)),
    "tag_continuous E=4 N=2048 K=10": ("tag_continuous", 4, 300, dict(num_taggers=100, num_runners=1948,
                                                                        **PARTIAL_K10)),
    "train-ref rules E=64": ("tag_continuous", 64, 1500, NAMED_CONFIGS["train-ref"].params),
    "tag_continuous full E=64 N=11": ("tag_continuous", 64, 300, dict(num_runners=10)),
    "tag_gridworld grid rules E=64": ("tag_gridworld", 64, 300, NAMED_CONFIGS["grid"].params),
    "beacon E=64 N=256": ("beacon", 64, 150, dict(num_agents=256)),
    "tag_continuous continuous actions E=8 N=1000 K=10": ("tag_continuous", 8, 300, dict(
        num_taggers=50, num_runners=950, continuous_actions=True, **PARTIAL_K10)),
    "beacon continuous actions E=64 N=256": ("beacon", 64, 150, dict(num_agents=256, continuous_actions=True)),
    "simple_spread E=8 N=1000 K=10": ("simple_spread", 8, 75, dict(N=1000, num_agent_neighbors=10,
                                                                   num_landmark_neighbors=10)),
}


@pytest.mark.gpu
@pytest.mark.parametrize("env_id, num_envs, steps, params", AT_SCALE.values(), ids=AT_SCALE.keys())
def test_kernels_agree_with_the_reference_at_scale(env_id, num_envs, steps, params):
    report = check(env_id, num_envs=num_envs, **params)  # by default three episodes: ``steps``
    assert report.consistent, str(report)
    assert report.steps == steps and report.near_ties == ()
    assert report.episodes_ended >= 3 * num_envs, "every environment ends an episode at least every T steps"


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["tag_continuous E=8 N=1000 K=10", "tag_continuous E=4 N=2048 K=10",
                                  "train-ref rules E=64", "tag_gridworld grid rules E=64", "beacon E=64 N=256",
                                  "tag_continuous continuous actions E=8 N=1000 K=10",
                                  "simple_spread E=8 N=1000 K=10"])
def test_kernels_agree_bit_for_bit_on_the_gpu(name):
    env_id, num_envs, _, params = AT_SCALE[name]
    report = check(env_id, num_envs=num_envs, steps=100, rtol=0.0, atol=0.0, **params)
    assert report.consistent, str(report)


@pytest.mark.gpu
@pytest.mark.parametrize("option", [dict(neighbour_search="grid_tiles"), dict(observation_dtype="bfloat16")],
                         ids=["tile search", "bfloat16 observations"])
def test_the_step_kernels_other_variants_agree_bit_for_bit_at_n_1000(option):
    env_id, num_envs, _, params = AT_SCALE["tag_continuous E=8 N=1000 K=10"]
    report = check(env_id, num_envs=num_envs, steps=100, rtol=0.0, atol=0.0, **params, **option)
    assert report.consistent, str(report)


def test_the_guides_check_commands_are_these_checks():
    """docs/guide.md lists the command lines of AT_SCALE; they must parse to the same checks."""
    import re
    from pathlib import Path

    from warpsim.cli import build_parser
    from warpsim.registry import parse_env_settings

    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text()
    section = guide[guide.index("### Checking at scale"):]
    lines = re.findall(r"^warpsim (check .+)$", section, re.MULTILINE)
    parsed = []
    for line in lines:
        args = build_parser().parse_args(line.split())
        parsed.append((args.env, args.num_envs, args.steps, parse_env_settings(args.env, args.set)))
    at_scale = [(env_id, num_envs, None, params) for name, (env_id, num_envs, _, params) in AT_SCALE.items()
                if name != "tag_continuous full E=64 N=11"]
    assert parsed == at_scale
