#!/usr/bin/python3
"""PyTorch side of the training-throughput benchmark (bench/bench_train.cpp is the pelab side).

The model is pelab's Transformer as tests/pytorch/pelab_ref.py defines it (the module the parity fixtures
come from: pre-LN decoder, fused qkv, exact-erf GELU MLP of width 4d, untied LM head, LayerNorm eps 1e-5;
any encoding it registers, `all` = the eleven of bench_train). It is timed in the
fastest form we found for PyTorch 1.13 on one CPU thread (`--variant`, default `best`):

  ref     pelab_ref.Model as written (attention spelled out with masked_fill + softmax), pelab_ref.masked_ce,
          torch.optim.AdamW with its defaults (foreach off on CPU in torch 1.13)
  eager   bench/torch_fast.py's FastModel: baddbmm with an additive mask, rope on q and k together, tables
          and masks built once, cross_entropy with ignore_index, AdamW(foreach=True)
  script  eager with every block compiled by torch.jit.script
  trace   eager with the whole model traced by torch.jit.trace (the batch and positions are fixed)
  best    the variant that won for the config in bench/README.md's comparison (BEST below)

Config (d) is experiments/reproduce/deletang.toml's shape: an encoder (no causal mask) over x of n tokens
then n blanks, the loss on the blanks, one size n per step from mixed_sizes (bench_train.cpp's sequence);
its step time is the mean over those steps.

Every step: forward, loss, backward, AdamW step, zero_grad(set_to_none=True). Before timing a fast
variant, a separate process checks that it computes what pelab_ref.Model computes (loss and every
gradient on the cell's batch, float64, pelab_ref's fixture init) and the cell fails if not.

    /usr/bin/python3 bench/bench_torch.py [--config a|b|c|d|all] [--encoding NAME|all] [--steps N]
        [--warmup N] [--threads N] [--variant ref|eager|script|trace|best] [--no-check] [--json]
    /usr/bin/python3 bench/bench_torch.py --recipe-file FILE [--threads N] [--no-check]
        the PyTorch twin of a recipe's main cell on the batches `bench_recipe --dump FILE` wrote
        (bench/torch_recipe.py; scripts/bench_recipe.sh runs both sides)
    /usr/bin/python3 bench/bench_torch.py --compare ref,eager,script,trace [--rounds 3] [--config ...]
        times the variants alternately in fresh processes (round 1: each variant once, round 2: ...)
        and prints per variant the min and median of the per-round median step times (wall clock), and
        the median of the per-round median CPU times (less sensitive to other load).

Threads: OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and OMP_WAIT_POLICY=PASSIVE are set before torch is
imported, then torch.set_num_threads(N); OPENBLAS_CORETYPE is left as the caller set it (scripts/bench.sh
gives both sides pelab's kernel). Each (config, encoding) cell runs in a fresh process so its peak RSS
(ru_maxrss) is its own. Exit status 3 (and a message) when torch cannot be imported, 4 when a fast
variant does not match the reference.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

CONFIGS = {  # name -> (d_model, n_layers, n_heads, batch, seq, steps, warmup): same as bench_train.cpp
    "a": (64, 2, 4, 32, 32, 300, 30),
    "b": (128, 4, 4, 32, 64, 40, 5),
    "c": (256, 4, 8, 16, 128, 12, 3),
    "d": (64, 5, 8, 128, 80, 20, 40),  # seq: the longest T (2 x 40); see MIXED
}
MIXED = {"d": 40}  # config -> largest problem size n: an encoder over x plus n blanks (T = 2n), one n per step
MIXED_SEED = 2026  # bench_train.cpp's kMixedSeed
ENCODINGS = ["none", "learned", "sinusoidal", "rope", "alibi", "t5", "shaw", "fire", "kerple", "xpos",
             "cope"]  # `all`, as bench_train's
VARIANTS = ["ref", "eager", "script", "trace", "eager_avx512", "script_avx512"]
BEST = {"a": "eager", "b": "script_avx512", "c": "script_avx512", "d": "script_avx512"}  # bench/README.md: the comparison (noisy)
VOCAB = 20
HERE = os.path.dirname(os.path.abspath(__file__))
REF_DIR = os.path.join(os.path.dirname(HERE), "tests", "pytorch")
CHECK_TOL = 1e-9  # float64: loss difference and worst gradient difference relative to the gradient's max


def rss_mb(field="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default="all", choices=list(CONFIGS) + ["all"])
    p.add_argument("--encoding", default="all", help="an encoding of tests/pytorch/pelab_ref.py, or all")
    p.add_argument("--steps", type=int, default=-1, help="timed steps (default: the config's)")
    p.add_argument("--warmup", type=int, default=-1, help="untimed steps first (default: the config's)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--variant", default="best", choices=VARIANTS + ["best"])
    p.add_argument("--no-check", action="store_true", help="skip the check against pelab_ref (already done)")
    p.add_argument("--check-only", action="store_true", help="only check the variant against pelab_ref")
    p.add_argument("--compare", default="", help="comma-separated variants to time alternately")
    p.add_argument("--rounds", type=int, default=3, help="--compare: rounds (each variant once per round)")
    p.add_argument("--json", action="store_true", help="one JSON line per cell")
    p.add_argument("--recipe-file", default="", help="time the PyTorch twin of a recipe's main cell on the batches "
                   "`bench_recipe --dump FILE` wrote (bench/torch_recipe.py; one JSON line)")
    a = p.parse_args()
    if a.threads < 1 or a.steps == 0 or a.steps < -1 or a.warmup < -1 or a.rounds < 1:
        p.error("--threads, --steps and --rounds must be >= 1, --warmup >= 0")
    if a.compare:
        bad = [v for v in a.compare.split(",") if v not in VARIANTS]
        if bad:
            p.error(f"--compare: unknown variant(s) {bad}; known: {', '.join(VARIANTS)}")
    return a


def cells(a):
    return [(c, e) for c in (CONFIGS if a.config == "all" else [a.config])
            for e in (ENCODINGS if a.encoding == "all" else [a.encoding])]


def cell_cmd(a, c, e, variant, extra=()):
    return [sys.executable, os.path.abspath(__file__), "--config", c, "--encoding", e, "--threads", str(a.threads),
            "--steps", str(a.steps), "--warmup", str(a.warmup), "--variant", variant, *extra]


def run_children(a):
    """One fresh interpreter per cell: peak RSS must not mix across cells."""
    failed = 0
    for c, e in cells(a):
        cmd = cell_cmd(a, c, e, a.variant, (["--json"] if a.json else []) + (["--no-check"] if a.no_check else []))
        sys.stdout.flush()
        r = subprocess.run(cmd)
        if r.returncode == 3:
            return 3
        if r.returncode != 0:
            print(f"bench_torch: cell config {c} encoding {e} failed", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def run_compare(a):
    """Variants alternately, each run in a fresh process, `rounds` times; min and median of the per-round medians."""
    variants = a.compare.split(",")
    print(f"variants alternately, {a.rounds} rounds, {a.threads} thread(s); step time = median over the cell's "
          f"timed steps; load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print(f"{'cfg':3} {'encoding':10} {'variant':7} | {'min ms':>9} {'median ms':>9} {'spread':>6} | "
          f"{'cpu ms':>9} {'spread':>6} | rounds (wall ms)")
    for c, e in cells(a):
        for v in variants:  # checked once per cell, outside the timed rounds
            if v != "ref" and subprocess.run(cell_cmd(a, c, e, v, ["--check-only"]), stdout=subprocess.DEVNULL).returncode:
                print(f"bench_torch: variant {v} does not match pelab_ref at config {c} encoding {e}", file=sys.stderr)
                return 4
        times, cpus = {v: [] for v in variants}, {v: [] for v in variants}
        for _ in range(a.rounds):
            for v in variants:
                out = subprocess.run(cell_cmd(a, c, e, v, ["--json", "--no-check"]), capture_output=True, text=True)
                if out.returncode:
                    sys.stderr.write(out.stderr)
                    return out.returncode
                r = json.loads(out.stdout.strip().splitlines()[-1])
                times[v].append(r["step_ms"])
                cpus[v].append(r["cpu_ms"])
        for v in variants:
            t, u = times[v], cpus[v]
            print(f"{c:3} {e:10} {v:7} | {min(t):9.3f} {statistics.median(t):9.3f} {100 * (max(t) - min(t)) / min(t):5.1f}% | "
                  f"{statistics.median(u):9.3f} {100 * (max(u) - min(u)) / min(u):5.1f}% | "
                  + " ".join(f"{x:.3f}" for x in t), flush=True)
    print(f"load average now {' '.join(open('/proc/loadavg').read().split()[:3])}")
    return 0


# glibc returns freed blocks above the mmap threshold to the system at once, so a training step that frees
# and re-allocates its activations page-faults them in again every step. The fast variants run with the
# threshold and the trim threshold raised (what LD_PRELOAD of jemalloc/tcmalloc achieves, recommended by
# Intel's PyTorch CPU tuning guide): freed buffers stay in the heap and are reused. hugetlb=1 makes glibc
# mark its heap MADV_HUGEPAGE (transparent huge pages, glibc >= 2.35), as pelab's allocator marks its
# blocks of 2 MiB and more (core/allocator.cpp): the same TLB for both sides.
MALLOC_KEEP = ("glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824"
               ":glibc.malloc.hugetlb=1")


def variant_env(variant):
    """Environment a variant's process needs from its start (ld.so reads GLIBC_TUNABLES at exec; torch
    reads ATEN_CPU_CAPABILITY at its first kernel dispatch)."""
    if variant == "ref":
        return {}
    env = {"GLIBC_TUNABLES": MALLOC_KEEP}
    if variant.endswith("_avx512"):
        env["ATEN_CPU_CAPABILITY"] = "avx512"  # torch 1.13 defaults to its AVX2 kernels on AVX-512 CPUs
    return env


def setup_env(threads):
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)  # read by OpenBLAS when torch loads it
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["MKL_NUM_THREADS"] = str(threads)
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"           # idle OpenMP workers sleep instead of spinning


def mixed_sizes(max_size, steps):
    """Config (d)'s problem size of each timed step: bench_train.cpp's mixed_sizes (splitmix64, Steele et al.
    2014), so that both sides time the same sequence of lengths."""
    out, s, m = [], MIXED_SEED, (1 << 64) - 1
    for _ in range(steps):
        s = (s + 0x9E3779B97F4A7C15) & m
        z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        out.append(1 + (z ^ (z >> 31)) % max_size)
    return out


def make_batch(torch, ref, B, T, n=0):
    """(tokens, targets, positions, mask), (B, T) each; (d) (n > 0): x of n tokens, then n blanks (the last
    token id) where the loss is read, as bench_train.cpp's bench_batch."""
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB - (1 if n else 0), (B, T), generator=g)
    targets = torch.randint(0, VOCAB, (B, T), generator=g)
    mask = torch.ones(B, T)  # every token counts
    if n:
        tokens[:, n:] = VOCAB - 1
        mask[:, :n] = 0
    return tokens, targets, ref.default_positions(B, T), mask


def cell_plan(a):
    """The cell's shape and step schedule: cfg (pelab_ref's model config), the batch size, the sizes of the
    warm-up steps and of the timed steps (T for (a)-(c); n with T = 2n for (d)), and the steps."""
    d, n_layers, n_heads, B, T, def_steps, def_warmup = CONFIGS[a.config]
    steps = a.steps if a.steps > 0 else def_steps
    warmup = a.warmup if a.warmup >= 0 else def_warmup
    mixed = MIXED.get(a.config, 0)
    cfg = dict(vocab=VOCAB, d_model=d, n_layers=n_layers, n_heads=n_heads, d_mlp=4 * d, ln_eps=1e-5, seq_len=T,
               causal=not mixed)
    if mixed:  # warm-up: every size once, in order; timed: the fixed sequence
        return cfg, B, [i % mixed + 1 for i in range(warmup)], mixed_sizes(mixed, steps), steps, warmup
    return cfg, B, [0] * warmup, [0] * steps, steps, warmup


def build_side(tf, ref, variant, cfg, enc):
    """Model, optimizer and loss maker (per batch) of a variant, initialised as pelab's."""
    if variant == "ref":
        model = ref.Model(cfg, enc)  # learned: a table of T rows (max_len 0 = the training length)
        ref.init_pelab(model)        # weights and embeddings N(0, 0.02), biases 0, LayerNorm 1/0
        return model, ref.make_adamw(model, lr=1e-3, weight_decay=0.01), \
            lambda targets, mask: (lambda logits: ref.masked_ce(logits, targets, mask))
    model = tf.FastModel(cfg, enc, script=variant.startswith("script"))
    ref.init_pelab(model)
    opt = tf.make_adamw(model, lr=1e-3, weight_decay=0.01, foreach=True)

    def loss_maker(targets, mask):
        ce_t = tf.ce_targets(targets, mask)
        return lambda logits: tf.loss_fn(logits, ce_t)
    return model, opt, loss_maker


def import_sides():
    import torch
    sys.path.insert(0, REF_DIR)
    sys.path.insert(0, HERE)
    import pelab_ref as ref
    import torch_fast as tf
    return torch, ref, tf


def check_cell(a, variant, cfg, batch, tf):
    """--check-only: the variant against pelab_ref in float64 on the cell's (for (d): its longest) batch."""
    tokens, targets, positions, mask = batch
    dl, dg, names = tf.check_matches_reference(cfg, a.encoding, tokens, positions, targets, mask,
                                               script=variant.startswith("script"), trace=variant.startswith("trace"))
    ok = dl <= CHECK_TOL and dg <= CHECK_TOL
    print(f"check {variant} vs pelab_ref (config {a.config}, {a.encoding}, float64, {len(names)} parameters): "
          f"loss differs by {dl:.2e}, gradients by {dg:.2e} of their max: {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 4


def timed_steps(step, warm_sizes, sizes):
    """Runs the warm-up steps, then the timed ones; per timed step wall and CPU seconds, RSS around them."""
    for n in warm_sizes:
        step(n)
    wall, cpu = [0.0] * len(sizes), [0.0] * len(sizes)
    rss_warm = rss_mb()
    for i, n in enumerate(sizes):
        c0, t0 = time.process_time(), time.perf_counter()
        step(n)
        wall[i], cpu[i] = time.perf_counter() - t0, time.process_time() - c0
    return wall, cpu, rss_warm, rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KB on Linux


def start_sides(a, variant, unavailable):
    """Re-executes this script with `variant`'s environment when it lacks some of it (never over the
    caller's), then imports both sides: (torch, ref, tf), or None after printing why PyTorch is missing."""
    need = {k: v for k, v in variant_env(variant).items() if k not in os.environ}
    if need and not a.check_only:
        os.environ.update(need)
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:])
    setup_env(a.threads)
    try:
        return import_sides()
    except ImportError as err:
        print(f"PyTorch not available ({err}){unavailable}", file=sys.stderr)
        return None


def run_cell(a):
    variant = BEST[a.config] if a.variant == "best" else a.variant
    sides = start_sides(a, variant, ": measuring pelab only")
    if sides is None:
        return 3
    torch, ref, tf = sides
    if a.encoding not in ref.ENCODINGS:
        print(f"bench_torch: unknown encoding '{a.encoding}'; known: {', '.join(sorted(ref.ENCODINGS))}",
              file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    cfg, B, warm_sizes, sizes, steps, warmup = cell_plan(a)
    mixed = MIXED.get(a.config, 0)
    if mixed and variant.startswith("trace"):
        print(f"bench_torch: variant {variant} traces one fixed batch shape; config {a.config} changes T every "
              f"step: use ref, eager, script or their _avx512 forms", file=sys.stderr)
        return 2
    batches = {n: make_batch(torch, ref, B, 2 * n if n else cfg["seq_len"], n) for n in set(warm_sizes + sizes + [mixed])}
    if a.check_only:  # in its own process, so that the timed cell's peak RSS stays its own
        return check_cell(a, variant, cfg, batches[mixed], tf)
    check = None
    if variant != "ref" and not a.no_check:
        r = subprocess.run(cell_cmd(a, a.config, a.encoding, variant, ["--check-only"]), capture_output=True, text=True)
        if r.returncode:
            sys.stderr.write(r.stdout + r.stderr)
            return 4
        check = r.stdout.strip()

    rss_base = rss_mb()
    torch.manual_seed(0)
    model, opt, loss_maker = build_side(tf, ref, variant, cfg, a.encoding)
    forward = model
    if variant.startswith("trace"):
        forward = tf.trace_fixed(model, batches[0][0], batches[0][2])
    loss_of = {n: loss_maker(b[1], b[3]) for n, b in batches.items()}
    losses = []

    def step(n):
        tokens, _, positions, _ = batches[n]
        loss = loss_of[n](forward(tokens, positions))
        losses.append(loss.item())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    wall, cpu, rss_warm, rss_end, peak = timed_steps(step, warm_sizes, sizes)
    report(a, variant, cfg, B, sizes, steps, warmup, model, wall, cpu, (rss_base, rss_warm, rss_end, peak), losses,
           check, torch)
    return 0


def report(a, variant, cfg, B, sizes, steps, warmup, model, wall, cpu, rss, losses, check, torch):
    """The cell's figures: one JSON line or text. (d): mean T, FLOPs and step times over the timed sizes."""
    d, n_layers, T = cfg["d_model"], cfg["n_layers"], cfg["seq_len"]
    rss_base, rss_warm, rss_end, peak = rss
    n_mm = n_layers * (4 * d * d + 2 * d * 4 * d) + d * VOCAB  # see bench_train.cpp for the formula
    lengths = [2 * n if n else T for n in sizes]
    flops = statistics.mean(6.0 * n_mm * B * t + n_layers * 12.0 * B * t * t * d for t in lengths)
    mean_t = statistics.mean(lengths)
    avg = statistics.mean if MIXED.get(a.config) else statistics.median
    step_s, cpu_s = avg(wall), avg(cpu)
    r = dict(impl="torch", variant=variant, config=a.config, encoding=a.encoding, threads=a.threads, batch=B, seq=T,
             d_model=d, n_layers=n_layers, n_heads=cfg["n_heads"], vocab=VOCAB,
             params=sum(p.numel() for p in model.parameters()), warmup=warmup, steps=steps, mean_seq=mean_t,
             tokens_per_step=B * mean_t, step_ms=step_s * 1e3, step_ms_min=min(wall) * 1e3, cpu_ms=cpu_s * 1e3,
             tok_s=B * mean_t / step_s, cpu_tok_s=B * mean_t / cpu_s, flops_per_step=flops,
             gflops=flops / step_s / 1e9, rss_base_mb=rss_base, peak_rss_mb=peak, rss_warm_mb=rss_warm,
             rss_end_mb=rss_end, rss_delta_mb=rss_end - rss_warm, loss_first=losses[0], loss_last=losses[-1],
             torch_version=torch.__version__, openblas_coretype=os.environ.get("OPENBLAS_CORETYPE", ""),
             check=check or "", env=" ".join(f"{k}={os.environ.get(k, '')}" for k in variant_env(variant)))
    if a.json:
        print(json.dumps(r, separators=(",", ":")))
    else:
        print(f"config {a.config} (d_model {d}, {n_layers} layers, {cfg['n_heads']} heads, batch {B}, seq {T}), "
              f"encoding {a.encoding}, variant {variant}, {a.threads} thread(s), torch {torch.__version__}")
        if check:
            print(f"  {check}")
        print(f"  {r['tok_s']:.0f} tok/s: {avg.__name__} step {r['step_ms']:.3f} ms (cpu {r['cpu_ms']:.3f} ms) "
              f"over {steps} steps after {warmup} warm-up (mean T {mean_t:.2f}); {r['gflops']:.2f} GFLOP/s")
        print(f"  peak RSS {peak:.1f} MB (after import {rss_base:.1f} MB); RSS after warm-up {rss_warm:.2f} MB, "
              f"after {steps} more steps {rss_end:.2f} MB ({rss_end - rss_warm:+.3f} MB)")
        print(f"  loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    sys.stdout.flush()


def run_recipe_file(a):
    sides = start_sides(a, "eager", "")  # eager: as run_cell's fast variants
    if sides is None:
        return 3
    torch, ref, tf = sides
    torch.set_num_threads(a.threads)
    import torch_recipe
    return torch_recipe.run(a.recipe_file, torch, ref, tf, check_only=a.check_only, no_check=a.no_check)


def main():
    a = parse_args()
    if a.recipe_file:
        return run_recipe_file(a)
    if a.compare:
        return run_compare(a)
    if a.config == "all" or a.encoding == "all":
        return run_children(a)
    return run_cell(a)


if __name__ == "__main__":
    sys.exit(main())
