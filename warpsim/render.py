"""Drawing an environment's frames: the colour of each role and a canvas that draws Frames.

The GIFs of ``warpsim render`` (:mod:`warpsim.analysis.render`) and the PettingZoo
adapter's ``render()`` both draw with :class:`FrameCanvas`, so an episode looks the same
in both. matplotlib is imported only when a canvas is made (the ``plots`` extra).
"""

from __future__ import annotations

import numpy as np

from warpsim.errors import UnavailableError
from warpsim.extras import install_hint
from warpsim.spec import EnvSpec, Frame

ROLE_COLOURS = {"tagger": "tab:red", "runner": "tab:blue"}
"""Roles drawn alike in every environment, whatever order it declares its roles in."""
OTHER_COLOURS = ("tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
"""Colours of the other roles, in the order they are declared."""
CANVAS_INCHES, CANVAS_DPI = 4, 80
"""A canvas is CANVAS_INCHES square at CANVAS_DPI: 320 x 320 pixels."""


def role_colours(role_names) -> list[str]:
    """One colour per role, by name (ROLE_COLOURS), the others from OTHER_COLOURS in turn."""
    others = iter(OTHER_COLOURS * (1 + len(role_names) // len(OTHER_COLOURS)))
    return [ROLE_COLOURS.get(name) or next(others) for name in role_names]


def agent_colours(spec: EnvSpec) -> list[str]:
    """The colour of every agent, its role's."""
    colours = role_colours(spec.role_names)
    return [colours[role] for role in spec.agent_roles]


class FrameCanvas:
    """A matplotlib figure (Agg, no window) that draws Frames of one environment.

    Agents are coloured by role, with a legend of the roles that have agents below the arena; agents out
    of the game are faded. ``show(frame)`` updates the figure, ``draw(frame)`` also renders
    it to uint8[H, W, 3].
    """

    def __init__(self, spec: EnvSpec, name: str | None):
        try:
            from matplotlib import figure
            from matplotlib.backends.backend_agg import FigureCanvasAgg
        except ImportError:
            raise UnavailableError(f"rendering needs matplotlib: {install_hint('plots')}") from None
        roles = np.array(spec.agent_roles)
        self.figure = figure.Figure(figsize=(CANVAS_INCHES, CANVAS_INCHES), dpi=CANVAS_DPI)
        self.canvas = FigureCanvasAgg(self.figure)
        self.axes = self.figure.add_subplot()
        self.axes.set_aspect("equal")
        self.axes.set_xticks([])
        self.axes.set_yticks([])
        for role, (role_name, colour) in enumerate(zip(spec.role_names, role_colours(spec.role_names))):
            if (roles == role).any():
                self.axes.scatter([], [], c=colour, label=role_name, s=25)
        # Below the arena, not in it: a legend inside would hide the agents in its corner.
        self.legend = self.axes.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(spec.role_names),
                                       fontsize=7, frameon=False)
        self.points = self.axes.scatter(np.zeros(len(roles)), np.zeros(len(roles)), c=agent_colours(spec), s=25)
        self.title = self.axes.set_title("", fontsize=8)
        self.name = name

    def show(self, frame: Frame) -> None:
        """Moves the agents, their fading and the title to ``frame``."""
        margin = 0.03 * frame.extent
        self.axes.set_xlim(-margin, frame.extent + margin)
        self.axes.set_ylim(-margin, frame.extent + margin)
        self.points.set_offsets(frame.positions)
        self.points.set_alpha(np.where(frame.active, 1.0, 0.15).tolist())
        self.title.set_text(f"{self.name}  t = {frame.time}")

    def draw(self, frame: Frame) -> np.ndarray:
        """uint8[H, W, 3]: ``frame`` rendered."""
        self.show(frame)
        self.canvas.draw()
        return np.asarray(self.canvas.buffer_rgba())[:, :, :3].copy()
