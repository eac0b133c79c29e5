"""A one-line progress bar for training: iterations, steps/s, episode returns, counters and lengths."""

from __future__ import annotations

import math
import time

WIDTH = 24


class ProgressBar:
    """Redraws one line on a terminal; prints one line per update elsewhere (logs, CI)."""

    def __init__(self, total: int, stream, first_iteration: int = 0):
        self.total = total
        self.stream = stream
        self.first_iteration = first_iteration
        self.started = time.perf_counter()
        self.interactive = hasattr(stream, "isatty") and stream.isatty()

    def update(self, iteration: int, metrics: dict) -> None:
        filled = int(WIDTH * iteration / self.total)
        parts = [f"[{'#' * filled}{'.' * (WIDTH - filled)}] {iteration}/{self.total}",
                 f"{metrics['steps_per_second']:,.0f} steps/s"]
        returns = [f"{key[7:]} {value:.3g}" for key, value in metrics.items()
                   if key.startswith("return_") and not math.isnan(value)]
        if returns:
            parts.append("return " + " ".join(returns))
        parts += [f"{key[:-12]}/episode {value:.3g}" for key, value in metrics.items()
                  if key.endswith("_per_episode") and not math.isnan(value)]
        if not math.isnan(metrics.get("episode_length", math.nan)):
            parts.append(f"length {metrics['episode_length']:.3g}")
        done = iteration - self.first_iteration
        if done > 0 and iteration < self.total:
            left = (time.perf_counter() - self.started) / done * (self.total - iteration)
            parts.append(f"{_clock(left)} left")
        line = " | ".join(parts)
        if self.interactive:
            self.stream.write("\r\033[K" + line + ("\n" if iteration >= self.total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
