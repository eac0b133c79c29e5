"""MPE2 (PettingZoo) ``simple_tag_v3``, parallel API: one JSON object with its sim-step rate (see README.md).

    python mpe2_tag.py --num-agents 110

One environment (MPE2 steps one world); discrete actions drawn once at random and
reused every step. Each agent observes its 10 nearest other agents
(``num_agent_neighbors``, like warpsim's partial K=10) and the default 2 obstacles.
Episodes last 500 steps (warpsim's train-ref length); the reset that follows is timed.
"""

from importlib import metadata

import peer_timing

EPISODE_LENGTH = 500
NEIGHBOURS_OBSERVED = 10


def measure(args, result) -> None:
    import numpy as np
    from mpe2 import simple_tag_v3

    peer_timing.single_env(args, "mpe2")
    taggers, runners = peer_timing.taggers_and_runners(args.num_agents)
    params = dict(num_good=runners, num_adversaries=taggers, max_cycles=EPISODE_LENGTH, continuous_actions=False,
                  num_agent_neighbors=min(NEIGHBOURS_OBSERVED, args.num_agents - 1))
    result.update(tool_version=metadata.version("mpe2"), env="simple_tag_v3", backend="python", precision="fp64",
                  observation=f"partial K={params['num_agent_neighbors']}", num_taggers=taggers,
                  num_runners=runners, params=params, thread_mapping="Python loop over agents, one environment")
    result["versions"].update(mpe2=result["tool_version"], pettingzoo=metadata.version("pettingzoo"),
                              numpy=np.__version__)

    def make_step(_num_envs):  # always 1: single_env checked it
        env = simple_tag_v3.parallel_env(**params)
        env.reset(seed=args.seed)
        rng = np.random.default_rng(args.seed)
        actions = {agent: int(rng.integers(env.action_space(agent).n)) for agent in env.agents}

        def step():
            env.step(actions)
            if not env.agents:  # the episode ended: every agent was truncated
                env.reset()
        return step

    peer_timing.best_of_batch_sizes(make_step, args, result)


if __name__ == "__main__":
    peer_timing.main("mpe2", measure)
