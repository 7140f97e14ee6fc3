"""The bitwise weight comparison behind every "resumes bit-exact" claim (skill_common/_tensors.py), each skill's own
copy as its checkpoint_smoke.py imports it: fed the smallest difference there is, not only runs that really are
identical (an allclose in its place passed every resume test: issue #24)."""

from __future__ import annotations

import pytest
import torch

from support.harness import import_script, skill_dirs, skill_param


@pytest.fixture(params=[skill_param(skill) for skill in skill_dirs()])
def differing_tensors(request):
    """The comparator the skill's checkpoint_smoke.py calls (its own copy of _tensors.py)."""
    return import_script(request.param / "scripts" / "checkpoint_smoke.py").differing_tensors


def reference() -> dict:
    generator = torch.Generator().manual_seed(0)
    return {"layer.weight": torch.randn(4, 3, generator=generator), "layer.bias": torch.randn(4, generator=generator),
            "step": torch.tensor(7)}


def test_equal_weights_differ_nowhere(differing_tensors):
    weights = reference()
    assert differing_tensors(weights, {name: tensor.clone() for name, tensor in weights.items()}) == []


def test_one_ulp_in_one_element_differs(differing_tensors):
    weights = reference()
    other = {name: tensor.clone() for name, tensor in weights.items()}
    other["layer.weight"][2, 1] = torch.nextafter(other["layer.weight"][2, 1], torch.tensor(float("inf")))
    assert differing_tensors(weights, other) == ["layer.weight"]


def test_a_shape_change_differs_even_where_it_broadcasts(differing_tensors):
    weights = {"bias": torch.ones(4)}
    assert differing_tensors(weights, {"bias": torch.ones(1, 4)}) == ["bias"]
    assert differing_tensors(weights, {"bias": torch.ones(1)}) == ["bias"]


def test_a_dtype_change_differs_even_with_equal_values(differing_tensors):
    weights = {"step": torch.tensor([1.0, 2.0])}
    assert differing_tensors(weights, {"step": torch.tensor([1.0, 2.0], dtype=torch.float64)}) == ["step"]


def test_a_missing_name_differs_and_an_extra_one_does_not(differing_tensors):
    weights = reference()
    assert differing_tensors(weights, {"layer.weight": weights["layer.weight"]}) == ["layer.bias", "step"]
    assert differing_tensors({"step": weights["step"]}, weights) == []

