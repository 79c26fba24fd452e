"""pelab from Python (docs/python.md).

The registered encodings and tasks; training and sweeps through the command line's own code (the same
files, messages and Ctrl-C handling as `pelab train` / `pelab sweep`); a trained run's config, metrics,
evaluation and checkpoints; its model's logits, attention maps and generations as numpy arrays; and a
sweep's results as one long table, the rows `pelab report` writes to results.csv.

    import pelab
    pelab.sweep("experiments/configs/quick.toml", jobs=2)
    df = pelab.results("runs/quick")                     # pandas DataFrame
    model = pelab.Run("runs/quick/encoding.name=rope__train.seed=0").model()
    logits = model.logits(tokens)                         # (B, T) int -> (B, T, V) float32

pandas is imported only by the functions that return a DataFrame, and only when installed.
"""

import json as _json
import numbers as _numbers
import os as _os

_missing = None
try:
    from . import _pelab
    from ._pelab import ConfigError, Error, Model, encodings, optimizers, tasks
except ImportError as e:  # no compiled module (e.g. a sanitized build): pelab.reproduce still imports
    _missing = str(e)

    class _Missing:
        def __getattr__(self, name):
            raise ImportError(f"pelab.{name} needs the compiled module pelab._pelab ({_missing}); build the target "
                              "pelab_python (docs/python.md); the standard-library submodule pelab.reproduce works without it")

    _pelab = _Missing()

    def __getattr__(name):
        return getattr(_pelab, name)

if _missing is None and _pelab.openblas_advice():
    import warnings as _warnings
    _warnings.warn(_pelab.openblas_advice(), RuntimeWarning, stacklevel=2)

__all__ = ["ConfigError", "Error", "Model", "Run", "encodings", "executable", "optimizers", "report", "results",
           "results_csv", "sweep", "tasks", "train"]


def executable():
    """The pelab executable a sweep runs for its cells: $PELAB_EXECUTABLE, else `pelab` beside this file
    (the build links it there)."""
    path = _os.environ.get("PELAB_EXECUTABLE") or _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "pelab")
    if not (_os.path.isfile(path) and _os.access(path, _os.X_OK)):
        raise FileNotFoundError(f"PELAB_EXECUTABLE: {path} is not an executable file: set PELAB_EXECUTABLE "
                                "to the pelab executable a sweep should run for its cells")
    return path


def _toml(key, v):
    """A Python value as the TOML text `--set KEY=VALUE` reads."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, _numbers.Integral):
        return str(int(v))
    if isinstance(v, _numbers.Real):
        f = float(v)
        return "nan" if f != f else ("inf" if f == float("inf") else ("-inf" if f == float("-inf") else repr(f)))
    if isinstance(v, str):
        return _json.dumps(v)  # a TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml(key, x) for x in v) + "]"
    raise TypeError(f"set[{key!r}]: expected a bool, number, string or list, got {type(v).__name__}")


def _sets(set):
    """{"train.steps": 500} (or ["train.steps=500"]) as KEY=VALUE strings."""
    if set is None:
        return []
    if isinstance(set, dict):
        return [f"{k}={_toml(k, v)}" for k, v in set.items()]
    if isinstance(set, (list, tuple)) and all(isinstance(s, str) for s in set):
        return list(set)
    raise TypeError("set: expected a dict {'section.key': value} or a list of 'section.key=value' strings")


def _set_flags(set):
    flags = []
    for s in _sets(set):
        flags += ["--set", s]
    return flags


def _options(**options):
    """Keyword arguments as flags: None is left out, True is a bare flag, anything else --name VALUE."""
    flags = []
    for name, v in options.items():
        flag = "--" + name.replace("_", "-")
        if v is None or v is False:
            continue
        flags += [flag] if v is True else [flag, str(v)]
    return flags


def _config_path(config):
    path = _os.fspath(config)
    if not _os.path.isfile(path):
        raise FileNotFoundError(f"config: no such file: {path}")
    return path


def _check(command, rc):
    if rc == 3:
        raise Error(f"pelab {command}: training diverged (exit code 3; the messages above say where)")
    if rc != 0:
        raise Error(f"pelab {command} exited with code {rc} (the messages above say why)")


def train(config, set=None, out=None, *, cell=None, resume=False, threads=None, quiet=False, memory_limit=None,
          on_eval=None, progress=None):
    """`pelab train CONFIG --set KEY=VALUE ... [--out OUT]`: trains one run (cell `cell` of a [sweep] grid)
    and returns it as a Run (its record: run.record, a DataFrame). Errors raise pelab.Error (config mistakes
    pelab.ConfigError, with file:line); Ctrl-C stops at the next step, writes a checkpoint and raises
    KeyboardInterrupt (resume=True continues).
    Progress lines go to sys.stdout (a notebook cell shows them), or to progress(line) when given.
    on_eval(step, metrics) -> bool is called after each periodic evaluation ([train] eval_every) with its
    metrics.jsonl record as a dict; True stops the run there as an early stop does (a checkpoint, then the
    final evaluation); an exception in it stops the run and is raised once the run has stopped."""
    path = _config_path(config)
    if on_eval is not None and not callable(on_eval):
        raise TypeError(f"on_eval: expected a callable on_eval(step, metrics) -> bool, got {type(on_eval).__name__}")
    args = ["train", path] + _set_flags(set) + _options(out=out and _os.fspath(out), cell=cell, threads=threads,
                                                        quiet=quiet, memory_limit=memory_limit)
    if resume:
        args.append("--resume")
    from . import progress as _progress
    with _progress.forwarded(progress):
        rc = _pelab.run_command(args, on_eval)
    _check("train", rc)
    if out is not None:
        return Run(out)
    root, cells = _pelab.output_dir(path, _sets(set))
    return Run(_os.path.join(root, cells[cell]) if cells and cell is not None else root)


def sweep(config, jobs=1, set=None, out=None, *, threads=None, report=True, probe=False, memory_limit=None,
          progress=None):
    """`pelab sweep CONFIG --jobs JOBS --set KEY=VALUE ...`: every cell of the config's [sweep] grid, each in
    its own `pelab` process (executable()), then the report; re-running resumes. Returns the sweep directory.
    Ctrl-C is forwarded to the cells, which checkpoint; then KeyboardInterrupt. The sweep's lines and each
    cell's progress lines ("[CELL] step ...", read from its stdout.log) go to sys.stdout, or to progress(line)."""
    path = _config_path(config)
    _pelab.set_executable(executable())
    args = ["sweep", path] + _set_flags(set) + _options(jobs=jobs, out=out and _os.fspath(out), threads=threads,
                                                        no_report=not report, probe=probe, memory_limit=memory_limit)
    from . import progress as _progress
    try:
        root = _os.fspath(out) if out is not None else _pelab.output_dir(path, _sets(set))[0]
    except Error:  # the command says what is wrong with the config, in its own words
        root = None
    with _progress.forwarded(progress), _progress.cells(root, progress):
        rc = _pelab.run_command(args)
    _check("sweep", rc)
    return _os.fspath(out) if out is not None else _pelab.output_dir(path, _sets(set))[0]


def report(sweep_dir, metric=None, plots=True):
    """`pelab report SWEEP_DIR`: summary.md, summary.csv, results.csv, plots/ and report.html."""
    d = _os.fspath(sweep_dir)
    if not _os.path.isdir(d):
        raise FileNotFoundError(f"sweep_dir: no such directory: {d}")
    _check("report", _pelab.run_command(["report", d] + _options(metric=metric, no_plots=not plots)))


def results(sweep_dir, frame=True):
    """A sweep's results as one long table, the rows of its results.csv: run, every swept key but the seed,
    seed, task, train_len, eval_len, len_a and len_b (operand_grid rows; <NA> elsewhere, None in dicts), in_distribution, metric,
    value (NaN where n/a), chance, na_reason ("" where
    there is a value). A pandas DataFrame when pandas is installed (and frame=True), else a list of dicts."""
    columns = _pelab.results_columns(_os.fspath(sweep_dir))
    if frame:
        try:
            import pandas
        except ImportError:
            frame = False
    if not frame:
        names = list(columns)
        return [dict(zip(names, row)) for row in zip(*columns.values())]
    df = pandas.DataFrame(columns)
    for c in ("value", "chance"):
        df[c] = df[c].astype("float64")
    for c in ("len_a", "len_b"):  # operand_grid rows only: nullable integers
        df[c] = df[c].astype("Int64")
    return df


def results_csv(sweep_dir):
    """results.csv's text as `pelab report` writes it."""
    d = _os.fspath(sweep_dir)
    if not _os.path.isdir(d):
        raise FileNotFoundError(f"sweep_dir: no such directory: {d}")
    return _pelab.results_csv(d)


def _per_length(eval_json):
    return {r["length"]: r for r in eval_json["results"]}


class Run:
    """A run directory (what `pelab train` writes). FileNotFoundError when `dir` has no config.toml."""

    def __init__(self, dir):
        self.dir = _os.fspath(dir)
        self._config_text = _pelab.run_config(self.dir, "dir")
        self._config = None

    def __repr__(self):
        return f"pelab.Run({self.dir!r})"

    @property
    def config(self):
        """The resolved config (config.toml) as a dict: {"model": {...}, "encoding": {...}, ...}."""
        if self._config is None:
            import tomllib
            self._config = tomllib.loads(self._config_text)
        return self._config

    @property
    def metrics(self):
        """metrics.jsonl's records (step, split, length, the metrics, lr, grad_norm, tokens_per_s, time): a
        pandas DataFrame when pandas is installed, else a list of dicts. A half-written last line is left out."""
        records = []
        path = _os.path.join(self.dir, "metrics.jsonl")
        if _os.path.exists(path):
            with open(path) as f:
                for line in f:
                    try:
                        records.append(_json.loads(line))
                    except ValueError:
                        pass  # the line a running or stopped run was writing
        try:
            import pandas
        except ImportError:
            return records
        return pandas.DataFrame.from_records(records)

    @property
    def record(self):
        """The training record: metrics.jsonl (one row per logged step and evaluation), as `metrics`."""
        return self.metrics

    @property
    def eval(self):
        """eval.json per eval length: {length: {"length", "in_distribution", "status" ("ok" or "n/a"), "reason",
        the metrics, "chance", "samples", ...}};
        None while the run has not finished."""
        path = _os.path.join(self.dir, "eval.json")
        return _per_length(_json.loads(_pelab.read_eval(path))) if _os.path.exists(path) else None

    @property
    def evals(self):
        """Every evaluation per name: "trained" (eval.json) and each `pelab eval --name NAME` (eval-NAME.json)."""
        out = {}
        for f in sorted(_os.listdir(self.dir)):
            if f == "eval.json" or (f.startswith("eval-") and f.endswith(".json")):
                name = "trained" if f == "eval.json" else f[len("eval-"):-len(".json")]
                out[name] = _per_length(_json.loads(_pelab.read_eval(_os.path.join(self.dir, f))))
        return out

    @property
    def checkpoints(self):
        """The complete checkpoints, {step: directory}, by step."""
        return dict(_pelab.checkpoints(self.dir))

    def model(self, step=None, set=None):
        """The model at checkpoint `step` (default: the newest usable one), with evaluation-time settings
        as `pelab eval --set` takes them (eval.*, encoding.<its encoding>.*, attention.*), e.g.
        set={"encoding.rope.scaling": "yarn", "encoding.rope.factor": 4}."""
        if step is not None and (not isinstance(step, _numbers.Integral) or isinstance(step, bool) or step < 0):
            raise ValueError(f"step: expected a checkpoint step (an integer >= 0), got {step!r}")
        if step is not None and step not in self.checkpoints:
            steps = ", ".join(map(str, self.checkpoints)) or "none"
            raise ValueError(f"step: {self.dir} has no checkpoint of step {step} (its checkpoints: {steps})")
        return Model(self.dir, step, _sets(set))

    def torch_model(self, step=None):
        """The model at checkpoint `step` (default: the newest usable one) as a PyTorch module, pelab's twin
        (pelab.torch_ref, imported here: torch is needed only for this call), in evaluation mode, float32:
        `torch_model(tokens, positions)` with (B, T) int64 tensors gives logits (B, T, V) equal to
        model.logits within 1e-5 of max(1, their largest magnitude) (tests/python/test_torch_model.py)."""
        from . import torch_ref
        model = self.model(step)
        weights, _ = torch_ref.load_safetensors(_os.path.join(model.checkpoint, "weights.safetensors"))
        defaults = {e["name"]: {p["key"]: p["default"] for p in e["params"]} for e in encodings()}
        return torch_ref.from_run(self.config, weights, model.train_seq_len, defaults)
