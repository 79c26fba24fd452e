"""The notebook-style examples of docs/python.md run on a tiny run and print what they say they print:
examples/training_in_a_notebook.py, examples/inside_a_model.py, examples/torch_twin.py (torch: Debian's
python3-torch, which scripts/setup.sh installs)."""

import os
import subprocess
import sys

import helpers

pelab = helpers.import_pelab()
EXAMPLES = os.path.join(helpers.SOURCE_DIR, "examples")


def example(name, *args):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, f"examples/{name} exited with {p.returncode}:\n{p.stdout}\n{p.stderr}"
    print(f"  examples/{name}: {len(p.stdout.splitlines())} lines")
    return p.stdout


def main():
    with helpers.temp_dir() as tmp:
        config = helpers.tiny_config(tmp)
        out = example("training_in_a_notebook.py", config, "--out", tmp)
        assert "step     20/40" in out and "evaluations seen: [(20," in out and "final evaluation:" in out, out
        run_dir = os.path.join(tmp, "rope")
        out = example("inside_a_model.py", run_dir)
        assert "attention entropy per head" in out and "loss " in out and "per token (row 0)" in out, out
        out = example("torch_twin.py", run_dir)
        diff = float(out.split("max |torch - pelab| = ")[1].split()[0])
        assert diff < 1e-3 and "gradient norm per input token" in out, out
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
