"""Counter-based random numbers, bit-identical on the GPU and in NumPy.

A draw is a pure function of ``(seed, stream, counter, lane)``, each below 2**32:
``stream`` is the environment's index (one stream per environment), ``counter`` its
episode number and ``lane`` tells apart the draws of one episode. Environments may share
streams: the key kernels are given as ``seed`` (``random_key``) holds the seed in its low 32
bits and, in its high 32, the complement of S - 1 for a number of streams S, a power of two,
so that environment e draws from stream e mod S = e & (S - 1) (0: one stream per
environment, since e & 0xFFFFFFFF = e). Blocks of S environments then replay one another's
starts and draws, as a batched evaluation's plays need; the mask costs a kernel no branch and
no division. Environments do not
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
_SHIFT_32 = np.uint64(32)
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


def shared_stream(key, env):
    """The stream environment ``env`` draws from under ``key``: its own, or env mod the key's
    number of streams. key: uint64; env: uint64 < 2**32."""
    return env & ((key >> _SHIFT_32) ^ _LOW32)


def random_bits(key, stream, counter, lane):
    """32 random bits (as uint64) for one draw. key: ``random_key``; the others: uint64 < 2**32."""
    return mix32((key & _LOW32) ^ mix32(shared_stream(key, stream) ^ mix32(counter ^ mix32(lane))))


mix32_device = cuda.jit(device=True)(mix32)
shared_stream_device = cuda.jit(device=True)(shared_stream)


@cuda.jit(device=True)
def random_bits_device(key, stream, counter, lane):
    return mix32_device((key & _LOW32) ^ mix32_device(
        shared_stream_device(key, stream) ^ mix32_device(counter ^ mix32_device(lane))))


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


def random_key(seed: int, streams: int | None = None) -> np.uint64:
    """Checks a user's seed and number of shared streams (None: one per environment) and returns
    the RNG's key: the seed in the low 32 bits, the complement of streams - 1 in the high 32."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        raise InvalidValueError(f"seed={seed!r} is not allowed; give an integer in [0, 2**32)")
    if streams is None:
        return np.uint64(seed)
    if not isinstance(streams, (int, np.integer)) or isinstance(streams, bool) or not 1 <= streams <= 2**31 \
            or streams & (streams - 1):
        raise InvalidValueError(f"streams={streams!r} is not allowed; give a power of two in [1, 2**31], or None "
                                f"for one random stream per environment")
    return np.uint64(seed) | ((np.uint64(streams - 1) ^ _LOW32) << _SHIFT_32)


def streams_of(key: np.uint64) -> int | None:
    """The number of shared streams of a ``random_key``, or None for one per environment."""
    mask = int(key) >> 32
    return None if mask == 0 else (mask ^ 0xFFFFFFFF) + 1
