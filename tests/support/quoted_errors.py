"""Registry of producers for quoted error messages: each makes the installed library raise one real error.

A producer takes a scratch directory and returns ``"ExceptionType: message"``. Skill-specific producers live in
``quoted_errors_<skill prefix>.py`` modules beside this one and register themselves with ``@produces("<id>")``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable

PRODUCERS: dict[str, Callable[[Path], str]] = {}


def produces(error_id: str):
    def register(function: Callable[[Path], str]):
        assert error_id not in PRODUCERS, f"two producers for {error_id!r}"
        PRODUCERS[error_id] = function
        return function

    return register


def raised(function: Callable[[], object], expected: type[BaseException] = Exception) -> str:
    """Call ``function`` and return ``"Type: message"`` of what it raised; fail when it raises nothing."""
    try:
        function()
    except expected as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError(f"{getattr(function, '__name__', function)} raised nothing")


def load_producers() -> dict[str, Callable[[Path], str]]:
    """PRODUCERS, once every ``quoted_errors_*.py`` beside this module is imported (importing one registers its
    producers; the libraries are imported only when a producer runs)."""
    for module in sorted(Path(__file__).parent.glob("quoted_errors_*.py")):
        importlib.import_module(f"{__package__}.{module.stem}")
    return PRODUCERS
