"""Adapters from warpsim's batched environments to other RL libraries' APIs.

Each adapter is its own module and needs its library (an optional dependency):
``warpsim.adapters.pettingzoo`` (the ``pettingzoo`` extra, ``./install.sh pettingzoo``) and
``warpsim.adapters.torchrl`` (the ``torchrl`` extra). Nothing is imported
here, so ``import warpsim`` never needs them.
"""
