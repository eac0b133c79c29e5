"""The template with one kernel written in CUDA C through ``cupy.RawKernel``.

Needs CuPy and a GPU. CuPy sees the environment's tensors without a copy
(``cupy.asarray`` reads their CUDA array interface); the views are made once, and the
kernel launches on torch's current stream like the Numba kernels do.
"""

import numpy as np
import torch

from warpsim.envs.template.env import Beacon

ADVANCE_CLOCK = r"""
extern "C" __global__ void advance_clock(const int episode_length, const int num_envs,
                                         int* t, bool* done) {
    // t int32[E]; done bool[E] (torch.bool is one byte, as C++ bool).
    const int e = blockDim.x * blockIdx.x + threadIdx.x;
    if (e < num_envs) {
        t[e] += 1;
        done[e] = t[e] >= episode_length;
    }
}
"""
THREADS = 128


class BeaconCudaC(Beacon):
    """Beacon whose clock kernel is CUDA C; everything else is the Numba template."""

    def setup(self) -> None:
        super().setup()
        import cupy

        self._cupy = cupy
        self._clock_kernel = cupy.RawKernel(ADVANCE_CLOCK, "advance_clock")
        self._t = cupy.asarray(self.state.t)
        self._done = cupy.asarray(self.done)

    def advance_clock(self) -> None:
        stream = self._cupy.cuda.ExternalStream(torch.cuda.current_stream(self.device).cuda_stream)
        with stream:
            blocks = (self.num_envs + THREADS - 1) // THREADS
            self._clock_kernel((blocks,), (THREADS,), (np.int32(self.params.episode_length),
                                                        np.int32(self.num_envs), self._t, self._done))
