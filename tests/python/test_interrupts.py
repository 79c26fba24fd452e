"""Ctrl-C and size checks of the Python module's long calls (issue 38 item 7): each of model.logits,
.attention, .generate, .examples, .activations and .gradients, run in a child process and sent SIGINT by a
timer thread of this test while it runs, raises KeyboardInterrupt within a second of the signal, and the
interpreter's handler is back; sizes far past the memory are refused before anything is allocated, naming
the argument. A call that ignores the signal fails the test (60 s limit) instead of hanging it.
(pelab.train and pelab.sweep: tests/python/test_api.py.)"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import helpers

pelab = helpers.import_pelab()
LATENCY = 1.0  # seconds from the signal to KeyboardInterrupt
SIGNAL_AFTER = 0.3  # seconds into the call

PROBE = textwrap.dedent("""
    import json, signal, sys, time
    import numpy as np
    import pelab
    model = pelab.Run(sys.argv[1]).model()
    call = sys.argv[2]
    tokens = np.random.default_rng(0).integers(0, model.vocab, size=(8, 1024))
    calls = {
        "logits": lambda: model.logits(tokens),
        "attention": lambda: model.attention(tokens[:4, :512], layer=-1),
        "generate": lambda: model.generate([1, 2, 3], max_new=100000),
        "examples": lambda: model.examples(3_000_000, count=4),
        "activations": lambda: model.activations(tokens[:4]),
        "gradients": lambda: model.gradients(tokens[:4, :768], tokens[:4, :768]),
    }
    print("calling", flush=True)
    start = time.time()
    try:
        calls[call]()
        out = {"interrupted": False, "seconds": time.time() - start}
    except KeyboardInterrupt as e:
        out = {"interrupted": True, "at": time.time(), "message": str(e)}
    out["handler_back"] = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    print(json.dumps(out), flush=True)
""")


def probe(run_dir, call):
    """Runs `call` in a child and sends it SIGINT from a timer here SIGNAL_AFTER seconds into the call
    (from outside: a call that holds the GIL would delay a timer thread of its own process); raises
    AssertionError saying how it failed."""
    child = subprocess.Popen([sys.executable, "-c", PROBE, run_dir, call], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "calling", child.communicate()
    sent = []
    timer = threading.Timer(SIGNAL_AFTER, lambda: (sent.append(time.time()), child.send_signal(signal.SIGINT)))
    timer.start()
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise AssertionError(f"model.{call}: still running 60 s after SIGINT (the signal is not polled)")
    finally:
        timer.cancel()
    assert child.returncode == 0, f"model.{call}: the probe exited with {child.returncode}:\n{out}\n{err}"
    r = json.loads(out.strip().splitlines()[-1])
    assert r["interrupted"], f"model.{call} finished in {r['seconds']:.2f} s before the signal: make it longer"
    latency = r["at"] - sent[0]
    assert latency <= LATENCY, f"model.{call}: KeyboardInterrupt {latency:.2f} s after SIGINT"
    assert r["handler_back"], f"model.{call}: the interpreter's SIGINT handler is not back"
    print(f"  {call}: KeyboardInterrupt {latency * 1000:.0f} ms after SIGINT ({r['message']})")


def check_sizes(model):
    """Enormous requests refused before any allocation, in a child limited to 2 GiB of address space
    beyond what it has at start (so an attempt to allocate fails there rather than here)."""
    code = textwrap.dedent("""
        import resource, sys
        import numpy as np
        import pelab
        model = pelab.Run(sys.argv[1]).model()
        vm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:")][0]
        resource.setrlimit(resource.RLIMIT_AS, (vm + (2 << 30),) * 2)
        for name, f in [("examples", lambda: model.examples(10**9)),
                        ("examples count", lambda: model.examples(8, count=10**10)),
                        ("gradients", lambda: model.gradients(np.zeros((1, 10**6), dtype=np.int32),
                                                              np.zeros((1, 10**6), dtype=np.int32))),
                        ("activations", lambda: model.activations(np.zeros((64, 40000), dtype=np.int32)))]:
            try:
                f()
                print(name, "ACCEPTED")
            except pelab.Error as e:
                print(name, "refused:", e)
    """)
    p = subprocess.run([sys.executable, "-c", code, model.dir], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"the size probe exited with {p.returncode}:\n{p.stdout}\n{p.stderr}"
    lines = p.stdout.strip().splitlines()
    print("  " + "\n  ".join(lines))
    assert len(lines) == 4 and all(" refused: " in l and "needs about" in l for l in lines), lines
    assert "n, count: model.examples" in lines[0] and "tokens: model.gradients" in lines[2], lines
    for n in (2**48 + 1, 2**64 - 1):  # past any memory, and where a sequence length would overflow
        try:
            model.examples(n)
            raise AssertionError(f"examples({n}) accepted")
        except ValueError as e:
            assert str(e).startswith(f"n: {n} is too large"), e


def check_estimate(run_dir):
    """A long forward (model.logits) prints its time estimate and progress on stderr, as `pelab predict`
    does (issue 38 item 9); PELAB_PROGRESS_AFTER=0 makes this short call count as long."""
    code = ("import sys, numpy as np, pelab; m = pelab.Run(sys.argv[1]).model(); "
            "m.logits(np.zeros((4, 2048), dtype=np.int32))")
    env = dict(os.environ, PELAB_PROGRESS_AFTER="0")
    p = subprocess.run([sys.executable, "-c", code, run_dir], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, f"the estimate probe exited with {p.returncode}:\n{p.stdout}\n{p.stderr}"
    assert "estimate: a forward pass of 4 row(s) of 2048 tokens takes about" in p.stderr, p.stderr
    assert "computing a forward pass: layer " in p.stderr, p.stderr
    quiet = subprocess.run([sys.executable, "-c", code, run_dir], capture_output=True, text=True, timeout=120)
    assert "estimate:" not in quiet.stderr, quiet.stderr  # under the default 10 s: silent
    print("  logits: " + p.stderr.splitlines()[0])


def main():
    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp)
        # 48 layers of d_model 16: each call takes seconds (about 0.6 to 3 s here, uninterrupted) while
        # each layer takes tens of milliseconds, so the polls between layers come often.
        run = pelab.train(config, set={"model.n_layers": 48, "train.steps": 2, "eval.lengths": [4], "eval.samples": 4},
                          out=os.path.join(tmp, "deep"), quiet=True)
        check_sizes(run.model())
        check_estimate(run.dir)
        for call in ("logits", "attention", "generate", "examples", "activations", "gradients"):
            probe(run.dir, call)
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
