"""Parameters of simple_speaker_listener, with MPE2 1.1.1's names and defaults."""

from dataclasses import dataclass

import numpy as np

from warpsim.validation import check_fields, require_bool, require_int

LANDMARKS = 3
"""The landmarks, one of them the goal; also the words the speaker may say (MPE's dim_c)."""
MOVES = 5
"""The listener's discrete actions: 0 none, 1 left, 2 right, 3 down, 4 up."""
LANDMARK_COLOURS = np.array([[0.65, 0.15, 0.15], [0.15, 0.65, 0.15], [0.15, 0.15, 0.65]], np.float32)
"""Each landmark's colour, what the speaker sees of the goal (MPE2's, in float32)."""
SPEAKER, LISTENER = 0, 1
"""The agents: the speaker says, the listener moves."""
OBSERVATION_SIZES = (LANDMARKS, 2 + 2 * LANDMARKS + LANDMARKS)
"""The speaker's (the goal's colour) and the listener's (its velocity, the landmarks' offsets, the word)."""


@dataclass(frozen=True)
class SimpleSpeakerListenerParams:
    """A speaker who sees which of 3 landmarks is the goal but cannot move, and a listener who moves but does
    not know the goal, only the word the speaker says (MPE2's simple_speaker_listener_v4). Both earn minus the
    squared distance from the listener to the goal."""

    max_cycles: int = 25
    """Steps of an episode (it is then cut: truncated, not terminated); >= 1."""
    continuous_actions: bool = False
    """MPE's Box(0, 1) actions: the speaker's word as 3 values, the listener's force as (a2 - a1, a4 - a3) x 5;
    instead of Discrete(3) and Discrete(5)."""

    def __post_init__(self):
        check_fields(self, require_int, ("max_cycles",), 1, 2**31 - 1)
        check_fields(self, require_bool, ("continuous_actions",))
