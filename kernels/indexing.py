"""Thread-to-work mapping shared by the one-thread-per-agent kernels."""

from numba import cuda


@cuda.jit(device=True)
def agent_of_thread(num_agents):
    """(environment, agent) of this thread over the flattened index e * N + i.

    Threads past the last environment get an environment index >= E: check it.
    """
    index = cuda.grid(1)
    e = index // num_agents
    return e, index - e * num_agents
