"""Packages every folder of envs/ as warpsim.envs.<folder>, so that a new built-in environment touches
nothing outside its folder; setup.cfg lists the other packages and holds the rest of the metadata."""

import configparser
from pathlib import Path

from setuptools import setup

root = Path(__file__).resolve().parent
config = configparser.ConfigParser()
config.read(root / "setup.cfg")
listed = config["options"]["packages"].split()
environments = [f"warpsim.envs.{folder.parent.name}" for folder in sorted((root / "envs").glob("*/__init__.py"))]
setup(packages=listed + environments)
