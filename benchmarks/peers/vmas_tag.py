"""VMAS ``simple_tag``'s sim-step rate as one JSON object, on the GPU where torch sees one, else the CPU (README.md).

    python vmas_tag.py --num-agents 110 --num-envs 1,16,256,4096

Continuous actions drawn once at random and reused every step (as warpsim's bench
does); infinite horizon, so no environment ever resets and the load stays constant.
The scenario is VMAS's own: full observation, its default 2 obstacles and 10 physics
substeps. A comma list of batch sizes is swept and the fastest per agent-step kept.
"""

from importlib import metadata

import peer_timing


def measure(args, result) -> None:
    import torch
    import vmas

    taggers, runners = peer_timing.taggers_and_runners(args.num_agents)
    scenario = dict(num_adversaries=taggers, num_good_agents=runners)
    torch.manual_seed(args.seed)
    device, wait = peer_timing.torch_device(torch, result)
    result.update(tool_version=metadata.version("vmas"), env="simple_tag", precision="fp32",
                  observation="full", num_taggers=taggers, num_runners=runners,
                  params=dict(scenario, continuous_actions=True, max_steps=None),
                  thread_mapping="PyTorch, vectorised over environments" + (
                      f", {torch.get_num_threads()} threads" if device == "cpu" else ""))
    result["versions"].update(vmas=result["tool_version"], torch=torch.__version__)

    def make_step(num_envs):
        env = vmas.make_env("simple_tag", num_envs=num_envs, device=device, continuous_actions=True,
                            max_steps=None, seed=args.seed, **scenario)
        env.reset()
        actions = [env.get_random_action(agent) for agent in env.agents]
        return lambda: env.step(actions)

    peer_timing.best_of_batch_sizes(make_step, args, result, wait)


if __name__ == "__main__":
    peer_timing.main("vmas", measure)
