"""The PyTorch twin of pelab's model now lives in the package, python/pelab/torch_ref.py (docs/python.md:
`run.torch_model()`); this file keeps `import pelab_ref` working for the scripts beside it
(gen_fixtures.py, gen_init_fixture.py, test_gen_fixtures.py) and bench/bench_torch.py.

It loads that file by its path, without the package (whose __init__ needs the compiled module), and stands
in for itself: `pelab_ref` is then the very module object, so registering an encoding through it registers
it in the one registry.
"""
import importlib.util
import os
import sys

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "pelab", "torch_ref.py")
_spec = importlib.util.spec_from_file_location(__name__, os.path.normpath(_PATH))
_module = importlib.util.module_from_spec(_spec)
sys.modules[__name__] = _module
_spec.loader.exec_module(_module)
