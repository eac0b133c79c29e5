"""A hook an Environment subclass has not written says which one, and where its docs are."""

import re
from pathlib import Path

import numpy as np
import pytest

import warpsim
from warpsim import Environment
from warpsim.envs.template import Beacon

DOCS = Path(__file__).resolve().parents[1] / "docs" / "custom_envs.md"


@pytest.mark.parametrize("hook, backend", [
    ("describe", "numpy"), ("reset_numpy", "numpy"), ("step_numpy", "numpy"),
    ("reset_cuda", "cuda"), ("step_cuda", "cuda"),
])
def test_a_missing_hook_is_named_with_the_docs_section_that_shows_it(hook, backend):
    incomplete = type("Incomplete", (Beacon,), {hook: getattr(Environment, hook)})
    with pytest.raises(NotImplementedError, match=rf"^Incomplete does not define {hook}\(\), which .* needs; "
                                                  r"see docs/custom_envs.md, section '") as error:
        env = warpsim.make(incomplete, 1, backend=backend, num_agents=2)
        env.step(np.zeros((1, 2, 1), np.int32))
    named = re.search(r"section '(.+)'$", str(error.value))
    assert named is not None
    section = named.group(1)
    assert f"\n## {section}\n" in DOCS.read_text(), f"docs/custom_envs.md has no section '{section}'"
