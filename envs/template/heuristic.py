"""The obvious policy for the beacon with continuous actions, to measure trained ones against:
every agent walks straight at its beacon at full speed, and stops on it."""

import torch

from warpsim.envs.template.env import Beacon


def walk_to_beacon(env: Beacon) -> torch.Tensor:
    """float32[E, N, 2]: each agent's velocity towards its beacon, each component at most 1 (the
    full step) and no more than what reaches the beacon this step."""
    step_size = env.params.step_size
    offset_x = env.state.beacon_x[:, None] - env.state.pos_x
    offset_y = env.state.beacon_y[:, None] - env.state.pos_y
    return torch.stack([offset_x, offset_y], dim=-1).div(step_size).clamp(-1.0, 1.0)
