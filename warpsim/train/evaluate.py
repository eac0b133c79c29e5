"""Moved in 0.2.0 to ``warpsim.analysis.evaluate`` (what is run after training has a package of its own)."""

from warpsim.removed import removed

raise removed("the module warpsim.train.evaluate", "0.2.0", "import warpsim.analysis.evaluate instead")
