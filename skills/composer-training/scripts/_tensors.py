"""Bitwise comparison of model weights, for the checkpoint smokes of every skill (a resumed run must end with the
very weights of an uninterrupted one).

This file is copied verbatim into each skill's ``scripts/`` folder from ``skill_common/`` at the bundle root (``make
sync``; tests/test_shared_source.py fails when a copy drifts). It imports torch only when called.
"""

from __future__ import annotations


def differing_tensors(reference: dict, other: dict) -> list[str]:
    """The names of ``reference``'s tensors (a state dict: name -> tensor) that ``other`` does not hold bitwise equal
    (same dtype, and torch.equal: same shape, same values; torch.equal alone calls float32 1.0 and float64 1.0
    equal), in ``reference``'s order; a name ``other`` lacks counts as differing.
    ``other`` may hold more names: a checkpoint file leaves out a tied weight (GPT-2's lm_head.weight) that the model
    in memory still lists. [] when every tensor is equal."""
    import torch

    return [name for name, tensor in reference.items()
            if name not in other or tensor.dtype != other[name].dtype or not torch.equal(tensor, other[name])]
