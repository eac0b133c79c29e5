"""Counter-based random numbers, bit-identical on the GPU and in NumPy.

A draw is a pure function of ``(seed, stream, counter, lane)``, each below 2**32:
``stream`` is the environment's index (one stream per environment), ``counter`` its
episode number and ``lane`` tells apart the draws of one episode. Environments do not
number lanes themselves: ``reset_uniform`` and ``step_uniform`` (``_device`` in kernels)
take the step (0 at the reset), the agent and the draw, and give every number of an
episode a lane of its own (docs/custom_envs.md, "Random numbers during a step"). Nothing
is stored between draws, so a masked reset of some environments never disturbs the
others, and the NumPy reference reproduces the kernels' numbers exactly.

All arithmetic stays on 32-bit values held in uint64, so no product overflows: the
same source runs as a Numba CUDA device function, under the CUDA simulator, and on
NumPy uint64 arrays.
"""

import numpy as np
from numba import cuda

from warpsim.errors import InvalidValueError

_LOW32 = np.uint64(0xFFFFFFFF)
_SHIFT_8 = np.uint64(8)
_SHIFT_15 = np.uint64(15)
_SHIFT_16 = np.uint64(16)
_MULTIPLIER_A = np.uint64(0x7FEB352D)
_MULTIPLIER_B = np.uint64(0x846CA68B)
_TO_UNIT = np.float32(1.0 / (1 << 24))


def mix32(x):
    """A bijective 32-bit hash (xorshift-multiply, two rounds). x: uint64 < 2**32."""
    x = x ^ (x >> _SHIFT_16)
    x = (x * _MULTIPLIER_A) & _LOW32
    x = x ^ (x >> _SHIFT_15)
    x = (x * _MULTIPLIER_B) & _LOW32
    return x ^ (x >> _SHIFT_16)


def random_bits(seed, stream, counter, lane):
    """32 random bits (as uint64) for one draw. All arguments: uint64 < 2**32."""
    return mix32(seed ^ mix32(stream ^ mix32(counter ^ mix32(lane))))


mix32_device = cuda.jit(device=True)(mix32)


@cuda.jit(device=True)
def random_bits_device(seed, stream, counter, lane):
    return mix32_device(seed ^ mix32_device(stream ^ mix32_device(counter ^ mix32_device(lane))))


@cuda.jit(device=True)
def uniform_device(seed, stream, counter, lane):
    """One uniform float32 in [0, 1) from the top 24 bits (exact); twin of ``uniform``."""
    return np.float32(random_bits_device(seed, stream, counter, lane) >> _SHIFT_8) * _TO_UNIT


def uniform(seed, stream, counter, lane):
    """Uniform float32 in [0, 1) for arrays of draws (NumPy broadcasting)."""
    bits = random_bits(np.uint64(seed), np.asarray(stream, np.uint64),
                       np.asarray(counter, np.uint64), np.asarray(lane, np.uint64))
    return ((bits >> _SHIFT_8).astype(np.float32) * _TO_UNIT).astype(np.float32)


def lane(t, agent, num_agents, draw, draws_per_agent):
    """The lane of number ``draw`` (of ``draws_per_agent``) of ``agent`` on step ``t`` of an episode:
    ``(t * (N + 1) + agent) * draws_per_agent + draw``. Step 0 is the reset; agent N stands for the
    environment's own numbers (not an agent's). An environment passes one ``draws_per_agent`` everywhere,
    the most numbers an agent (or the environment) draws at a reset or on a step, so no two numbers of an
    episode share a lane. One source for NumPy arrays and kernels: every input is taken as uint64 first,
    since Numba computes uint64 mixed with a signed integer in float64."""
    slot = np.uint64(t) * (np.uint64(num_agents) + np.uint64(1)) + np.uint64(agent)
    return slot * np.uint64(draws_per_agent) + np.uint64(draw)


lane_device = cuda.jit(device=True)(lane)


@cuda.jit(device=True)
def reset_uniform_device(seed, env, episode, agent, draw, draws_per_agent):
    """Uniform float32 in [0, 1): number ``draw`` of ``agent`` (N: the environment's own) at the reset
    that starts episode ``episode`` of environment ``env``; twin of ``reset_uniform``."""
    return uniform_device(seed, np.uint64(env), np.uint64(episode), lane_device(0, agent, 0, draw, draws_per_agent))


def reset_uniform(seed, env, episode, agent, draw, draws_per_agent):
    """``reset_uniform_device`` for arrays of environments, episodes and agents (NumPy broadcasting)."""
    return uniform(seed, env, episode, lane(0, agent, 0, draw, draws_per_agent))


@cuda.jit(device=True)
def step_uniform_device(seed, env, episode, t, agent, num_agents, draw, draws_per_agent):
    """Uniform float32 in [0, 1): number ``draw`` of ``agent`` (N: the environment's own) on step ``t``
    (1 to T) of episode ``episode`` of environment ``env``; twin of ``step_uniform``."""
    return uniform_device(seed, np.uint64(env), np.uint64(episode),
                          lane_device(t, agent, num_agents, draw, draws_per_agent))


def step_uniform(seed, env, episode, t, agent, num_agents, draw, draws_per_agent):
    """``step_uniform_device`` for arrays of environments, episodes, steps and agents (NumPy broadcasting)."""
    return uniform(seed, env, episode, lane(t, agent, num_agents, draw, draws_per_agent))


def seed_to_uint64(seed: int) -> np.uint64:
    """Checks a user's seed and returns it as the RNG's key."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise InvalidValueError(f"seed={seed!r} is not allowed; give an integer in [0, 2**32)")
    return np.uint64(seed)
