"""What the Python module's tests (ctest python.*, tests/CMakeLists.txt) share: skipping where the module
is not built, tiny configs that train in about a second, and the pelab executable."""

import os
import subprocess
import sys
import tempfile

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests
PELAB = os.environ.get("PELAB_BINARY", "")
SOURCE_DIR = os.environ.get("PELAB_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def import_pelab():
    """The module, or exit 77 (skipped) saying why it is not there."""
    if os.environ.get("PELAB_PYTHON_BUILT") != "1":
        print("skipped: the Python module is not built in this build (pybind11 not found, or a sanitized "
              "build; scripts/setup.sh installs pybind11-dev and python3-dev)")
        sys.exit(SKIP)
    import pelab
    return pelab


# copy at train_len 4 (11 tokens), one layer of d_model 16: trains and evaluates in about a second.
TINY = """
[model]
d_model = 16
n_layers = 1
n_heads = 2
[encoding]
name = "rope"
[task]
name = "copy"
train_len = 4
[train]
steps = 40
batch_size = 8
log_every = 20
eval_every = 20
[eval]
lengths = [2, 4, 8]
samples = 16
"""


def tiny_config(directory, sweep=None, name="tiny.toml"):
    """Writes TINY (plus a [sweep] table {key: [values]}) to directory/name; returns the path."""
    text = TINY
    if sweep:
        text += "[sweep]\n" + "".join(f'"{k}" = {v!r}\n'.replace("'", '"') for k, v in sweep.items())
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def cli(*args, check=True):
    """Runs the pelab executable; returns the completed process (text output)."""
    p = subprocess.run([PELAB, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"pelab {' '.join(args)} exited with {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def temp_dir():
    return tempfile.TemporaryDirectory(prefix="pelab-python-")


def require(*modules):
    """Exit 77 (skipped) naming the first of `modules` that is not installed."""
    import importlib
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError:
            print(f"skipped: {m} is not installed (scripts/setup.sh installs python3-{m})")
            sys.exit(SKIP)
