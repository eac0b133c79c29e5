"""Draws one environment's episode, played by policies, into an animated GIF (matplotlib)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from warpsim.environment import Environment, Frame
from warpsim.errors import InvalidValueError, RunFileError, UnavailableError
from warpsim.files import make_directory, usable_directory
from warpsim.train.evaluate import Player

ROLE_COLOURS = ("tab:red", "tab:blue", "tab:green", "tab:orange", "tab:purple")


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
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
        from matplotlib.animation import FuncAnimation, PillowWriter
    except ImportError:
        raise UnavailableError("rendering needs matplotlib: pip install 'warpsim[plots]'") from None
    path = Path(path)
    check_output_file(path)
    if not isinstance(fps, int) or isinstance(fps, bool) or fps < 1:
        raise InvalidValueError(f"fps={fps!r} is not allowed; give an integer >= 1")
    if not frames:
        raise InvalidValueError("no frames to render")
    roles = np.array(env.spec.agent_roles)
    colours = np.array([ROLE_COLOURS[r % len(ROLE_COLOURS)] for r in roles])
    figure, axes = pyplot.subplots(figsize=(4, 4), dpi=80)
    extent = frames[0].extent
    margin = 0.03 * extent
    axes.set_xlim(-margin, extent + margin)
    axes.set_ylim(-margin, extent + margin)
    axes.set_aspect("equal")
    axes.set_xticks([])
    axes.set_yticks([])
    for r, name in enumerate(env.spec.role_names):
        if (roles == r).any():
            axes.scatter([], [], c=ROLE_COLOURS[r % len(ROLE_COLOURS)], label=name, s=25)
    axes.legend(loc="upper right", fontsize=7)
    points = axes.scatter(frames[0].positions[:, 0], frames[0].positions[:, 1], c=colours, s=25)
    title = axes.set_title("", fontsize=8)

    def draw(index: int):
        frame = frames[index]
        points.set_offsets(frame.positions)
        points.set_alpha(np.where(frame.active, 1.0, 0.15).tolist())
        title.set_text(f"{env.name}  t = {frame.time}")
        return points, title

    animation = FuncAnimation(figure, draw, frames=len(frames), blit=False)
    make_directory(path.parent, "output directory")
    animation.save(str(path), writer=PillowWriter(fps=fps))
    pyplot.close(figure)
    return path
