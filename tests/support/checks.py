"""The values a smoke script's check carries (``actual`` and ``expected`` in its JSON record, as
references/smoke-script-contract.md defines them), read by value, never parsed back from the ``detail`` text.

``meets`` evaluates ``expected`` against ``actual`` here, apart from the scripts (which decide ``ok`` themselves), so a
check whose values say something else than its ``ok`` is found (tests/test_contract.py)."""

from __future__ import annotations

import math

RECORD_KEYS = ["name", "ok", "detail", "actual", "expected"]
BOUNDS = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}
CONDITIONS = {*BOUNDS, "isclose", "rel_tol", "finite", "in", "startswith", "contains", "excludes"}


def same_value(actual, expected) -> bool:
    """Equal, and of the same JSON type all the way down: 1, 1.0 and true are three values here, as they were three
    texts in a detail ("got 1", "got 1.0", "got True")."""
    if isinstance(actual, list) and isinstance(expected, list):
        return len(actual) == len(expected) and all(map(same_value, actual, expected))
    if isinstance(actual, dict) and isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(same_value(actual[key], expected[key]) for key in actual)
    return type(actual) is type(expected) and actual == expected


def is_conditions(expected) -> bool:
    return isinstance(expected, dict) and bool(expected) and set(expected) <= CONDITIONS


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def meets(actual, expected) -> bool:
    """Whether ``actual`` is what ``expected`` asks: that very value, or the conditions of an object of conditions,
    which may stand for any one value inside an expected object or list."""
    if is_conditions(expected):
        return all(condition(actual, name, bound, expected) for name, bound in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(map(meets, actual, expected))
    if isinstance(expected, dict):
        return isinstance(actual, dict) and actual.keys() == expected.keys() and \
            all(meets(actual[key], expected[key]) for key in expected)
    return same_value(actual, expected)


def condition(actual, name: str, bound, conditions: dict) -> bool:
    if name in BOUNDS:
        return is_number(actual) and is_number(bound) and BOUNDS[name](float(actual), float(bound))
    if name == "isclose":
        return is_number(actual) and math.isclose(actual, bound, rel_tol=conditions.get("rel_tol", 1e-9))
    if name == "rel_tol":
        return "isclose" in conditions
    if name == "finite":
        return bound is True and is_number(actual) and math.isfinite(actual)
    if name == "in":
        return any(same_value(actual, item) for item in bound)
    if name == "startswith":
        return isinstance(actual, str) and actual.startswith(bound)
    if name == "contains":
        if isinstance(actual, str):
            return isinstance(bound, str) and bound in actual
        return isinstance(actual, list) and all(any(same_value(item, held) for held in actual) for item in bound)
    if name == "excludes":
        return isinstance(actual, list) and not any(same_value(item, held) for item in bound for held in actual)
    raise AssertionError(f"unknown condition {name!r}")


def assert_equal_check(check: dict, value) -> None:
    """``check`` passed as an equality of ``value``: it carries ``value`` as both actual and expected."""
    assert check["ok"] and same_value(check["actual"], value) and same_value(check["expected"], value), (value, check)
