"""Draws one environment's episode, played by policies, into an animated GIF (matplotlib)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from warpsim.analysis.play import Player
from warpsim.environment import Environment, Frame
from warpsim.errors import InvalidValueError
from warpsim.files import write_output
from warpsim.render import FrameCanvas
from warpsim.train.run_dir import output_file
from warpsim.validation import require_int

EPISODE_FILE = "episode.gif"
"""Where ``warpsim render`` draws a run's episode when no ``--out`` is given."""


def play_episode(player: Player, max_steps: int = 10_000) -> list[Frame]:
    """Frames of environment 0's next episode (reset first), one before each step, each with the
    episode's events so far by counter (``Frame.counts``; the counters count from the environment's making)."""
    env = player.env
    player.reset()
    start = _counters(env)
    frames = []
    for _ in range(max_steps):
        counts = {name: count - start[name] for name, count in _counters(env).items()}
        frames.append(dataclasses.replace(env.frame(0), counts=counts))
        player.step()
        if bool(env.done[0]):  # the step also reset the environment: its end state is gone
            break
    return frames


def _counters(env: Environment) -> dict[str, int]:
    """Environment 0's counters (``EnvSpec.counters``) now."""
    return {name: int(getattr(env.state, name)[0]) for name in env.spec.counters}


def write_gif(frames: list[Frame], env: Environment, path: Path | str, fps: int = 10) -> Path:
    """Renders ``frames`` to ``path`` (.gif); agents are coloured by role."""
    path = output_file(path, "output", ".gif")
    fps = require_int("fps", fps, 1)
    if not frames:
        raise InvalidValueError("no frames to render")
    canvas = FrameCanvas(env.spec, env.display_name)
    from matplotlib.animation import FuncAnimation, PillowWriter  # FrameCanvas has found matplotlib

    animation = FuncAnimation(canvas.figure, lambda index: canvas.show(frames[index]), frames=len(frames),
                              blit=False)
    with tempfile.TemporaryDirectory() as folder:  # Pillow writes a file: whole, it replaces the old one
        drawn = Path(folder) / path.name
        animation.save(str(drawn), writer=PillowWriter(fps=fps))
        return write_output(path, drawn.read_bytes(), "output")
