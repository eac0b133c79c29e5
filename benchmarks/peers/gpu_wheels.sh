#!/usr/bin/env bash
# The peers' packages that the GPU machine's image lacks, as wheels for its Python (3.12, x86-64 Linux):
#   benchmarks/peers/gpu_wheels.sh DIR
# Run it where pip reaches PyPI; carry DIR to the GPU machine and name it there in PEER_WHEELS for
# benchmarks/gpu_session.sh (stages mpe, mpe-roles, peers-mpe, peers-jaxmarl, peers-jaxmarl-headline). The
# image already holds torch, jax with CUDA, flax, chex, scipy and matplotlib, so each package comes
# without its dependencies. VMAS 1.5.2 and gym 0.26.2 (which VMAS imports) are published as source
# only: they are built into wheels here (pure Python).
set -euo pipefail
dir=$(realpath -m "$1")
mkdir -p "$dir"
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$dir" --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 \
    mpe2==1.1.1 pettingzoo==1.27.0 gymnasium==1.4.0 farama-notifications==0.0.4 pygame-ce \
    pyglet==1.5.27 gym-notices==0.0.8 \
    jaxmarl==0.2.0 gymnax==1.0.1
python3 -m pip wheel --quiet --no-deps --wheel-dir "$dir" gym==0.26.2 vmas==1.5.2
ls -s --block-size=K "$dir"
