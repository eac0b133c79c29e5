"""The PPO pieces on tiny tensors, worked out by hand."""

import math

import pytest
import torch

from warpsim.train import ppo
from warpsim.train.action_heads import CategoricalHeads, GaussianHead, roles_noise


def test_gae_stops_at_an_episode_end_in_the_middle_of_the_rollout():
    rewards = torch.tensor([1.0, 0.0, 2.0, 1.0])
    values = torch.tensor([0.5, 0.4, 0.3, 0.2])
    ended = torch.tensor([False, True, False, False])  # the episode ends on step 1, by the rules
    advantages, returns = ppo.gae(rewards, values, ended, torch.zeros(4, dtype=torch.bool), torch.tensor(0.6),
                                  gamma=0.9, lam=0.8)
    # delta_t = r_t + gamma V_{t+1} (1 - ended_t) - V_t ; A_t = delta_t + gamma lam (1 - ended_t) A_{t+1}
    d3 = 1 + 0.9 * 0.6 - 0.2
    d2 = 2 + 0.9 * 0.2 - 0.3
    d1 = 0 - 0.4                     # nothing flows back across the end
    d0 = 1 + 0.9 * 0.4 - 0.5
    expected = [d0 + 0.72 * d1, d1, d2 + 0.72 * d3, d3]
    assert advantages.tolist() == pytest.approx(expected, abs=1e-6)
    assert returns.tolist() == pytest.approx([a + v for a, v in zip(expected, values.tolist())], abs=1e-6)


def test_gae_works_per_agent_with_a_per_environment_end_flag():
    rewards = torch.tensor([[[1.0, 2.0]], [[0.0, 0.0]]])          # [T=2, E=1, N=2]
    values = torch.zeros(2, 1, 2)
    ended = torch.tensor([[[True]], [[False]]])                    # [T, E, 1]
    advantages, _ = ppo.gae(rewards, values, ended, torch.zeros_like(ended), torch.ones(1, 2), gamma=0.5, lam=1.0)
    assert advantages[:, 0].tolist() == [[1.0, 2.0], [0.5, 0.5]]


def test_gae_bootstraps_a_truncated_episode_with_the_value_of_its_last_state():
    rewards = torch.tensor([1.0, 0.0, 2.0, 1.0])
    values = torch.tensor([0.5, 0.4, 0.3, 0.2])
    terminated = torch.zeros(4, dtype=torch.bool)
    truncated = torch.tensor([False, True, False, False])  # a time limit cuts the episode on step 1
    advantages, returns = ppo.gae(rewards, values, terminated, truncated, torch.tensor(0.6), gamma=0.9, lam=0.8)
    # At the cut the final state's value is estimated by V_1 (the next observation is already
    # the new episode's): delta_1 = r_1 + gamma V_1 - V_1, and the lambda-sum stops there.
    d3 = 1 + 0.9 * 0.6 - 0.2
    d2 = 2 + 0.9 * 0.2 - 0.3
    d1 = 0 + 0.9 * 0.4 - 0.4
    d0 = 1 + 0.9 * 0.4 - 0.5
    expected = [d0 + 0.72 * d1, d1, d2 + 0.72 * d3, d3]
    assert advantages.tolist() == pytest.approx(expected, abs=1e-6)
    assert returns.tolist() == pytest.approx([a + v for a, v in zip(expected, values.tolist())], abs=1e-6)
    terminal, _ = ppo.gae(rewards, values, truncated, terminated, torch.tensor(0.6), gamma=0.9, lam=0.8)
    assert terminal[1].item() == pytest.approx(-0.4), "the same end by the rules is worth nothing after it"


def reference_gae(rewards, values, terminated, truncated, next_value, gamma, lam):
    """GAE step by step, as the rule reads: one Python step per rollout step."""
    advantages, running, following = torch.empty_like(rewards), torch.zeros_like(next_value), next_value
    for t in reversed(range(rewards.shape[0])):
        cut = truncated[t].float()
        continues = 1.0 - terminated[t].float() - cut
        delta = rewards[t] + gamma * (following * continues + values[t] * cut) - values[t]
        running = delta + gamma * lam * continues * running
        advantages[t] = running
        following = values[t]
    return advantages, advantages + values


@pytest.mark.parametrize("seed", range(3))
def test_gae_over_whole_tensors_equals_the_step_by_step_rule_bit_for_bit(seed):
    """Rollouts of [T, E, n] with episode ends per environment [T, E, 1], ends by the rules and cuts
    by a time limit at random (never both on one step), random rewards and values."""
    generator = torch.Generator().manual_seed(seed)
    t, e, n = 9, 5, 3
    rewards, values = torch.randn(2, t, e, n, generator=generator)
    ends = torch.randint(0, 3, (t, e, 1), generator=generator)  # 0 goes on, 1 terminated, 2 truncated
    terminated, truncated = ends == 1, ends == 2
    assert terminated.any() and truncated.any()
    next_value = torch.randn(e, n, generator=generator)
    advantages, returns = ppo.gae(rewards, values, terminated, truncated, next_value, gamma=0.97, lam=0.9)
    expected_advantages, expected_returns = reference_gae(rewards, values, terminated, truncated, next_value,
                                                          0.97, 0.9)
    assert torch.equal(advantages, expected_advantages) and torch.equal(returns, expected_returns)


def test_policy_loss_clips_the_ratio_on_the_side_the_advantage_favours():
    old = torch.log(torch.tensor([0.5, 0.5, 0.5, 0.5]))
    new = torch.log(torch.tensor([0.75, 0.75, 0.25, 0.25]))       # ratios 1.5, 1.5, 0.5, 0.5
    advantages = torch.tensor([1.0, -1.0, 1.0, -1.0])
    loss, ratio = ppo.policy_loss(new, old, advantages, clip=0.2)
    assert ratio.tolist() == pytest.approx([1.5, 1.5, 0.5, 0.5])
    # min(r A, clip(r) A): 1.2, -1.5, 0.5, -0.8
    assert loss.item() == pytest.approx(-(1.2 - 1.5 + 0.5 - 0.8) / 4)


def test_value_loss_with_and_without_clipping():
    new, old, returns = torch.tensor([2.0, 0.0]), torch.tensor([0.0, 0.0]), torch.tensor([1.0, 3.0])
    assert ppo.value_loss(new, old, returns, None).item() == pytest.approx(0.5 * (1 + 9) / 2)
    # clipped values 0.5 and 0: errors max((1, 0.25)) = 1 and max(9, 9) = 9
    assert ppo.value_loss(new, old, returns, 0.5).item() == pytest.approx(0.5 * (1 + 9) / 2)
    new = torch.tensor([3.0, 0.0])                                 # clipped: 0.5, error 0.25 vs 4
    assert ppo.value_loss(new, old, returns, 0.5).item() == pytest.approx(0.5 * (4 + 9) / 2)


def test_log_prob_and_entropy_add_up_over_action_components():
    logits = torch.log(torch.tensor([[0.5, 0.5, 0.1, 0.9, 0.0 + 1e-30]]))
    heads = ppo.split_heads(logits, (2, 3))
    actions = torch.tensor([[1, 1]], dtype=torch.int32)
    assert ppo.log_prob(heads, actions).item() == pytest.approx(math.log(0.5) + math.log(0.9), abs=1e-6)
    expected = math.log(2) - (0.1 * math.log(0.1) + 0.9 * math.log(0.9))
    assert ppo.entropy(heads).item() == pytest.approx(expected, abs=1e-5)
    assert all(head.dtype == torch.float32 for head in ppo.split_heads(logits.bfloat16(), (2, 3)))


def test_sampling_follows_the_probabilities_and_greedy_takes_the_most_likely():
    probabilities = torch.tensor([0.1, 0.6, 0.3])
    heads = (torch.log(probabilities).expand(20000, 3),)
    generator = torch.Generator().manual_seed(0)
    actions = ppo.sample(heads, ppo.uniforms(20000, (3,), generator, torch.device("cpu")))
    assert actions.dtype == torch.int32 and actions.shape == (20000, 1)
    frequencies = torch.bincount(actions[:, 0].long(), minlength=3).float() / 20000
    assert frequencies.tolist() == pytest.approx(probabilities.tolist(), abs=0.015)
    assert ppo.sample(heads, None).unique().tolist() == [1]


def test_a_draw_picks_the_level_whose_cumulative_span_holds_it_and_never_one_past_the_last():
    """One uniform a component: level k for a draw in [c(k-1), c(k)); the last for any draw past the others'
    sum, even where the sums round below 1; a level of probability 0 never."""
    heads = (torch.tensor([0.25, 0.0, 0.5, 0.25]).log().expand(6, 4),)
    draws = (torch.tensor([0.0, 0.2499, 0.2501, 0.7499, 0.7501, 1.0 - 2 ** -24]),)
    assert ppo.sample(heads, draws)[:, 0].tolist() == [0, 0, 2, 2, 3, 3]
    rounded_short = (torch.full((1, 3), 0.3333).log(),)  # sums to 0.9999
    assert ppo.sample(rounded_short, (torch.tensor([0.99995]),)).tolist() == [[2]]
    assert ppo.uniforms(5, (3, 7), None, torch.device("cpu"))[1].shape == (5,)


def test_normalized_advantages_have_zero_mean_and_unit_spread():
    normalized = ppo.normalize(torch.tensor([1.0, 2.0, 3.0, 6.0]))
    assert normalized.mean().item() == pytest.approx(0, abs=1e-6)
    assert normalized.std(unbiased=False).item() == pytest.approx(1, abs=1e-5)


@pytest.mark.parametrize("levels", [[(3, 9)] * 3, [(5,)] * 3, [(2, 2, 7)] * 3, [(3,), (5, 2), (4,)]],
                         ids=["2 components", "1 component", "3 components", "each role its own"])
def test_every_roles_noise_in_one_draw_is_the_separate_draws_on_the_cpu(levels):
    """A run's noise for all its roles comes from one draw (one kernel); on a CPU its numbers are, in
    order, those of one draw per role and component, so the actions sampled are what they were."""
    heads = [CategoricalHeads(role_levels) for role_levels in levels]
    rows = [20, 7, 1]
    joined = roles_noise(heads, rows, torch.Generator().manual_seed(3), torch.device("cpu"))
    separate = torch.Generator().manual_seed(3)
    for head, role_rows, role_noise in zip(heads, rows, joined, strict=True):
        for drawn, expected in zip(role_noise, head.noise(role_rows, separate, torch.device("cpu")), strict=True):
            assert torch.equal(drawn, expected)


def test_continuous_noise_is_drawn_role_by_role():
    heads = [GaussianHead(((-1.0, 1.0), (0.0, 2.0))), GaussianHead(((0.0, 1.0),))]
    joined = roles_noise(heads, [33, 5], torch.Generator().manual_seed(1), torch.device("cpu"))
    separate = torch.Generator().manual_seed(1)
    assert all(torch.equal(drawn[0], head.noise(rows, separate, torch.device("cpu"))[0])
               for head, rows, drawn in zip(heads, [33, 5], joined, strict=True))
