"""Moved in 0.2.0 to ``warpsim.analysis.plot`` (what is run after training has a package of its own)."""

from warpsim.removed import removed

raise removed("the module warpsim.train.plot", "0.2.0", "import warpsim.analysis.plot instead")
