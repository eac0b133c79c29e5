"""simple_speaker_listener: MPE2's communication task on the kernels (docs/mpe.md)."""

from warpsim.envs.simple_speaker_listener.env import SimpleSpeakerListener
from warpsim.envs.simple_speaker_listener.params import SimpleSpeakerListenerParams

ENVIRONMENT = SimpleSpeakerListener
"""The class warpsim registers for this folder, under its ``name``."""

CHECK_PARAMS = dict(max_cycles=4)
"""Parameters small enough for the CUDA simulator, with episodes short enough that a few
dozen steps cover resets: the test suite runs ``warpsim.check`` with them."""

__all__ = ["CHECK_PARAMS", "ENVIRONMENT", "SimpleSpeakerListener", "SimpleSpeakerListenerParams"]
