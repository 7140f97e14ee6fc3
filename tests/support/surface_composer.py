"""composer-training: the callables whose keywords its prose may cite, and names it cites as invalid."""

SURFACE = [
    "composer.Trainer",
    "composer.Trainer.fit",
    "composer.Trainer.eval",
    "composer.Trainer.predict",
    "composer.core.DataSpec",
    "composer.core.Evaluator",
    "composer.models.ComposerClassifier",
    "composer.ComposerModel.eval_forward",
    "composer.optim.CosineAnnealingWithWarmupScheduler",
    "torch.utils.data.DataLoader",
]
# Proved rejected by tests/test_composer_claims.py::test_invalid_names_are_rejected.
INVALID: dict[str, str] = {
    "overwrite": "Composer's FileExistsError says 'set overwrite=True', but the Trainer keyword is save_overwrite",
}
