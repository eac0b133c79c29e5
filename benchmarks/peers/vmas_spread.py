"""VMAS ``simple_spread``'s sim-step rate as one JSON object, on the GPU where torch sees one, else the CPU (README.md).

    python vmas_spread.py --num-agents 3 --num-envs 1,16,256,1024

N agents and N landmarks, discrete actions as MPE2's defaults (5 moves), drawn once at random
and reused every step (as warpsim's bench does); infinite horizon, so no environment ever
resets and the load stays constant. The scenario is VMAS's own, every agent observed. A comma
list of batch sizes is swept and the fastest per agent-step kept.
"""

from importlib import metadata

import peer_timing


def measure(args, result) -> None:
    import torch
    import vmas

    torch.manual_seed(args.seed)
    device, wait = peer_timing.torch_device(torch, result)
    result.update(tool_version=metadata.version("vmas"), env="simple_spread", precision="fp32",
                  observation="full", params=dict(n_agents=args.num_agents, continuous_actions=False, max_steps=None),
                  thread_mapping="PyTorch, vectorised over environments" + (
                      f", {torch.get_num_threads()} threads" if device == "cpu" else ""))
    result["versions"].update(vmas=result["tool_version"], torch=torch.__version__)

    def make_step(num_envs):
        env = vmas.make_env("simple_spread", num_envs=num_envs, device=device, continuous_actions=False,
                            max_steps=None, seed=args.seed, n_agents=args.num_agents)
        env.reset()
        actions = [env.get_random_action(agent) for agent in env.agents]
        return lambda: env.step(actions)

    peer_timing.best_of_batch_sizes(make_step, args, result, wait)


if __name__ == "__main__":
    peer_timing.main("vmas", measure, "simple_spread")
