"""A one-line progress bar for training: iterations, steps/s, episode returns, counters and lengths;
for a batch of runs, the steps/s over all of them and the spread of the main figures over the runs."""

from __future__ import annotations

import collections
import math
import shutil
import time

WIDTH = 24
"""Characters of the bar itself, when the terminal has room for them."""
NARROWEST_BAR = 8
"""Below this the bar is left out and the figures keep the room."""
WINDOW = 10
"""Updates the time left is estimated over: the pace of late, not since the start, whose first
iteration also paid for start-up and compiling."""


class ProgressBar:
    """Redraws one line on a terminal; prints one line per update elsewhere (logs, CI)."""

    def __init__(self, total: int, stream):
        self.total = total
        self.stream = stream
        self.interactive = hasattr(stream, "isatty") and stream.isatty()
        self._marks: collections.deque[tuple[float, int]] = collections.deque(maxlen=WINDOW + 1)
        """(time, iteration) of the last updates."""

    def update(self, iteration: int, metrics: dict | list[dict]) -> None:
        """One line for a run's metrics, or for the metrics of each run of a batch."""
        reports = metrics if isinstance(metrics, list) else [metrics]
        parts = self._parts(iteration, reports[0]) if len(reports) == 1 else _spread(iteration, self.total, reports)
        self._draw(iteration, parts)

    def _parts(self, iteration: int, metrics: dict) -> list[str]:
        parts = [f"{iteration}/{self.total}", f"{metrics['steps_per_second']:,.0f} steps/s"]
        # Roles by name, so every environment lists them in the same order.
        returns = [f"{key[7:]} {value:.3g}" for key, value in sorted(metrics.items())
                   if key.startswith("return_") and not math.isnan(value)]
        if returns:
            parts.append("return " + " ".join(returns))
        parts += [f"{key[:-12]}/episode {value:.3g}" for key, value in metrics.items()
                  if key.endswith("_per_episode") and not math.isnan(value)]
        if not math.isnan(metrics.get("episode_length", math.nan)):
            parts.append(f"length {metrics['episode_length']:.3g}")
        return parts

    def _draw(self, iteration: int, parts: list[str]) -> None:
        now = time.perf_counter()
        self._marks.append((now, iteration))
        since, at = self._marks[0]
        if iteration > at and iteration < self.total:
            left = (now - since) / (iteration - at) * (self.total - iteration)
            parts.append(f"{_clock(left)} left")
        figures = " | ".join(parts)
        if self.interactive:
            # One character short of the terminal: a full line would wrap and break the redraw.
            line = _fit(iteration / self.total, figures, shutil.get_terminal_size().columns - 1)
            self.stream.write("\r\033[K" + line + ("\n" if iteration >= self.total else ""))
        else:
            self.stream.write(_bar(iteration / self.total, WIDTH) + figures + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


def _spread(iteration: int, total: int, reports: list[dict]) -> list[str]:
    """A batch's line: the steps/s over its runs, and each main figure's median [lowest, highest] over them."""
    parts = [f"{iteration}/{total}", f"{sum(m['steps_per_second'] for m in reports):,.0f} steps/s over "
                                     f"{len(reports)} runs"]
    first = reports[0]
    labels = {**{key: f"return {key[7:]}" for key in sorted(first) if key.startswith("return_")},
              **{key: f"{key[:-12]}/episode" for key in first if key.endswith("_per_episode")},
              "episode_length": "length"}
    for key, label in labels.items():
        values = sorted(m[key] for m in reports if not math.isnan(m.get(key, math.nan)))
        if values:
            parts.append(f"{label} {values[len(values) // 2]:.3g} [{values[0]:.3g}, {values[-1]:.3g}]")
    return parts


def _bar(fraction: float, width: int) -> str:
    filled = int(width * fraction)
    return f"[{'#' * filled}{'.' * (width - filled)}] "


def _fit(fraction: float, figures: str, columns: int) -> str:
    """The bar and the figures in ``columns`` characters: the bar shrinks, then goes, then the figures are cut."""
    room = columns - len(figures) - 3  # "[", "] "
    if room >= NARROWEST_BAR:
        return _bar(fraction, min(WIDTH, room)) + figures
    return figures if len(figures) <= columns else figures[:max(columns - 3, 0)] + "..."


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
