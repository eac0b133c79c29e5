"""Adapters from warpsim's batched environments to other RL libraries' APIs.

Each adapter is its own module and needs its library (an optional dependency):
``warpsim.adapters.pettingzoo`` (``pip install 'warpsim[pettingzoo]'``) and
``warpsim.adapters.torchrl`` (``pip install 'warpsim[torchrl]'``). Nothing is imported
here, so ``import warpsim`` never needs them.
"""
