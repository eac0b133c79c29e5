"""Episode metrics on an environment whose episodes end, and count events, at known steps."""

import math

import pytest
import torch
from ticks_env import Ticks

from warpsim.analysis.play import Player, evaluate
from warpsim.environment import Environment
from warpsim.roles import roles_of
from warpsim.train.episodes import EpisodeStats


def test_terminated_says_which_ends_were_by_the_rules():
    env = Ticks(2, backend="numpy")
    ends = []
    for _ in range(8):
        env.step()
        ends.append((env.done.tolist(), env.terminated.tolist()))
    assert ends[5] == ([True, False], [True, False]), "the rules end environment 0 on step 6"
    assert ends[7] == ([False, True], [False, False]), "the time limit cuts environment 1 on step 8"
    assert all(not any(terminated) for done, terminated in ends[:5] + ends[6:7])


class ClockOnly(Ticks):
    """Ticks without its statement of the rules: as far as warpsim knows, only a clock ends its episodes."""

    game_over = Environment.game_over


def test_an_environment_without_game_over_has_only_truncations():
    env = ClockOnly(2, backend="numpy")
    ends = 0
    for _ in range(8):
        env.step()
        ends += int(env.done.sum())
        assert not env.terminated.any(), "an end counted as terminal without game_over()"
    assert ends == 2
    result = evaluate(Player(ClockOnly(2, backend="numpy"), None, seed=0), episodes=2)
    assert "(0% ended by the rules)" in str(result)


def test_length_terminations_and_first_and_last_event_steps_per_episode():
    env = Ticks(2, backend="numpy")
    stats = EpisodeStats(env, roles_of(env.spec, env.device))
    for _ in range(16):  # environment 0 ends on steps 6 and 12, environment 1 on steps 8 and 16
        env.step()
        stats.record()
    report = stats.read()
    assert report["episodes"] == 4
    assert report["episode_length"] == pytest.approx((6 + 6 + 8 + 8) / 4)
    assert report["terminated_fraction"] == pytest.approx(0.5)
    assert report["events_per_episode"] == pytest.approx((2 + 2 + 0 + 0) / 4)
    assert report["return_ticker"] == pytest.approx(1.0)
    # Episodes without an event count their length.
    assert report["steps_to_first_events"] == pytest.approx((3 + 3 + 8 + 8) / 4)
    assert report["steps_to_last_events"] == pytest.approx((5 + 5 + 8 + 8) / 4)
    assert math.isnan(stats.read()["episode_length"]), "a read restarts the totals"


def test_the_running_episode_survives_a_state_round_trip():
    env = Ticks(2, backend="numpy")
    stats = EpisodeStats(env, roles_of(env.spec, env.device))
    for _ in range(4):
        env.step()
        stats.record()
    saved = {name: value.clone() for name, value in stats.state_dict().items()}
    restored = EpisodeStats(env, roles_of(env.spec, env.device))
    restored.load_state_dict(saved)
    for _ in range(4):
        env.step()
        restored.record()
    report = restored.read()
    assert report["episodes"] == 2 and report["steps_to_first_events"] == pytest.approx((3 + 8) / 2)


def test_evaluation_reports_the_episode_metrics():
    env = Ticks(4, backend="numpy")
    result = evaluate(Player(env, None, seed=0), episodes=6)
    # Two episodes of each environment (ceil(6 / 4)), though the short ones finish more by step 32.
    assert result.episodes == 8
    assert result.episode_length == pytest.approx(7.0) and result.terminated_fraction == pytest.approx(0.5)
    assert result.first_event == {"events": pytest.approx(5.5)} and result.last_event == {"events": pytest.approx(6.5)}
    assert result.means["episode_length"] == result.episode_length
    assert "episode length: 7.0 steps (50% ended by the rules)" in str(result)
    assert torch.equal(env.terminated, env.done & env.game_over())
