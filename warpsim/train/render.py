"""Moved in 0.2.0 to ``warpsim.analysis.render`` (what is run after training has a package of its own)."""

from warpsim.removed import removed

raise removed("the module warpsim.train.render", "0.2.0", "import warpsim.analysis.render instead")
