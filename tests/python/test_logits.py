"""model.logits from Python equals, to the last bit, the forward pass `pelab eval` runs on the same
checkpoint and inputs (tests/python/logits_reference.cpp), for several encodings, default and explicit
position ids, and evaluation-time settings; attention maps and generation are well-formed."""

import os
import subprocess
import sys

import numpy as np

import helpers

pelab = helpers.import_pelab()
REFERENCE = os.environ["PELAB_LOGITS_REFERENCE"]


def reference_logits(run_dir, tokens, positions, sets, tmp, digits=None):
    B, T = tokens.shape
    paths = [os.path.join(tmp, n) for n in ("tokens.bin", "positions.bin", "logits.bin")]
    tokens.astype("<i4").tofile(paths[0])
    positions.astype("<i4").tofile(paths[1])
    extra = []
    if digits is not None:
        extra = ["digits=" + os.path.join(tmp, "digits.bin")]
        digits.astype("<i4").tofile(extra[0][7:])
    subprocess.run([REFERENCE, run_dir, str(B), str(T), *paths, *extra, *sets], check=True)
    return np.fromfile(paths[2], dtype="<f4").reshape(B, T, -1)


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def main():
    rng = np.random.default_rng(0)
    checked = 0
    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp)
        for encoding, T, sets in [("rope", 20, {}), ("rope", 20, {"encoding.rope.scaling": "yarn", "encoding.rope.factor": 4}),
                                  ("alibi", 16, {"attention.scaling": "log_length"}), ("learned", 0, {}),
                                  ("sinusoidal", 24, {})]:
            run_dir = os.path.join(tmp, encoding)
            if not os.path.exists(run_dir):
                helpers.cli("train", config, "--set", f"encoding.name={encoding}", "--out", run_dir, "--quiet")
            model = pelab.Run(run_dir).model(set=sets)
            if encoding == "learned":
                T = model.train_seq_len  # its table's rows
            B = 3
            tokens = rng.integers(0, model.vocab, size=(B, T))
            per_row = np.sort(np.stack([rng.choice(T + 8, size=T, replace=False) for _ in range(B)]), axis=1)
            if encoding == "learned":
                per_row = np.minimum(per_row, T - 1)  # its table has train_seq_len rows
            shifted = () if encoding == "learned" else (np.arange(T) + 2,)  # (T,): every row
            for positions in (None, per_row) + shifted:
                got = model.logits(tokens, positions)
                full = np.broadcast_to(np.arange(T) if positions is None else positions, (B, T))
                want = reference_logits(run_dir, tokens, full, [f"{k}={v}" for k, v in sets.items()], tmp)
                assert got.dtype == np.float32 and got.shape == (B, T, model.vocab), (got.dtype, got.shape)
                assert same_bits(got, want), f"{encoding} {sets}: max |diff| {np.abs(got - want).max()}"
                checked += 1
            # any integer dtype reads the same ids
            assert same_bits(model.logits(tokens.astype(np.int32)), model.logits(tokens.astype(np.uint8)))

        model = pelab.Run(os.path.join(tmp, "rope")).model()
        tokens = rng.integers(0, model.vocab, size=(2, 9))
        att = model.attention(tokens, layer=0)
        assert att.shape == (2, model.n_heads, 9, 9) and att.dtype == np.float32
        assert np.allclose(att.sum(-1), 1, atol=1e-5)
        assert np.all(np.triu(att, 1) == 0), "causal: no weight on later positions"
        assert same_bits(att, model.attention(tokens, layer=-1))  # one layer: -1 is layer 0
        out = model.generate("1 2 3 4", max_new=5)
        assert out.dtype == np.int32 and out.shape == (5,)
        assert np.array_equal(out, model.generate("1 2 3 4", max_new=5)), "greedy decoding is deterministic"
        print("generated:", model.decode(out))
        sampled = model.generate([0, 3, 4], max_new=6, temperature=1.0, seed=7)
        assert np.array_equal(sampled, model.generate([0, 3, 4], max_new=6, temperature=1.0, seed=7))
        ex = model.examples(8, count=4)
        assert ex["tokens"].shape == (4, model.sequence_length(8)) and ex["positions"].shape == ex["tokens"].shape
        checked += check_abacus(tmp)
        checked += check_blank(tmp)
        checked += check_two_gemm_paths(tmp, config, rng)
    print(f"{checked} logits comparisons bit-identical to the C++ forward of pelab eval")


def trained(tmp, name, settings, steps, length):
    """A tiny model (d_model 16, one layer) trained `steps` steps with `settings` (TOML from [model]'s causal on) in
    tmp/name: the run directory and its model."""
    config = os.path.join(tmp, name + ".toml")
    with open(config, "w") as f:
        f.write(f"[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n{settings}"
                f"[train]\nsteps = {steps}\nbatch_size = 8\n[eval]\nlengths = [{length}]\nsamples = 8\n")
    run_dir = os.path.join(tmp, name)
    helpers.cli("train", config, "--out", run_dir, "--quiet")
    return run_dir, pelab.Run(run_dir).model()


def check_abacus(tmp):
    """A model that reads digit indices (Abacus): examples() supplies them, logits() and attention() take them and
    equal the C++ forward given the same indices; without them, or given them for a model that reads none, a
    ValueError naming digit_index (the forward would silently read every token as a non-digit)."""
    run_dir, model = trained(tmp, "abacus", 'causal = true\n[encoding]\nname = "abacus"\n[task]\nname = "addition"\n'
                                            'train_len = 3\n[task.addition]\nreverse_digits = true\n', steps=20, length=3)
    ex = model.examples(3, count=4)
    assert ex["digit_index"].shape == ex["tokens"].shape and ex["digit_index"].max() >= 3, ex["digit_index"]
    got = model.logits(ex["tokens"], ex["positions"], digit_index=ex["digit_index"])
    want = reference_logits(run_dir, ex["tokens"], ex["positions"], [], tmp, digits=ex["digit_index"])
    assert same_bits(got, want), f"abacus: max |diff| {np.abs(got - want).max()}"
    zeros = reference_logits(run_dir, ex["tokens"], ex["positions"], [], tmp, digits=0 * ex["digit_index"])
    assert not np.array_equal(got, zeros), "the digit indices change the logits"
    att = model.attention(ex["tokens"], layer=0, digit_index=ex["digit_index"])
    assert att.shape[:2] == (4, model.n_heads)
    for call in (lambda: model.logits(ex["tokens"]), lambda: model.attention(ex["tokens"], layer=0),
                 lambda: model.generate("1 2 + 3 4", max_new=3),
                 lambda: model.logits(ex["tokens"], digit_index=ex["digit_index"][:, 1:])):
        try:
            call()
        except ValueError as e:
            assert "digit_index" in str(e) or "digit" in str(e), e
        else:
            raise AssertionError("expected a ValueError about digit indices")
    rope = pelab.Run(os.path.join(tmp, "rope")).model()
    try:
        rope.logits(np.zeros((1, 4), dtype=np.int64), digit_index=np.zeros((1, 4), dtype=np.int64))
    except ValueError as e:
        assert "digit_index" in str(e), e
    else:
        raise AssertionError("expected a ValueError: rope reads no digit indices")
    return 1


def check_blank(tmp):
    """A run in the blank output format: examples() give x and the blanks, logits() equal the C++ forward, and
    generate() refuses (nothing is fed back in that format)."""
    run_dir, model = trained(tmp, "blank", 'causal = false\n[encoding]\nname = "rope"\n[task]\nname = "reverse_string"\n'
                                           'train_len = 4\noutput = "blank"\n', steps=10, length=4)
    ex = model.examples(4, count=3)
    got = model.logits(ex["tokens"], ex["positions"])
    want = reference_logits(run_dir, ex["tokens"], ex["positions"], [], tmp)
    assert same_bits(got, want), f"blank: max |diff| {np.abs(got - want).max()}"
    try:
        model.generate("1 0 1 1", max_new=2)
    except ValueError as e:
        assert "blank" in str(e), e
    else:
        raise AssertionError("expected a ValueError: a blank-format run generates nothing")
    return 1


def check_two_gemm_paths(tmp, config, rng):
    """Two models trained on different GEMM paths ([train] gemm) in one process: each computes on its own
    path (the C++ forward of pelab eval, bit for bit) whichever was loaded or used last."""
    runs = {}
    for path in ("openblas", "libxsmm"):
        run_dir = os.path.join(tmp, "gemm_" + path)
        if helpers.cli("train", config, "--set", "encoding.name=rope", "--set", f"train.gemm={path}", "--out", run_dir,
                       "--quiet", check=False).returncode != 0:
            print(f"skipped: this build cannot train with train.gemm={path}")
            return 0
        runs[path] = run_dir
    models = {p: pelab.Run(d).model() for p, d in runs.items()}  # libxsmm's loaded last
    tokens = rng.integers(0, models["openblas"].vocab, size=(2, 12))
    full = np.broadcast_to(np.arange(12), (2, 12))
    for p in ("openblas", "libxsmm", "openblas"):  # alternating: each call switches the process's path
        want = reference_logits(runs[p], tokens, full, [], tmp)
        assert same_bits(models[p].logits(tokens), want), f"gemm {p}: not the C++ forward on its own path"
    return 3


if __name__ == "__main__":
    sys.exit(main())
