"""Claims of the composer-training skill proved in-process against the installed mosaicml (tiny models, a few
batches each): what the Trainer accepts, counts, logs and loads, and that preflight.py reports what Composer
really raises. Training-forever traps are bounded by a callback that stops the run and records whether the
Trainer would have gone on."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import logging
import pathlib
import warnings

import pytest

from support.composer_kit import classifier, loader, trainer, weights
from support.harness import CUDA, DEVICES
from support.tensors import differing

pytestmark = pytest.mark.composer


def message(action) -> str:
    try:
        action()
    except Exception as exc:  # noqa: BLE001
        return " ".join(f"{type(exc).__name__}: {exc}".split())
    return "no error"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A real 3-batch checkpoint of ``classifier()``."""
    folder = tmp_path_factory.mktemp("ckpt")
    saver = trainer(max_duration="3ba", save_folder=str(folder), save_interval="1ba")
    saver.fit()
    saver.close()
    return folder / "ep0-ba3-rank0.pt"


# ---- packaging facts ----

def test_installed_composer_pins_torch_below_2_7_1():
    assert importlib.metadata.version("mosaicml") == "0.32.1"
    requires = importlib.metadata.requires("mosaicml")
    assert "torch<2.7.1,>=2.6.0" in requires and "torchvision<0.22.1,>=0.21.0" in requires
    assert 'transformers!=4.34.0,<4.54,>=4.11; extra == "nlp"' in requires


def test_trainer_defaults_the_skill_states():
    from composer import Trainer

    defaults = {name: p.default for name, p in inspect.signature(Trainer).parameters.items()}
    assert defaults["save_filename"] == "ep{epoch}-ba{batch}-rank{rank}.pt"
    assert defaults["save_latest_filename"] == "latest-rank{rank}.pt"
    assert defaults["save_interval"] == "1ep" and defaults["save_overwrite"] is False
    assert defaults["save_num_checkpoints_to_keep"] == -1 and defaults["eval_interval"] == 1
    assert defaults["load_strict_model_weights"] is True and defaults["spin_dataloaders"] is True


def test_classifier_defaults_and_int_durations_are_epochs():
    from composer.models import ComposerClassifier

    assert inspect.signature(ComposerClassifier).parameters["loss_fn"].default.__name__ == "soft_cross_entropy"
    assert str(trainer(max_duration=10).state.max_duration) == "10ep"


def test_invalid_names_are_rejected():
    from support.surface_composer import INVALID

    assert set(INVALID) == {"overwrite"}
    assert "unexpected keyword argument 'overwrite'" in message(lambda: trainer(max_duration="1ba", overwrite=True))


# ---- time and durations ----

@pytest.mark.parametrize("duration", ["2iter", "100tok"])
def test_iter_and_tuple_batch_tok_durations_never_end(duration):
    from composer import Callback

    class StopAfter(Callback):
        would_continue = None

        def batch_end(self, state, logger):
            if int(state.timestamp.batch) == 10:  # 2.5 epochs of 4 batches
                StopAfter.would_continue = state.timestamp < state.max_duration
                state.stop_training()

    run = trainer(max_duration=duration, callbacks=[StopAfter()])
    run.fit()
    assert StopAfter.would_continue is True
    assert int(run.state.timestamp.token) == 0 and int(run.state.timestamp.iteration) == 0
    assert int(run.state.timestamp.epoch) == 2


def test_fit_takes_duration_not_max_duration():
    run = trainer()
    assert "unexpected keyword argument 'max_duration'" in message(lambda: run.fit(max_duration="1ba"))
    run.fit(duration="1ba")
    assert int(run.state.timestamp.batch) == 1


def test_fit_again_raises_and_reset_time_restarts():
    run = trainer(max_duration="2ba")
    run.fit()
    assert "The max_duration (2ba) is less than or equal to the elapsed training duration (2ba)" in message(run.fit)
    run.fit(reset_time=True, duration="1ba")
    assert int(run.state.timestamp.batch) == 1


# ---- evaluation and metrics ----

def test_eval_reruns_the_trainers_evaluators_and_metrics_are_separate_copies():
    from composer.core import Evaluator

    run = trainer(max_duration="2ba", eval_dataloader=Evaluator(label="val", dataloader=loader(8)))
    run.fit()
    run.eval()
    assert list(run.state.eval_metrics) == ["val"] and int(run.state.eval_timestamp.batch) == 2
    train_metric = run.state.train_metrics["MulticlassAccuracy"]
    assert train_metric is not run.state.eval_metrics["val"]["MulticlassAccuracy"]


def test_eval_forward_gets_training_outputs_for_train_metrics_and_none_in_eval():
    from composer.models import ComposerClassifier

    seen = []

    class Recording(ComposerClassifier):
        def eval_forward(self, batch, outputs=None):
            seen.append("train" if outputs is not None else "eval")
            return super().eval_forward(batch, outputs)

    import torch

    model = Recording(module=torch.nn.Linear(8, 3), num_classes=3)
    run = trainer(model=model, max_duration="2ba", eval_dataloader=loader(8),
                  optimizers=torch.optim.SGD(model.parameters(), lr=0.1))
    run.fit()
    assert seen == ["train", "train", "eval", "eval"]


def test_update_metric_is_not_implemented_by_default():
    import torch
    from composer import ComposerModel

    class Bare(ComposerModel):
        def forward(self, batch):
            return batch

        def loss(self, outputs, batch, *args, **kwargs):
            return torch.zeros(())

    assert Bare().get_metrics(is_train=False) == {}
    assert message(lambda: Bare().update_metric(None, None, None)) == "NotImplementedError:"


def test_eval_interval_zero_turns_evaluation_off():
    run = trainer(max_duration="2ba", eval_dataloader=loader(8), eval_interval=0)
    run.fit()
    assert int(run.state.eval_timestamp.batch) == 0
    assert all(metric.update_count == 0 for metric in run.state.eval_metrics["eval"].values())


# ---- batches, DataSpec, microbatches ----

def test_default_split_and_sample_counting():
    import torch
    from composer.core import DataSpec

    spec = DataSpec(loader())
    pieces = spec.split_batch({"x": torch.zeros(4, 2), "names": ["a", "b", "c", "d"], "step": 3}, 2)
    assert [piece["names"] for piece in pieces] == [["a", "b"], ["c", "d"]]
    assert [piece["step"] for piece in pieces] == [3, 3] and pieces[1]["x"].shape == (2, 2)
    assert spec.get_num_samples_in_batch({"names": ["a", "b", "c"]}) == 3
    assert message(lambda: spec.split_batch(object(), 2)).startswith(
        "NotImplementedError: The default `split_fn` is unable to split the output of this dataloader.")


def test_float_microbatch_is_accepted_by_the_constructor_and_fails_at_the_first_batch():
    run = trainer(max_duration="1ba", device_train_microbatch_size=0.5)
    assert "does not support floating point microbatch_size" in message(run.fit)
    assert int(run.state.timestamp.batch) == 0


def test_microbatches_take_the_same_optimizer_step():
    import torch

    whole, split = trainer(max_duration="1ba"), trainer(max_duration="1ba", device_train_microbatch_size=2)
    whole.fit()
    split.fit()
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(weights(whole), weights(split)))
    assert int(split.state.timestamp.sample) == int(whole.state.timestamp.sample) == 4


# ---- devices and precision ----

@pytest.mark.skipif(CUDA, reason="CUDA is present: AMP is allowed")
@pytest.mark.parametrize("precision", ["amp_fp16", "amp_bf16", "amp_fp8"])
def test_every_amp_precision_is_gpu_only(precision):
    assert message(lambda: trainer(max_duration="1ba", device="cpu", precision=precision)) == \
        f"ValueError: Precision.{precision.upper()} is not supported for CPU training."


@pytest.mark.skipif(CUDA, reason="CUDA is present")
def test_without_cuda_device_none_is_cpu_fp32():
    run = trainer(max_duration="1ba", device=None)
    assert type(run.state.device).__name__ == "DeviceCPU" and run.state.precision.value == "fp32"


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="CUDA is not available on this machine")
def test_with_cuda_device_none_is_gpu_and_precision_none_is_amp_fp16():
    run = trainer(max_duration="1ba", device=None)
    assert type(run.state.device).__name__ == "DeviceGPU" and run.state.precision.value == "amp_fp16"
    if importlib.util.find_spec("transformer_engine") is None:
        assert message(lambda: trainer(max_duration="1ba", device="gpu", precision="amp_fp8")) != "no error"


def test_progress_bar_prints_to_stderr_and_false_silences_it(capfd):
    trainer(max_duration="1ba", progress_bar=True).fit()
    noisy = capfd.readouterr()
    assert "Config:" in noisy.err and "Config:" not in noisy.out
    trainer(max_duration="1ba", progress_bar=False).fit()
    quiet = capfd.readouterr()
    assert "Config:" not in quiet.err and quiet.out == ""


# ---- run names, autoresume, loading ----

def test_generated_run_names_differ_and_env_names_count(monkeypatch, tmp_path):
    # time in seconds + a random two-word slug (320,289 of them): two names made in one second matched once in CI,
    # so three are made and must not all be one name (a name that never changes fails it every time)
    assert len({trainer(max_duration="1ba").state.run_name for _ in range(3)}) > 1
    for variable in ("COMPOSER_RUN_NAME", "RUN_NAME"):
        with monkeypatch.context() as patch:
            patch.setenv(variable, f"from-{variable}")
            run = trainer(max_duration="1ba", autoresume=True, save_folder=str(tmp_path / variable))
            assert run.state.run_name == f"from-{variable}"


def test_autoresume_logs_that_it_resumed(tmp_path, caplog):
    settings = dict(max_duration="2ba", autoresume=True, run_name="logged", save_folder=str(tmp_path / "{run_name}"),
                    save_interval="1ba")
    first = trainer(**settings)
    first.fit()
    first.close()
    with caplog.at_level(logging.INFO, logger="composer.trainer.trainer"):
        trainer(**{**settings, "max_duration": "3ba"})
    assert any(record.name == "composer.trainer.trainer" and record.getMessage() ==
               "Autoresuming training from checkpoint" for record in caplog.records)


def test_autoresume_without_a_latest_checkpoint_starts_from_load_path(checkpoint, tmp_path):
    run = trainer(max_duration="6ba", autoresume=True, run_name="seeded", save_folder=str(tmp_path / "{run_name}"),
                  load_path=str(checkpoint))
    assert int(run.state.timestamp.batch) == 3


def test_weights_only_load_starts_the_optimizer_and_clock_fresh(tmp_path):
    import torch

    def adam_run(**settings):
        model = classifier()
        return trainer(model=model, optimizers=torch.optim.Adam(model.parameters(), lr=0.01), **settings)

    saver = adam_run(max_duration="2ba", save_folder=str(tmp_path), save_interval="1ba")
    saver.fit()
    saver.close()
    latest = str(tmp_path / "latest-rank0.pt")
    full, weights_only = adam_run(load_path=latest), adam_run(load_path=latest, load_weights_only=True)
    assert int(full.state.timestamp.batch) == 2 and full.state.optimizers[0].state_dict()["state"] != {}
    assert int(weights_only.state.timestamp.batch) == 0 and weights_only.state.optimizers[0].state_dict()["state"] == {}


def test_a_dur_save_interval_saves_at_fractions_of_max_duration(tmp_path):
    run = trainer(max_duration="4ba", save_folder=str(tmp_path), save_interval="0.5dur")
    run.fit()
    run.close()
    assert sorted(path.name for path in tmp_path.glob("ep*.pt")) == ["ep0-ba2-rank0.pt", "ep0-ba4-rank0.pt"]


def test_spin_dataloaders_is_what_makes_a_resume_bitwise_equal(tmp_path):
    def run(**settings):
        return trainer(train_dataloader=loader(shuffle=True), **settings)

    straight = run(max_duration="6ba")
    straight.fit()
    saver = run(max_duration="3ba", save_folder=str(tmp_path), save_interval="1ba")
    saver.fit()
    saver.close()
    spun = run(max_duration="6ba", load_path=str(tmp_path / "latest-rank0.pt"))
    spun.fit()
    unspun = run(max_duration="6ba", load_path=str(tmp_path / "latest-rank0.pt"), spin_dataloaders=False)
    unspun.fit()
    assert not differing(weights(straight), weights(spun))
    assert differing(weights(straight), weights(unspun))


def test_ignore_pattern_that_matches_nothing_still_fails_on_a_changed_head(checkpoint):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        error = message(lambda: trainer(model=classifier(5), max_duration="1ba", load_path=str(checkpoint),
                                        load_weights_only=True, load_strict_model_weights=False,
                                        load_ignore_keys=["state/model/head.*"]))
    assert "size mismatch for module.2.weight" in error
    assert any("were ignored by load_ignore_key state/model/head.*" in str(w.message) for w in caught)


class _Touch:
    """Unpickling this creates a file: stands in for any code a malicious checkpoint could run."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return pathlib.Path.touch, (pathlib.Path(self.path),)


def test_checkpoints_are_pickles_loading_runs_code_and_preflight_does_not(checkpoint, tmp_path, preflight):
    import torch

    marker = tmp_path / "code-ran"
    saved = torch.load(checkpoint, weights_only=False)  # our own file
    saved["state"]["integrations"]["payload"] = _Touch(marker)
    evil = tmp_path / "evil.pt"
    torch.save(saved, evil)

    code, checks = preflight("--max-duration", "4ba", "--load-path", str(evil))
    assert code == 2 and "holds objects beyond plain data" in checks["load.checkpoint"]["detail"]
    assert not marker.exists(), "preflight's reader ran code from the file"

    message(lambda: trainer(max_duration="4ba", load_path=str(evil)))
    assert marker.exists(), "Composer's load ran code stored in the checkpoint"

    marker.unlink()
    code, checks = preflight("--max-duration", "4ba", "--load-path", str(evil), "--trust-checkpoint")
    assert code == 0 and marker.exists(), "--trust-checkpoint unpickles everything, as Composer does"


# ---- preflight.py reports what Composer raises (conftest's ``preflight``: its main() in this process) ----

def conflict_folder(tmp_path):
    folder = tmp_path / "used"
    run = trainer(max_duration="2ba", save_folder=str(folder), save_interval="1ba")
    run.fit()
    run.close()
    return folder


CASES = {
    # id: (preflight arguments, the check that reports it, what Composer does with the same settings)
    "dur": (["--max-duration", "0.5dur"], "max_duration", lambda tmp, ck: trainer(max_duration="0.5dur")),
    "sec": (["--max-duration", "10sec"], "max_duration", lambda tmp, ck: trainer(max_duration="10sec")),
    "fraction": (["--max-duration", "1.5ba"], "max_duration", lambda tmp, ck: trainer(max_duration="1.5ba")),
    "no-unit": (["--max-duration", "abc"], "max_duration", lambda tmp, ck: trainer(max_duration="abc")),
    "zero": (["--max-duration", "0ba"], "max_duration", lambda tmp, ck: trainer(max_duration="0ba").fit()),
    "resume-total": (["--max-duration", "3ba", "--load-path", "{ck}"], "max_duration",
                     lambda tmp, ck: trainer(max_duration="3ba", load_path=str(ck)).fit()),
    "amp-cpu": (["--max-duration", "1ba", "--precision", "amp_bf16"], "precision",
                lambda tmp, ck: trainer(max_duration="1ba", device="cpu", precision="amp_bf16")),
    "precision-name": (["--max-duration", "1ba", "--precision", "bf16"], "precision",
                       lambda tmp, ck: trainer(max_duration="1ba", precision="bf16")),
    "auto-cpu": (["--max-duration", "1ba", "--device-train-microbatch-size", "auto"], "device_train_microbatch_size",
                 lambda tmp, ck: trainer(max_duration="1ba", device="cpu", device_train_microbatch_size="auto")),
    "microbatch-text": (["--max-duration", "1ba", "--device-train-microbatch-size", "two"],
                        "device_train_microbatch_size",
                        lambda tmp, ck: trainer(max_duration="1ba", device_train_microbatch_size="two")),
    "no-run-name": (["--max-duration", "1ba", "--autoresume", "--save-folder", "{tmp}/runs"], "autoresume",
                    lambda tmp, ck: trainer(max_duration="1ba", autoresume=True, save_folder=f"{tmp}/runs")),
    "no-save-folder": (["--max-duration", "1ba", "--autoresume", "--run-name", "r"], "autoresume",
                       lambda tmp, ck: trainer(max_duration="1ba", autoresume=True, run_name="r")),
    "no-latest": (["--max-duration", "1ba", "--autoresume", "--run-name", "r", "--save-folder", "{tmp}/runs",
                   "--save-latest-filename", "none"], "autoresume",
                  lambda tmp, ck: trainer(max_duration="1ba", autoresume=True, run_name="r",
                                          save_folder=f"{tmp}/runs", save_latest_filename=None)),
    "used-folder": (["--max-duration", "2ba", "--save-folder", "{used}", "--save-interval", "1ba"], "save",
                    lambda tmp, ck: trainer(max_duration="2ba", save_folder=f"{tmp}/used", save_interval="1ba").fit()),
}


@pytest.mark.parametrize("case", CASES)
def test_preflight_reports_composers_own_message(case, preflight, checkpoint, tmp_path):
    arguments, check_name, composer_action = CASES[case]
    used = conflict_folder(tmp_path) if "{used}" in arguments else None
    filled = [argument.format(ck=checkpoint, tmp=tmp_path, used=used) for argument in arguments]
    code, checks = preflight(*filled)
    real = message(lambda: composer_action(tmp_path, checkpoint))
    assert real != "no error"
    assert code == 1 and not checks[check_name]["ok"]
    assert real in checks[check_name]["detail"], (real, checks[check_name]["detail"])


@pytest.mark.parametrize("arguments, composer_action", [
    (["--max-duration", "10"], lambda ck: trainer(max_duration=10)),   # an int is epochs
    (["--max-duration", "4ba", "--load-path", "{ck}"], lambda ck: trainer(max_duration="4ba", load_path=str(ck)).fit()),
    (["--max-duration", "1ba", "--device-train-microbatch-size", "2"],
     lambda ck: trainer(max_duration="1ba", device_train_microbatch_size=2).fit()),
], ids=["int-epochs", "resume-past-checkpoint", "integer-microbatch"])
def test_preflight_accepts_what_composer_runs(arguments, composer_action, preflight, checkpoint):
    code, checks = preflight(*[argument.format(ck=checkpoint) for argument in arguments])
    assert code == 0 and all(check["ok"] for check in checks.values()), checks
    assert message(lambda: composer_action(checkpoint)) == "no error"


@pytest.mark.parametrize("device", DEVICES)
def test_preflight_prints_each_decision_and_creates_nothing(device, preflight, checkpoint, tmp_path):
    gpu_only = ["--precision", "amp_bf16", "--device-train-microbatch-size", "auto"] if device == "gpu" else []
    code, checks = preflight(
        "--max-duration", "8ba", "--autoresume", "--run-name", "tune", "--save-folder", f"{tmp_path}/runs/{{run_name}}",
        "--save-interval", "2ba", "--load-path", str(checkpoint), "--changed-head", "--load-weights-only",
        "--no-load-strict-model-weights", "--load-ignore-keys", "state/model/module.2.*", *gpu_only, device=device)
    details = {name: check["detail"] for name, check in checks.items()}
    assert code == 0 and all(check["ok"] for check in checks.values()), details
    assert details["max_duration"].startswith("8ba = 8 batches (optimizer steps) in total; a fresh run starts at 0")
    assert details["autoresume"].startswith(f"no {tmp_path}/runs/tune/latest-rank0.pt yet: this run starts from "
                                            "load_path")
    assert details["load"].startswith("weights only")
    assert details["load_ignore_keys"] == "drops 2 of 4 model tensors: module.2.bias, module.2.weight"
    assert "at 3ba, 12sp, 0ep; saved by composer 0.32.1" in details["load.checkpoint"]
    assert details["changed_head"].startswith("weights-only, non-strict, head keys ignored")
    assert details["precision"] == ("amp_bf16" if device == "gpu" else "fp32 (Composer's default on cpu)")
    assert details["device_train_microbatch_size"].startswith("auto" if device == "gpu" else "None")
    assert details["save"].startswith(f"{tmp_path}/runs/tune/ep{{epoch}}-ba{{batch}}-rank{{rank}}.pt every 2ba")
    assert not (tmp_path / "runs").exists(), "preflight must not create the save folder"


def test_preflight_takes_a_tok_duration_only_where_tokens_are_counted(preflight):
    """A tok max_duration never ends unless the train data reports tokens (test_composer_scripts.py runs both):
    preflight refuses it without --tokens-counted and takes it with the flag."""
    code, checks = preflight("--max-duration", "4096tok")
    assert code == 1 and not checks["max_duration"]["ok"]
    assert "tokens count 0 unless" in checks["max_duration"]["detail"]
    code, checks = preflight("--max-duration", "4096tok", "--tokens-counted")
    assert code == 0 and checks["max_duration"]["ok"], checks["max_duration"]
    assert checks["max_duration"]["detail"].startswith("4096tok = 4096 tokens in total; a fresh run starts at 0")


@pytest.mark.parametrize("duration, meaning", [("3ep", "3ep = 3 epochs"), ("10ba", "10ba = 10 batches (optimizer"),
                                               ("512sp", "512sp = 512 samples")])
def test_preflight_names_the_unit_of_each_duration(preflight, duration, meaning):
    code, checks = preflight("--max-duration", duration)
    assert code == 0 and checks["max_duration"]["detail"].startswith(meaning), checks["max_duration"]


def test_preflight_refuses_an_iteration_duration(preflight):
    """Composer takes '2iter' but its Trainer has no public iteration length: the run would never end."""
    code, checks = preflight("--max-duration", "2iter")
    assert code == 1 and not checks["max_duration"]["ok"]
    assert "no public iteration length, so the run never ends" in checks["max_duration"]["detail"]
