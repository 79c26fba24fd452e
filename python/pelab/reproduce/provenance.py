"""What made a page's numbers: per run, eval.json's `provenance` (experiments/run/provenance.hpp: the build's
`git describe`, the CPU, the GEMM path, the BLAS library and kernel, SIMD, threads), and reproduce.sh's
reproduce_times.txt (date, wall and CPU seconds per invocation). Kept as NAME.provenance.json beside the page,
so a page regenerated from its committed results says the same."""
import json
import os

from .table import PageError

FIELDS = ("version", "cpu", "gemm", "blas", "simd", "threads")


def read_times(run_dir):
    path = os.path.join(run_dir, "reproduce_times.txt")
    if not os.path.isfile(path):
        return None
    wall, cpu = 0.0, 0.0  # cpu None once an invocation did not record it ('-')
    lines = [ln.split() for ln in open(path) if ln.strip()]
    for i, p in enumerate(lines, start=1):
        try:
            wall += float(p[1])
            cpu = None if cpu is None or p[2] == "-" else cpu + float(p[2])
        except (IndexError, ValueError):
            raise PageError(f"{path}:{i}: expected 'DATE WALL_S CPU_S|- JOBS [OVERRIDES]'")
    return {"wall": wall, "cpu": cpu, "runs": len(lines), "jobs": lines[-1][3] if len(lines[-1]) > 3 else "?",
            "last": lines[-1][0]}


def collect(run_dir, arms, seeds):
    """{field: {value: runs}} over every run's eval.json provenance, the times, the seeds and the cores here."""
    from .sweep import eval_jsons
    counts, n, missing = {k: {} for k in FIELDS}, 0, 0
    for sub in arms or [""]:
        for _, j in eval_jsons(os.path.join(run_dir, sub)):
            n += 1
            p = j.get("provenance")
            if not isinstance(p, dict):
                missing += 1
                continue
            for k in FIELDS:
                v = str(p.get(k, "unknown"))
                counts[k][v] = counts[k].get(v, 0) + 1
    return {"runs": n, "without_provenance": missing, "fields": counts, "times": read_times(run_dir),
            "seeds": [str(s) for s in seeds], "cores": os.cpu_count()}


def save(p, path):
    with open(path + ".tmp", "w") as f:
        json.dump(p, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise PageError(f"{path}: {e}")


def values(counts):
    return "; ".join(f"{v} ({n} run(s))" if len(counts) > 1 else v for v, n in counts.items()) or "not recorded"


def text(p):
    """The page's provenance paragraph."""
    if p is None:
        return "Provenance: not recorded."
    f, t = p["fields"], p.get("times")
    when = "not recorded (no reproduce_times.txt)" if not t else t["last"]
    cpu_time = ("not recorded" if not t or t["cpu"] is None else
                f"{t['cpu'] / 60:.1f} min CPU (user + sys of the training processes), {t['wall'] / 60:.1f} min wall at "
                f"`--jobs {t['jobs']}` over {t['runs']} invocation(s), on a machine with {p['cores']} cores")
    lines = [f"- build (`git describe`): {values(f['version'])}", f"- CPU: {values(f['cpu'])}",
             f"- GEMM path: {values(f['gemm'])}; BLAS and kernel: {values(f['blas'])}; SIMD: {values(f['simd'])}; "
             f"threads per run: {values(f['threads'])}",
             f"- date: {when}; seeds: {', '.join(p['seeds'])}; {p['runs']} run(s)"
             + (f", {p['without_provenance']} without a provenance record (an older build)" if p["without_provenance"] else ""),
             f"- CPU time: {cpu_time}"]
    if any("OpenBLAS" in v for v in f["gemm"]) or any("Haswell" in v for v in f["blas"]):
        lines.append("- The OpenBLAS kernel decides how GEMMs round: on another kernel (e.g. the CPU's own instead of "
                     "`OPENBLAS_CORETYPE=Haswell`) the numbers differ within the seed spread, and a word near a "
                     "threshold can change (issue #44: cho2024 gave three words on SkylakeX).")
    return "Provenance:\n\n" + "\n".join(lines)
