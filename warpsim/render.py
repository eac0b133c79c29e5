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

ROLE_COLOURS = {"tagger": "tab:red", "adversary": "tab:red", "runner": "tab:blue"}
"""Roles drawn alike in every environment, whatever order it declares its roles in."""
OTHER_COLOURS = ("tab:green", "tab:orange", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
"""Colours of the other roles, in the order they are declared."""
CANVAS_INCHES, CANVAS_DPI = 4, 80
"""A canvas is CANVAS_INCHES square at CANVAS_DPI: 320 x 320 pixels."""
TRAIL = 6
"""Frames of each agent's trail: where it was, drawn faint behind it."""
MARK_FRAMES = 8
"""Frames a mark stays where an agent left the game (a runner tagged out)."""
ARROW = 0.04
"""A heading's arrow, as a share of the arena's width."""


def role_colours(role_names) -> list[str]:
    """One colour per role, by name (ROLE_COLOURS), the others from OTHER_COLOURS in turn."""
    others = iter(OTHER_COLOURS * (1 + len(role_names) // len(OTHER_COLOURS)))
    return [ROLE_COLOURS.get(name) or next(others) for name in role_names]


def agent_colours(spec: EnvSpec) -> list[str]:
    """The colour of every agent, its role's."""
    colours = role_colours(spec.role_names)
    return [colours[role] for role in spec.agent_roles]


class FrameCanvas:
    """A matplotlib figure (Agg, no window) that draws Frames of one environment, in order.

    Agents are coloured by role, with a legend of the roles that have agents below the arena; agents out
    of the game are faded; landmarks (``Frame.landmarks``) are grey rings, the goal among them filled.
    Each agent trails its last positions; an agent with a heading (``Frame.headings``) points an
    arrow along it; where an agent leaves the game (a runner tagged out) a cross stays for a few
    frames. The title gives the step and the episode's events so far (``Frame.counts``). An
    earlier time than the last frame's starts a new episode.
    ``show(frame)`` updates the figure, ``draw(frame)`` also renders it to uint8[H, W, 3].
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
        from matplotlib.collections import LineCollection

        colours = agent_colours(spec)
        self.trails = LineCollection([], colors=colours, linewidths=1.0, alpha=0.35)
        self.axes.add_collection(self.trails)
        self.points = self.axes.scatter(np.zeros(len(roles)), np.zeros(len(roles)), c=colours, s=25)
        self.arrows = LineCollection([], colors=colours, linewidths=1.2)
        self.axes.add_collection(self.arrows)
        self.marks = self.axes.scatter([], [], marker="x", c="black", s=30, linewidths=1.2)
        self.landmarks = self.axes.scatter([], [], facecolors="none", edgecolors="grey", s=60, linewidths=1.2,
                                           zorder=0)
        self.goal = self.axes.scatter([], [], c="grey", s=60, zorder=0)
        self.title = self.axes.set_title("", fontsize=8)
        self.name = name
        self._history: list[Frame] = []
        self._left: list[tuple[np.ndarray, int]] = []
        """(position, time) where agents left the game lately."""

    def show(self, frame: Frame) -> None:
        """Moves the agents, their trails, arrows, fading, marks and the title to ``frame``."""
        if self._history and frame.time < self._history[-1].time:
            self._history, self._left = [], []
        if self._history:
            left = self._history[-1].active & ~frame.active
            self._left += [(self._history[-1].positions[agent], frame.time) for agent in np.flatnonzero(left)]
        self._left = [(position, time) for position, time in self._left if frame.time - time < MARK_FRAMES]
        self._history = [*self._history[-(TRAIL - 1):], frame]
        low, high = frame.origin - 0.03 * frame.extent, frame.origin + 1.03 * frame.extent
        self.axes.set_xlim(low, high)
        self.axes.set_ylim(low, high)
        landmarks = np.zeros((0, 2)) if frame.landmarks is None else frame.landmarks
        self.landmarks.set_offsets(landmarks)
        self.goal.set_offsets(landmarks[[frame.goal]] if frame.goal is not None else np.zeros((0, 2)))
        self.points.set_offsets(frame.positions)
        self.points.set_alpha(np.where(frame.active, 1.0, 0.15).tolist())
        path = np.stack([old.positions for old in self._history], axis=1)  # [N, frames, 2]
        self.trails.set_segments([trail if active else trail[:0] for trail, active in zip(path, frame.active)])
        if frame.headings is not None:
            length = ARROW * frame.extent
            tips = frame.positions + length * np.stack([np.cos(frame.headings), np.sin(frame.headings)], axis=1)
            self.arrows.set_segments([np.stack([start, tip]) if active else np.zeros((0, 2))
                                      for start, tip, active in zip(frame.positions, tips, frame.active)])
        self.marks.set_offsets(np.array([position for position, _ in self._left]).reshape(-1, 2))
        counts = "".join(f"  {name} {count}" for name, count in frame.counts.items())
        self.title.set_text(f"{self.name}  t = {frame.time}{counts}")

    def draw(self, frame: Frame) -> np.ndarray:
        """uint8[H, W, 3]: ``frame`` rendered."""
        self.show(frame)
        self.canvas.draw()
        return np.asarray(self.canvas.buffer_rgba())[:, :, :3].copy()
