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


def reference_logits(run_dir, tokens, positions, sets, tmp):
    B, T = tokens.shape
    paths = [os.path.join(tmp, n) for n in ("tokens.bin", "positions.bin", "logits.bin")]
    tokens.astype("<i4").tofile(paths[0])
    positions.astype("<i4").tofile(paths[1])
    subprocess.run([REFERENCE, run_dir, str(B), str(T), *paths, *sets], check=True)
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
    print(f"{checked} logits comparisons bit-identical to the C++ forward of pelab eval")


if __name__ == "__main__":
    sys.exit(main())
