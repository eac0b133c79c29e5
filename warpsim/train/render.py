"""Draws one environment's episode, played by policies, into an animated GIF (matplotlib)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from warpsim.environment import EnvSpec, Environment, Frame
from warpsim.errors import InvalidValueError, RunFileError, UnavailableError
from warpsim.extras import install_hint
from warpsim.files import make_directory, usable_directory
from warpsim.train.evaluate import Player

ROLE_COLOURS = {"tagger": "tab:red", "runner": "tab:blue"}
"""Roles drawn alike in every environment, whatever order it declares its roles in."""
OTHER_COLOURS = ("tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
"""Colours of the other roles, in the order they are declared."""


def role_colours(role_names) -> list[str]:
    """One colour per role, by name (ROLE_COLOURS), the others from OTHER_COLOURS in turn."""
    others = iter(OTHER_COLOURS * (1 + len(role_names) // len(OTHER_COLOURS)))
    return [ROLE_COLOURS.get(name) or next(others) for name in role_names]


def agent_colours(spec: EnvSpec) -> list[str]:
    """The colour of every agent, its role's."""
    colours = role_colours(spec.role_names)
    return [colours[role] for role in spec.agent_roles]


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
        raise UnavailableError(f"rendering needs matplotlib: {install_hint('plots')}") from None
    path = Path(path)
    check_output_file(path)
    if not isinstance(fps, int) or isinstance(fps, bool) or fps < 1:
        raise InvalidValueError(f"fps={fps!r} is not allowed; give an integer >= 1")
    if not frames:
        raise InvalidValueError("no frames to render")
    roles = np.array(env.spec.agent_roles)
    colours = agent_colours(env.spec)
    figure, axes = pyplot.subplots(figsize=(4, 4), dpi=80)
    extent = frames[0].extent
    margin = 0.03 * extent
    axes.set_xlim(-margin, extent + margin)
    axes.set_ylim(-margin, extent + margin)
    axes.set_aspect("equal")
    axes.set_xticks([])
    axes.set_yticks([])
    for r, (name, colour) in enumerate(zip(env.spec.role_names, role_colours(env.spec.role_names))):
        if (roles == r).any():
            axes.scatter([], [], c=colour, label=name, s=25)
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
