"""Draws one environment's episode, played by policies, into an animated GIF (matplotlib)."""

from __future__ import annotations

from pathlib import Path

from warpsim.environment import Environment, Frame
from warpsim.errors import InvalidValueError, RunFileError
from warpsim.files import make_directory, usable_directory
from warpsim.render import FrameCanvas
from warpsim.train.evaluate import Player
from warpsim.validation import require_int


def play_episode(player: Player, max_steps: int = 10_000) -> list[Frame]:
    """Frames of environment 0's next episode (reset first), one before each step."""
    env = player.env
    player.reset()
    frames = []
    for _ in range(max_steps):
        frames.append(env.frame(0))
        player.step()
        if bool(env.done[0]):  # the step also reset the environment: its end state is gone
            break
    return frames


def check_output_file(path: Path | str) -> None:
    """Refuses an output path that cannot be written, before any work: not a .gif, a directory,
    or under a file or a read-only directory."""
    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise InvalidValueError(f"output {path} must end in .gif")
    if path.is_dir():
        raise RunFileError(f"output {path} is a directory; give a .gif file name")
    usable_directory(path.parent, "output directory")


def write_gif(frames: list[Frame], env: Environment, path: Path | str, fps: int = 10) -> Path:
    """Renders ``frames`` to ``path`` (.gif); agents are coloured by role."""
    path = Path(path)
    check_output_file(path)
    fps = require_int("fps", fps, 1)
    if not frames:
        raise InvalidValueError("no frames to render")
    canvas = FrameCanvas(env.spec, env.display_name)
    from matplotlib.animation import FuncAnimation, PillowWriter  # FrameCanvas has found matplotlib

    animation = FuncAnimation(canvas.figure, lambda index: canvas.show(frames[index]), frames=len(frames),
                              blit=False)
    make_directory(path.parent, "output directory")
    animation.save(str(path), writer=PillowWriter(fps=fps))
    return path
