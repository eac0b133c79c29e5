"""WarpDrive's CPU ``TagContinuous`` (PyPI ``rl-warp-drive``): one JSON object with its sim-step rate.

    python warpdrive_cpu.py --num-agents 110

The same rules as warpsim's train-ref config (partial observation of the 10 nearest,
episodes of 500 steps), with runners staying in the game when tagged so the load is
constant. One environment: WarpDrive's CPU backend steps one world in a per-agent
Python loop. Actions are drawn once at random and reused every step; the reset after
each episode is timed. See README.md.
"""

import math
from importlib import metadata

import peer_timing

TRAIN_REF_RULES = dict(grid_length=20.0, episode_length=500, min_acceleration=-0.1, max_acceleration=0.1,
                       min_turn=-3 * math.pi / 4, max_turn=3 * math.pi / 4, num_acceleration_levels=20,
                       num_turn_levels=20, tag_reward_for_tagger=10.0, tag_penalty_for_runner=-10.0,
                       tagging_distance=0.02, use_full_observation=False, num_other_agents_observed=10,
                       runner_exits_game_after_tagged=False)
"""warpsim's train-ref parameters, as WarpDrive's TagContinuous names them."""


def measure(args, result) -> None:
    import numpy as np
    from example_envs.tag_continuous.tag_continuous import TagContinuous

    peer_timing.single_env(args, "warpdrive-cpu")
    taggers, runners = peer_timing.taggers_and_runners(args.num_agents)
    params = dict(TRAIN_REF_RULES, num_taggers=taggers, num_runners=runners,
                  num_other_agents_observed=min(TRAIN_REF_RULES["num_other_agents_observed"], args.num_agents - 1))
    result.update(tool_version=metadata.version("rl-warp-drive"), env="TagContinuous", backend="python",
                  precision="fp32", observation=f"partial K={params['num_other_agents_observed']}",
                  num_taggers=taggers, num_runners=runners, params=params,
                  thread_mapping="Python loop over agents, one environment")
    result["versions"].update(**{"rl-warp-drive": result["tool_version"]}, numpy=np.__version__)

    def make_step(_num_envs):  # always 1: single_env checked it
        env = TagContinuous(**params, seed=args.seed, env_backend="cpu")
        env.reset()
        rng = np.random.default_rng(args.seed)
        actions = {agent: (int(rng.integers(env.num_acceleration_levels + 1)),
                           int(rng.integers(env.num_turn_levels + 1)))
                   for agent in range(env.num_agents)}

        def step():
            _, _, done, _ = env.step(actions)
            if done["__all__"]:
                env.reset()
        return step

    peer_timing.best_of_batch_sizes(make_step, args, result)


if __name__ == "__main__":
    peer_timing.main("warpdrive-cpu", measure)
