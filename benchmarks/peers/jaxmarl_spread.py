"""JaxMARL's MPE ``simple_spread`` (``MPE_simple_spread_v3``), jit and vmap: one JSON object with its sim-step rate.

    python jaxmarl_spread.py --num-agents 3 --num-envs 1,4096,65536

N agents and N landmarks, MPE's defaults otherwise (25-step episodes, local_ratio 0.5),
discrete actions drawn once. Runs on JAX's default device: the GPU where jax finds one,
else the CPU; the E environments step together as one ``jax.jit`` of ``jax.vmap``
(jaxmarl_timing.py). The scenario is JaxMARL's own: every agent observes every other
agent and landmark. A comma list of batch sizes is swept and the fastest per agent-step
kept; set beside ``benchmarks/mpe_speed.py``'s figures (its ``--peer``). See README.md.
"""

import jaxmarl_timing
import peer_timing


def measure(args, result) -> None:
    jaxmarl_timing.measure_scenario(args, result, "MPE_simple_spread_v3",
                                    dict(num_agents=args.num_agents, num_landmarks=args.num_agents))


if __name__ == "__main__":
    peer_timing.main("jaxmarl", measure, "simple_spread")
