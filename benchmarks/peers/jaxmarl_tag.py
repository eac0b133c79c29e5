"""JaxMARL's MPE ``simple_tag`` (``MPE_simple_tag_v3``), jit and vmap: one JSON object with its sim-step rate.

    python jaxmarl_tag.py --num-agents 110 --num-envs 1,16,256,2000

Runs on JAX's default device: the GPU where jax finds one (a CUDA build of jaxlib),
else the CPU. The E environments step together as one ``jax.jit`` of ``jax.vmap``
(jaxmarl_timing.py). Episodes last 500 steps (warpsim's train-ref length). The scenario
is JaxMARL's own: 2 obstacles, every agent observes every other agent (full
observation). A comma list of batch sizes is swept and the fastest per agent-step kept;
a size that does not fit in memory ends the sweep. See README.md.
"""

import jaxmarl_timing
import peer_timing

EPISODE_LENGTH = 500
OBSTACLES = 2


def measure(args, result) -> None:
    taggers, runners = peer_timing.taggers_and_runners(args.num_agents)
    result.update(num_taggers=taggers, num_runners=runners)
    jaxmarl_timing.measure_scenario(args, result, "MPE_simple_tag_v3", dict(
        num_good_agents=runners, num_adversaries=taggers, num_obs=OBSTACLES, max_steps=EPISODE_LENGTH))


if __name__ == "__main__":
    peer_timing.main("jaxmarl", measure)
