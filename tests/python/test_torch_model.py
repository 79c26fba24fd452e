"""run.torch_model(): pelab's PyTorch twin (pelab.torch_ref) loaded with a trained run's checkpoint gives the
logits of model.logits (the C++ forward) within TOLERANCE of their largest magnitude, for EVERY encoding that
has a twin, on held-out examples at the training length and at twice it (where the encoding can read those
positions). Each encoding trains a tiny model for a few steps first, so the weights are a run's, not an init.
Needs torch (Debian's python3-torch, which scripts/setup.sh installs): without it this test fails, not skips.

    PYTHONPATH=build/python /usr/bin/python3 tests/python/test_torch_model.py [ENCODING...]
"""

import os
import sys

import numpy as np

import helpers

pelab = helpers.import_pelab()
TOLERANCE = 1e-5  # of max(1, max |logit|), float32: the twin sums in another order (worst measured: 9e-8)
# Settings an encoding needs beyond the tiny config: abacus reads the digits of an addition; abc a bias file
# (the two-head one of tests/fixtures; without one it adds nothing).
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")
EXTRA = {"abacus": {"task.name": "addition"},
         "abc": {"encoding.abc.bias_file": os.path.join(FIXTURES, "abc_bias_two_heads.txt")}}


def logits_pair(model, tm, n):
    """(C++ logits, twin logits) of 3 held-out examples of size n."""
    import torch
    ex = model.examples(n, count=3)
    want = model.logits(ex["tokens"], ex["positions"], ex.get("digit_index"))
    with torch.no_grad():
        got = tm(torch.from_numpy(ex["tokens"]), torch.from_numpy(ex["positions"])).numpy()
    return want, got


def check(tmp, config, name):
    sets = {"encoding.name": name, "train.steps": 3, "eval.lengths": [4], "eval.samples": 4, **EXTRA.get(name, {})}
    run = pelab.train(config, set=sets, out=os.path.join(tmp, name), quiet=True)
    model, tm = run.model(), run.torch_model()
    assert not tm.training, "torch_model() is in evaluation mode"
    worst = 0.0
    for n in (model.train_len, 2 * model.train_len):
        try:
            want, got = logits_pair(model, tm, n)
        except ValueError as e:  # positions past what the encoding reads (a learned table): training length only
            assert n > model.train_len and "positions" in str(e), e
            print(f"  {name}: length {n} refused by pelab ({e}); checked at the training length only")
            continue
        assert got.shape == want.shape and got.dtype == np.float32, (got.shape, want.shape, got.dtype)
        err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))
        assert err <= TOLERANCE, f"{name} at length {n}: the twin's logits differ by {err:.2e} of max |logit|"
        worst = max(worst, err)
    print(f"  {name}: max |twin - pelab| = {worst:.2e} of max |logit|")
    return worst


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("FAILED: torch is not installed; scripts/setup.sh installs python3-torch (Debian's torch)")
        return 1
    import subprocess
    code = "import sys, pelab; pelab.Run; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"], "import pelab leaves torch alone (run.torch_model() imports it)"
    from pelab import torch_ref
    names = sys.argv[1:] or sorted(torch_ref.ENCODINGS)
    assert len(names) >= 28, f"every twin: {names}"
    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp)
        worst = max(check(tmp, config, n) for n in names)
        try:
            pelab.train(config, set={"model.activation": "relu", "train.steps": 1}, out=os.path.join(tmp, "relu"),
                        quiet=True).torch_model()
            raise AssertionError("a relu MLP was accepted")
        except ValueError as e:
            assert "activation" in str(e), e
    print(f"ok: {len(names)} encodings, worst {worst:.2e} of max |logit| (tolerance {TOLERANCE:.0e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
