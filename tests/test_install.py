"""A non-editable wheel installs warpsim.kernels, warpsim.envs and the py.typed marker, and imports
outside the repo."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow(seconds=16)
def test_wheel_installs_the_mapped_packages(tmp_path):
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
                   check=True, timeout=600)
    (wheel,) = wheels.glob("warpsim-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert "warpsim/py.typed" in archive.namelist(), "type checkers need the py.typed marker"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                    str(wheel)], check=True, timeout=600)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    code = ("import warpsim, warpsim.envs, warpsim.kernels, warpsim.kernels.random; "
            "print(warpsim.__file__); print(warpsim.envs.tag_continuous.TagContinuous.name); "
            "print(','.join(sorted(warpsim.registry.env_class(i).__module__.split('.')[2] "
            "for i in warpsim.registered())))")
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", code], cwd=outside, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    location, name, folders = done.stdout.split()
    assert Path(location).is_relative_to(target)
    assert name == "tag_continuous"
    assert folders.split(",") == sorted(folder.parent.name for folder in (REPO / "envs").glob("*/__init__.py")), \
        "the wheel holds and registers every folder of envs/, one id each"


def test_numpy_is_pinned_below_the_release_numba_cuda_cannot_compile_with():
    # numba-cuda 0.30.4 calls np.row_stack, which NumPy 2.5 removed; numba itself admits numpy<2.6.
    import configparser

    from packaging.requirements import Requirement

    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    requirements = [Requirement(line) for line in setup["options"]["install_requires"].splitlines()
                    if line.strip() and not line.strip().startswith("#")]
    (numpy,) = [r for r in requirements if r.name == "numpy"]
    assert "2.4.6" in numpy.specifier and "1.26.4" in numpy.specifier
    assert "2.5.0" not in numpy.specifier and "2.5.2" not in numpy.specifier
