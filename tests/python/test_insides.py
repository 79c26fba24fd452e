"""The model's insides through the C++ forward and backward (docs/python.md): model.weights(), .set_weights(),
.activations() and .gradients() against the committed reference tests/python/fixtures/insides.safetensors
(PyTorch's float64, written by gen_insides_fixture.py: no torch needed here), and capture against training's
path: with capture on (every layer recorded) the loss, the logits and every gradient are bit for bit those
of the forward and backward that training runs, for every registered encoding (they take the packed,
rotary and split attention paths between them)."""

import json
import os
import struct
import sys

import numpy as np

import helpers

pelab = helpers.import_pelab()
FIXTURE = os.path.join(helpers.SOURCE_DIR, "tests", "python", "fixtures", "insides.safetensors")
TOLERANCE = 2e-4  # of the largest magnitude of each array: float32 against float64
LAYER_KEYS = ("residual", "q", "k", "v", "weights", "attention", "mlp_hidden")
# Settings an encoding needs beyond the tiny config: abacus reads the digits of an addition.
EXTRA = {"abacus": {"task.name": "addition"}}


def read_fixture(path):
    """name -> array and the metadata of a safetensors file (numpy only)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": "<f4", "F64": "<f8", "I32": "<i4"}
    data = raw[8 + n:]
    return {k: np.frombuffer(data[e["data_offsets"][0]:e["data_offsets"][1]], dtype=dtypes[e["dtype"]]).reshape(e["shape"])
            for k, e in header.items()}, meta


def close(name, got, want):
    assert got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}"
    err = float(np.abs(got.astype(np.float64) - want).max() / max(1e-6, np.abs(want).max()))
    assert err <= TOLERANCE, f"{name}: differs by {err:.2e} of its largest magnitude"
    return err


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(np.ascontiguousarray(a).view(np.uint32), np.ascontiguousarray(b).view(np.uint32))


def check_case(tmp, config, name, fx, sets):
    f = {k[len(name) + 1:]: v for k, v in fx.items() if k.startswith(name + ".")}
    model = pelab.train(config, set=sets, out=os.path.join(tmp, name), quiet=True).model()
    weights = {k[len("weights."):]: v for k, v in f.items() if k.startswith("weights.")}
    model.set_weights(weights)
    got = model.weights()
    assert list(got) == [n for n in got] and set(got) == set(weights), sorted(set(got) ^ set(weights))
    assert all(same_bits(got[n], weights[n]) for n in got), "weights() gives back what set_weights() set"
    batch = dict(positions=f["positions"])
    act = model.activations(f["tokens"], targets=f["targets"], mask=f["mask"], **batch)
    grad = model.gradients(f["tokens"], f["targets"], f["mask"], **batch)
    worst = [close("logits", act["logits"], f["logits"]), close("loss", np.array([grad["loss"]]), f["loss"]),
             close("embeddings", act["embeddings"], f["embeddings"]),
             close("embeddings_grad", grad["embeddings_grad"], f["embeddings_grad"]),
             close("final_residual", act["final_residual"], f["final_residual"])]
    assert set(grad["grads"]) == set(weights), "a gradient for every parameter"
    worst += [close(f"grads.{n}", g, f[f"grads.{n}"]) for n, g in grad["grads"].items()]
    assert len(act["layers"]) == model.n_layers
    for i, layer in enumerate(act["layers"]):
        worst += [close(f"layers.{i}.{k}", layer[k], f[f"layers.{i}.{k}"]) for k in LAYER_KEYS]
    print(f"  {name}: {len(worst)} arrays within {max(worst):.1e} of PyTorch's float64")


def check_bitwise(tmp, config, name):
    """Capture on equals training's path to the bit: loss, logits, every gradient."""
    sets = {"encoding.name": name, "train.steps": 2, "eval.lengths": [4], "eval.samples": 4, "model.n_layers": 2}
    model = pelab.train(config, set={**sets, **EXTRA.get(name, {})}, out=os.path.join(tmp, "bits_" + name),
                        quiet=True).model()
    ex = model.examples(model.train_len, count=3)
    args = (ex["tokens"], ex["targets"], ex["mask"], ex["positions"], ex.get("digit_index"))
    plain, captured = model.gradients(*args), model.gradients(*args, capture=True)
    assert "activations" in captured and "activations" not in plain
    assert plain["loss"] == captured["loss"], f"{name}: loss {plain['loss']!r} vs {captured['loss']!r} with capture"
    assert same_bits(plain["logits"], captured["logits"]), f"{name}: logits differ with capture"
    for n in plain["grads"]:
        assert same_bits(plain["grads"][n], captured["grads"][n]), f"{name}: gradient of {n} differs with capture"
    assert same_bits(plain["embeddings_grad"], captured["embeddings_grad"])
    act = model.activations(ex["tokens"], ex["positions"], ex.get("digit_index"), targets=ex["targets"], mask=ex["mask"])
    assert act["loss"] == plain["loss"], f"{name}: activations' loss differs"
    w = act["layers"][0]["weights"]
    assert np.allclose(w.sum(-1), 1, atol=1e-5) or name in ("stick_breaking", "selective"), "softmax rows sum to 1"
    print(f"  {name}: loss {plain['loss']:.6f}, logits and {len(plain['grads'])} gradients equal with capture on")


def check_errors(model):
    tokens = np.zeros((2, 5), dtype=np.int32)
    for f, words in [(lambda: model.gradients(tokens, None), ["targets"]),
                     (lambda: model.gradients(tokens, tokens[:1]), ["targets", "(2, 5)"]),
                     (lambda: model.gradients(tokens, tokens, mask=np.zeros((2, 5))), ["mask", "sums to 0"]),
                     (lambda: model.activations(tokens, mask=np.ones((2, 5))), ["mask", "targets"]),
                     (lambda: model.set_weights({}), ["weights", "no array"]),
                     (lambda: model.set_weights({**model.weights(), "x": np.zeros(1)}), ["weights", "'x'"]),
                     (lambda: model.set_weights({**model.weights(), "ln_f.weight": np.zeros(3)}), ["ln_f.weight", "shape"])]:
        try:
            f()
            raise AssertionError(f"accepted: {words}")
        except ValueError as e:
            assert all(w in str(e) for w in words), (str(e), words)


def main():
    fx, meta = read_fixture(FIXTURE)
    base = json.loads(meta["base"])
    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp)
        for name in sorted(k for k in meta if k not in ("base", "command")):
            check_case(tmp, config, name, fx, {**base, **json.loads(meta[name])})
        names = [e["name"] for e in pelab.encodings()]
        assert len(names) >= 28, names
        for name in names:
            check_bitwise(tmp, config, name)
        check_errors(pelab.Run(os.path.join(tmp, "bits_rope")).model())
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
