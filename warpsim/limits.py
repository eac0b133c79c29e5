"""Ranges every environment parameter keeps, so that float32 arithmetic stays finite.

A parameter beyond float32's range becomes inf, and one too close to 0 becomes 0 (and a
division by it NaN). Within these ranges the products and quotients the rules form
(squared lengths, speed over speed cap, rewards summed over an episode) stay well
inside float32, so an accepted parameter never makes NaN or inf.
"""

from __future__ import annotations

MAX_MAGNITUDE = 1e9
"""Largest magnitude of a real parameter (a length, a speed, a reward)."""
MIN_POSITIVE = 1e-9
"""Smallest value of a real parameter that must be > 0 (a length or speed something is divided by)."""
MAX_INT32 = 2**31 - 1
"""Largest count kept in an int32 (a step counter)."""

