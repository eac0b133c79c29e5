"""What a researcher runs after training: evaluation (of a run, or of an experiment over its
seeds, with its statistics), learning curves, rendered episodes, and a trained policy to act
from Python (``warpsim.load_policy``)."""
