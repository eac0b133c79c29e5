"""What the JaxMARL scripts share: one of its MPE environments, E of them stepped as one
``jax.jit`` of ``jax.vmap``, timed by peer_timing (imports jax and jaxmarl only when called)."""

from importlib import metadata

import peer_timing


def measure_scenario(args, result: dict, env_name: str, params: dict) -> None:
    """Times JaxMARL's ``env_name`` made with ``params`` at each batch size of ``--num-envs``.

    The E environments step together: ``jax.vmap`` of ``env.step`` inside one ``jax.jit``,
    which also returns the step's observations, rewards and dones (outputs nobody reads would
    be dropped by XLA, and a warpsim step writes them). Discrete actions drawn once at random
    are reused every step; the auto-reset of ``env.step`` is timed with the step. Runs on
    JAX's default device: the GPU where jax finds one (a CUDA build of jaxlib), else the CPU.
    """
    import jax
    import jaxmarl

    env = jaxmarl.make(env_name, **params)
    device = jax.devices()[0]
    on_gpu = device.platform == "gpu"
    result.update(tool_version=metadata.version("jaxmarl"), env=env_name,
                  device=device.device_kind if on_gpu else result["device"],
                  backend="jax-cuda" if on_gpu else "jax-cpu", precision="fp32", observation="full",
                  params=dict(params, action_type="Discrete"),
                  thread_mapping="jax.jit of jax.vmap over environments, compiled by XLA")
    result["versions"].update(jaxmarl=result["tool_version"], jax=jax.__version__,
                              jaxlib=metadata.version("jaxlib"))

    def make_step(num_envs):
        key, reset_key, action_key = jax.random.split(jax.random.PRNGKey(args.seed), 3)
        _observations, state = jax.vmap(env.reset)(jax.random.split(reset_key, num_envs))
        action_keys = jax.random.split(action_key, env.num_agents)
        actions = {agent: jax.random.randint(agent_key, (num_envs,), 0, env.action_space(agent).n)
                   for agent, agent_key in zip(env.agents, action_keys)}

        @jax.jit
        def advance(key, state):
            key, step_key = jax.random.split(key)
            observations, state, rewards, dones, _infos = jax.vmap(env.step)(
                jax.random.split(step_key, num_envs), state, actions)
            return key, state, observations, rewards, dones

        carried = [key, state]

        def step():
            launched = advance(*carried)
            carried[:] = launched[:2]
            return launched

        jax.block_until_ready(step())  # compiled here, timed as start-up
        return step

    peer_timing.best_of_batch_sizes(make_step, args, result, wait=jax.block_until_ready)
