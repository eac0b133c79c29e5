"""Code that still uses a removed API is caught by mypy, as CI runs it over warpsim and the tests:
a test that only a GPU runs cannot go stale unseen."""

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

CONFIG = Path(__file__).resolve().parent.parent / "setup.cfg"
STALE = '''
import warpsim
from warpsim.train import Trainer


def one(trainer: Trainer) -> None:
    print(trainer.generator.get_state())


def two(env: warpsim.Environment) -> None:
    env.launch.prepare_arguments = False


def three(trainer: Trainer) -> None:
    trainer.state_dict()


def four(trainer: Trainer) -> None:
    print(trainer.policies.head.size)
'''


@pytest.mark.slow(seconds=33)
def test_mypy_flags_every_use_of_a_removed_api(tmp_path):
    script = tmp_path / "stale_test.py"
    script.write_text(STALE)
    # its cache beside the script: one in the checkout would show as a change (tests/test_bench.py reads it)
    out, _, status = mypy_api.run(["--config-file", str(CONFIG), "--no-incremental", "--cache-dir",
                                   str(tmp_path / "mypy-cache"), str(script)])
    assert status == 1
    flagged = {line.split(":")[1] for line in out.splitlines() if ": error:" in line}
    assert flagged == {"7", "11", "15", "19"}, out
    assert "Trainer.generator is deprecated: removed in 0.2.0: use trainer.generators[run]" in out
    assert "RemovedEnvironmentMethods.launch is deprecated: removed in 0.2.0: write self.run" in out


@pytest.mark.parametrize("module", ["evaluate", "plot", "render"])
def test_a_moved_module_names_its_new_place(module):
    import importlib

    from warpsim.removed import RemovedError

    with pytest.raises(RemovedError, match=rf"^the module warpsim\.train\.{module} was removed in warpsim 0\.2\.0: "
                                           rf"import warpsim\.analysis\.{module} instead$"):
        importlib.import_module(f"warpsim.train.{module}")


def test_one_head_for_every_role_names_the_roles_own():
    from warpsim.registry import make
    from warpsim.removed import RemovedError
    from warpsim.train.policy import RolePolicies
    from warpsim.train.run_policies import RunPolicies

    env = make("simple_speaker_listener", 1, backend="numpy")
    policies = RolePolicies(env.spec, ["speaker", "listener"], 1, 8, 1)
    assert [policies.heads[role].size for role in ("speaker", "listener")] == [3, 5]
    for owner in (policies, RunPolicies([policies])):
        with pytest.raises(RemovedError, match=r"\.head was removed in warpsim 0\.2\.0: each role has its own: "
                                               r"policies\.heads\[role_name\]$"):
            owner.head  # type: ignore[deprecated]  # the stub itself, on purpose
