"""The API surface each skill teaches, for the prose gate in test_api_names.py.

SURFACE[skill]: callables whose keyword names the skill's prose may cite as `name=...`.
KNOWN_INVALID[skill]: names the skill cites only to say they are wrong (removed, or never existed), each with
the reason; the skill's own tests must prove the installed library rejects every one of them.
Each skill keeps its entries in tests/support/surface_<prefix>.py so route work does not collide.
"""

from .surface_composer import INVALID as COMPOSER_INVALID
from .surface_composer import SURFACE as COMPOSER_SURFACE
from .surface_transformers import INVALID as TRANSFORMERS_INVALID
from .surface_transformers import SURFACE as TRANSFORMERS_SURFACE

SURFACE: dict[str, list[str]] = {
    "composer-training": COMPOSER_SURFACE,
    "transformers-training": TRANSFORMERS_SURFACE,
}
KNOWN_INVALID: dict[str, dict[str, str]] = {
    "composer-training": COMPOSER_INVALID,
    "transformers-training": TRANSFORMERS_INVALID,
}
