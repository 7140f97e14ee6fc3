"""composer-training: the callables whose keywords its prose may cite, and names it cites as invalid."""

SURFACE = [
    "composer.Trainer",
    "composer.Trainer.fit",
    "composer.Trainer.eval",
    "composer.Trainer.predict",
    "composer.core.DataSpec",
    "composer.core.Evaluator",
    "composer.models.ComposerClassifier",
]
INVALID: dict[str, str] = {}
