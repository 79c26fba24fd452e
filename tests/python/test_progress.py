"""Training visible in a notebook (docs/python.md): pelab.train's progress lines reach Python's sys.stdout
(contextlib.redirect_stdout catches them, as a notebook cell would) or a progress callback; on_eval(step,
metrics) sees each periodic evaluation and stops the run when it returns True (as an early stop: the final
evaluation still runs) or raises; pelab.sweep forwards its cells' progress lines, each named by its cell."""

import contextlib
import io
import os
import sys

import helpers

pelab = helpers.import_pelab()


def check_stdout(tmp, config):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        run = pelab.train(config, out=os.path.join(tmp, "shown"))
    text = buf.getvalue()
    assert "step     20/40" in text and "eval @ 20" in text, f"progress not in sys.stdout: {text!r}"
    record = run.record
    assert "step" in record.columns and record["step"].max() == 40, record
    lines = []
    pelab.train(config, out=os.path.join(tmp, "callback"), progress=lines.append)
    assert any(l.startswith("step     40/40") for l in lines), lines
    print(f"  train: {len(text.splitlines())} lines in sys.stdout, {len(lines)} to progress()")


def check_on_eval(tmp, config):
    seen = []

    def stop_at_first(step, metrics):
        seen.append((step, metrics))
        return True

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        run = pelab.train(config, out=os.path.join(tmp, "stopped"), on_eval=stop_at_first)
    assert [s for s, _ in seen] == [20], seen
    assert seen[0][1]["split"] == "eval" and seen[0][1]["step"] == 20 and "token_acc" in seen[0][1], seen[0][1]
    assert list(run.checkpoints) == [20], run.checkpoints
    assert run.eval is not None and sorted(run.eval) == [2, 4, 8], "the final evaluation ran"
    assert "stopped at step 20 by the on_eval callback" in buf.getvalue(), buf.getvalue()
    kept = []
    pelab.train(config, out=os.path.join(tmp, "kept"), on_eval=lambda s, m: kept.append(s) and False, quiet=True)
    assert kept == [20] and list(pelab.Run(os.path.join(tmp, "kept")).checkpoints) == [40]

    def fails(step, metrics):
        raise ValueError("from on_eval")
    try:
        pelab.train(config, out=os.path.join(tmp, "failed"), on_eval=fails, quiet=True)
        raise AssertionError("on_eval's exception was not raised")
    except ValueError as e:
        assert str(e) == "from on_eval", e
    assert list(pelab.Run(os.path.join(tmp, "failed")).checkpoints) == [20], "the run stopped at the evaluation"
    print("  on_eval: stops at step 20 (final evaluation written), keeps going on False, raises its exception")


def check_sweep(tmp):
    config = helpers.tiny_config(tmp, sweep={"encoding.name": ["rope", "alibi"]}, name="sweep.toml")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        d = pelab.sweep(config, jobs=2, out=os.path.join(tmp, "sweep"), report=False)
    text = buf.getvalue()
    for cell in os.listdir(d):
        if os.path.isdir(os.path.join(d, cell)) and cell.startswith("encoding.name="):
            assert f"[{cell}] step     40/40" in text, f"{cell}'s progress not forwarded: {text!r}"
    print(f"  sweep: {len(text.splitlines())} lines, each cell's steps among them")


def main():
    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp)
        check_stdout(tmp, config)
        check_on_eval(tmp, config)
        check_sweep(tmp)
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
