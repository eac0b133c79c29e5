"""Ctrl-C (SIGINT) and a scheduler's SIGTERM while training: the first lets the iteration in
flight finish, so that the loop can write a checkpoint of every run and say where it will
continue; a second stops at once (KeyboardInterrupt), leaving the checkpoints already written.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped on a signal after checkpointing every run; ``signal_number`` is the signal."""

    def __init__(self, message: str, signal_number: int):
        super().__init__(message)
        self.signal_number = signal_number


class StopRequests:
    """While entered (in the main thread), SIGINT and SIGTERM set ``signal_number`` instead of
    stopping the program; a second one raises KeyboardInterrupt. ``announce`` is written to
    standard error at the first, unless it is None."""

    def __init__(self, announce: str | None):
        self.signal_number: int | None = None
        self._announce = announce
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            self._previous = {number: signal.signal(number, self._request) for number in STOP_SIGNALS}
        return self

    def __exit__(self, *exception) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]

    def _request(self, number: int, frame: FrameType | None) -> None:
        if self.signal_number is not None:
            raise KeyboardInterrupt
        self.signal_number = number
        if self._announce is not None:
            # os.write, not print: the signal may have come in the middle of a print to stderr.
            os.write(2, f"\n{signal.Signals(number).name}: {self._announce}\n".encode())
