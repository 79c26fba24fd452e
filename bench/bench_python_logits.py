#!/usr/bin/env python3
"""What calling pelab from Python costs: model.logits on a (64, 256) batch against the same forward pass
timed inside C++ (Model._forward_seconds: inputs converted once, no numpy array), alternating one of
each per repeat in one process, min and median; and the time `import pelab` takes in a fresh interpreter.

    PYTHONPATH=build/python OPENBLAS_NUM_THREADS=1 python3 bench/bench_python_logits.py [--repeats 30]

The model is the quick comparison's (experiments/configs/quick.toml: RoPE, d_model 64, 3 layers, 4 heads),
trained for one step into a temporary directory: the weights do not change the cost.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import pelab

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def import_seconds(n):
    code = "import time; t = time.perf_counter(); import pelab; print(time.perf_counter() - t)"
    return [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
            for _ in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--length", type=int, default=256)
    a = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="pelab-bench-") as tmp:
        config = os.path.join(ROOT, "experiments", "configs", "quick.toml")
        run = pelab.train(config, cell=9, set={"train.steps": 1, "train.warmup": 0, "eval.lengths": [16], "eval.samples": 64},
                          out=os.path.join(tmp, "rope"), quiet=True)
        model = run.model()
        tokens = np.random.default_rng(0).integers(0, model.vocab, size=(a.batch, a.length))
        model.logits(tokens), model._forward_seconds(tokens, repeats=2)  # warm the caches
        py, cpp = [], []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            out = model.logits(tokens)
            py.append(time.perf_counter() - t0)
            del out
            cpp += model._forward_seconds(tokens)
    imports = import_seconds(7)

    ms = lambda xs: f"min {1e3 * min(xs):8.2f} ms  median {1e3 * statistics.median(xs):8.2f} ms"
    print(f"{model.encoding}, d_model {model.d_model}, {model.n_layers} layers, vocab {model.vocab}; "
          f"batch ({a.batch}, {a.length}), {a.repeats} repeats, alternating; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    print(f"  C++ forward       {ms(cpp)}")
    print(f"  model.logits      {ms(py)}")
    print(f"  overhead          min {100 * (min(py) / min(cpp) - 1):+.1f}%  "
          f"median {100 * (statistics.median(py) / statistics.median(cpp) - 1):+.1f}%")
    print(f"import pelab        min {min(imports):.3f} s  median {statistics.median(imports):.3f} s (7 fresh interpreters)")


if __name__ == "__main__":
    main()
