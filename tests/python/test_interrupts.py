"""Ctrl-C and size checks of the Python module's long calls (issue 38 item 7): each of model.logits,
.attention, .generate, .examples, .activations and .gradients, sent SIGINT (a timer thread in the calling
process) while it runs, raises KeyboardInterrupt within a second of the signal, and the interpreter's
handler is back; sizes far past the memory are refused before anything is allocated, naming the argument.
Each probe runs in a child process with a time limit, so a call that ignores the signal fails the test
instead of hanging it. (pelab.train and pelab.sweep: tests/python/test_api.py.)"""

import json
import os
import subprocess
import sys
import textwrap

import helpers

pelab = helpers.import_pelab()
LATENCY = 1.0  # seconds from the signal to KeyboardInterrupt
SIGNAL_AFTER = 0.3  # seconds into the call

PROBE = textwrap.dedent("""
    import json, os, signal, sys, threading, time
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
    sent = []
    timer = threading.Timer(%(after)r, lambda: (sent.append(time.monotonic()), os.kill(os.getpid(), signal.SIGINT)))
    start = time.monotonic()
    timer.start()
    try:
        calls[call]()
        out = {"interrupted": False, "seconds": time.monotonic() - start}
    except KeyboardInterrupt as e:
        out = {"interrupted": True, "latency": time.monotonic() - sent[0], "message": str(e)}
    timer.cancel()
    out["handler_back"] = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    print(json.dumps(out))
""") % {"after": SIGNAL_AFTER}


def probe(run_dir, call):
    """The child's report of `call` interrupted, or an AssertionError saying how it failed."""
    try:
        p = subprocess.run([sys.executable, "-c", PROBE, run_dir, call], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"model.{call}: still running 60 s after SIGINT (the signal is not polled)")
    assert p.returncode == 0, f"model.{call}: the probe exited with {p.returncode}:\n{p.stdout}\n{p.stderr}"
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["interrupted"], f"model.{call} finished in {r['seconds']:.2f} s before the signal: make it longer"
    assert r["latency"] <= LATENCY, f"model.{call}: KeyboardInterrupt {r['latency']:.2f} s after SIGINT"
    assert r["handler_back"], f"model.{call}: the interpreter's SIGINT handler is not back"
    print(f"  {call}: KeyboardInterrupt {r['latency'] * 1000:.0f} ms after SIGINT ({r['message']})")


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


def main():
    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp)
        # 48 layers of d_model 16: each call takes seconds (about 0.6 to 3 s here, uninterrupted) while
        # each layer takes tens of milliseconds, so the polls between layers come often.
        run = pelab.train(config, set={"model.n_layers": 48, "train.steps": 2, "eval.lengths": [4], "eval.samples": 4},
                          out=os.path.join(tmp, "deep"), quiet=True)
        check_sizes(run.model())
        for call in ("logits", "attention", "generate", "examples", "activations", "gradients"):
            probe(run.dir, call)
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
