"""Bitwise comparison of weights for the tests: one helper instead of ``all(torch.equal(a, b) for a, b in zip(...))``,
which passed when one side was shorter or named other tensors (the scripts' own is skill_common/_tensors.py)."""

from __future__ import annotations


def differing(reference, other) -> list:
    """What is not bitwise equal (torch.equal: same shape, same values) between two state dicts (name -> tensor) or two
    lists of tensors: the names, a name only one side holds included, or the positions; [] when all are equal. Two
    lists of different lengths raise (zip strict)."""
    import torch

    if isinstance(reference, dict) and isinstance(other, dict):
        names = [*reference, *(name for name in other if name not in reference)]
        return [name for name in names
                if name not in reference or name not in other or not torch.equal(reference[name], other[name])]
    return [index for index, (a, b) in enumerate(zip(reference, other, strict=True)) if not torch.equal(a, b)]
