"""pelab's Python API apart from logits and sweeps: the catalog, pelab.train and pelab.Run, errors with the
command line's messages, bad arguments raising ValueError / FileNotFoundError that name the argument
(never a crash), Ctrl-C during training, and an import that leaves pandas alone."""

import os
import signal
import subprocess
import sys
import threading

import numpy as np

import helpers

pelab = helpers.import_pelab()


def raises(exc, words, f, *args, **kwargs):
    """f(*args, **kwargs) raises exc with every one of `words` in its message; returns the message."""
    try:
        f(*args, **kwargs)
    except exc as e:
        for w in words:
            assert w in str(e), f"{exc.__name__} {str(e)!r} does not name {w!r}"
        return str(e)
    raise AssertionError(f"{getattr(f, '__name__', f)}{args} did not raise {exc.__name__}")


def check_catalog():
    enc = {e["name"]: e for e in pelab.encodings()}
    assert {"none", "learned", "sinusoidal", "rope", "alibi"} <= set(enc), sorted(enc)
    base = {p["key"]: p for p in enc["rope"]["params"]}["base"]
    assert base["type"] == "number" and base["default"] == 10000.0 and base["allowed"] and base["help"]
    assert enc["alibi"]["relative"] and not enc["learned"]["relative"]
    tasks = {t["name"]: t for t in pelab.tasks()}
    assert "copy" in tasks and tasks["copy"]["summary"] and tasks["copy"]["format"]
    assert "adamw" in {o["name"] for o in pelab.optimizers()}


def check_train_and_run(tmp, config):
    run = pelab.train(config, set={"encoding.name": "alibi", "train.steps": 20}, out=os.path.join(tmp, "alibi"),
                      quiet=True)
    assert run.config["encoding"]["name"] == "alibi" and run.config["train"]["steps"] == 20
    assert sorted(run.eval) == [2, 4, 8] and run.eval[4]["in_distribution"]
    assert 0 <= run.eval[8]["token_acc"] <= 1 and not run.eval[8]["in_distribution"]
    assert list(run.checkpoints) == [20]
    metrics = run.metrics
    assert "step" in metrics.columns and set(metrics["split"]) >= {"train", "eval"}
    assert run.evals.keys() == {"trained"}
    return run


def check_errors_as_cli(tmp, config):
    # The same message as the command line's "error: ..." line.
    bad = {"encoding.name": "ropee"}
    msg = raises(pelab.ConfigError, ["ropee", "did you mean 'rope'"], pelab.train, config, set=bad,
                 out=os.path.join(tmp, "x"))
    p = helpers.cli("train", config, "--set", 'encoding.name="ropee"', "--out", os.path.join(tmp, "x"), check=False)
    assert p.returncode == 2 and f"error: {msg}\n" in p.stderr, (msg, p.stderr)
    assert isinstance(pelab.ConfigError("x"), ValueError) and isinstance(pelab.ConfigError("x"), pelab.Error)
    raises(pelab.ConfigError, ["train.stepz"], pelab.train, config, set={"train.stepz": 3})
    raises(FileNotFoundError, ["config", "nope.toml"], pelab.train, os.path.join(tmp, "nope.toml"))
    raises(ValueError, ["--jobs"], pelab.sweep, config, jobs=0)
    raises(TypeError, ["set"], pelab.train, config, set=3)


def check_bad_arguments(tmp, run):
    model = run.model()
    V, T = model.vocab, 6
    ok = np.zeros((2, T), dtype=np.int64)
    raises(ValueError, ["tokens", "dtype"], model.logits, ok.astype(np.float32))
    raises(ValueError, ["tokens", "shape (6,)"], model.logits, ok[0])
    raises(ValueError, ["tokens", "shape"], model.logits, ok[None])
    raises(ValueError, ["tokens", str(V)], model.logits, ok + V)
    raises(ValueError, ["tokens", "-1"], model.logits, ok - 1)
    raises(ValueError, ["tokens"], model.logits, "abc")
    raises(ValueError, ["tokens", "empty"], model.logits, np.zeros((2, 0), dtype=np.int64))
    raises(ValueError, ["positions", "(2, 6)"], model.logits, ok, positions=np.arange(T + 1))
    raises(ValueError, ["positions", "(2, 6)"], model.logits, ok, positions=np.zeros((3, T), dtype=np.int64))
    raises(ValueError, ["positions", "dtype"], model.logits, ok, positions=np.zeros((2, T)))
    raises(ValueError, ["positions"], model.logits, ok, positions=np.full((2, T), -3))
    raises(ValueError, ["layer"], model.attention, ok, layer=model.n_layers)
    raises(ValueError, ["temperature"], model.generate, [1, 2], 3, temperature=-1.0)
    raises(ValueError, ["prompt", "dtype"], model.generate, [1.5, 2.0], 3)
    raises(ValueError, ["step", "20"], run.model, step=7)
    raises(ValueError, ["step"], run.model, step=-1)
    raises(pelab.Error, ["encoding.name", "cannot change at evaluation"], run.model, set={"encoding.name": "rope"})
    # A learned table cannot read positions past its rows: the encoding's own reason, naming the argument.
    learned = pelab.train(os.path.join(tmp, "tiny.toml"), set={"encoding.name": "learned", "train.steps": 2},
                          out=os.path.join(tmp, "learned"), quiet=True).model()
    raises(ValueError, ["positions", "learned"], learned.logits, np.zeros((1, 40), dtype=np.int64))
    # Not a run directory.
    raises(FileNotFoundError, ["dir", "no such directory"], pelab.Run, os.path.join(tmp, "missing"))
    os.makedirs(os.path.join(tmp, "empty"))
    raises(FileNotFoundError, ["dir", "not a run directory"], pelab.Run, os.path.join(tmp, "empty"))
    raises(FileNotFoundError, ["sweep_dir"], pelab.results, os.path.join(tmp, "missing"))


def check_ctrl_c(tmp, config):
    """SIGINT during pelab.train: the run stops at a step with a checkpoint (the CLI's clean stop), then
    KeyboardInterrupt; resume=True finishes it."""
    out = os.path.join(tmp, "stopped")
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        pelab.train(config, set={"train.steps": 200000, "train.checkpoint_every": 1000000}, out=out, quiet=True)
        raise AssertionError("pelab.train was not interrupted")
    except KeyboardInterrupt as e:
        print("interrupted:", e)
    finally:
        timer.cancel()
    run = pelab.Run(out)
    assert run.checkpoints and run.eval is None, "a checkpoint, no eval.json"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "the interpreter's handler is back"


def check_lazy_pandas():
    code = "import sys, pelab; pelab.encodings(); print('pandas' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"], out


def main():
    check_catalog()
    check_lazy_pandas()
    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp)
        run = check_train_and_run(tmp, config)
        check_errors_as_cli(tmp, config)
        check_bad_arguments(tmp, run)
        check_ctrl_c(tmp, config)
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
