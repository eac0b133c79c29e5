"""The environments warpsim ships, one package each."""

from warpsim.envs.tag_continuous import TagContinuous

__all__ = ["TagContinuous"]
