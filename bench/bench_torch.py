#!/usr/bin/python3
"""PyTorch side of the training-throughput benchmark (bench/bench_train.cpp is the pelab side).

The same model as pelab's Transformer: tests/pytorch/pelab_ref.py, the module the parity fixtures come
from (pre-LN decoder, fused qkv, exact-erf GELU MLP of width 4d, untied LM head, LayerNorm eps 1e-5; any
encoding it registers, `all` = none, learned, sinusoidal, rope as in bench_train), written the way a
typical PyTorch user would: attention spelled out with masked_fill + softmax (torch 1.13 has no
scaled_dot_product_attention), position tables computed once and reused while the positions repeat.
One step = forward, masked cross-entropy, backward, AdamW step, zero_grad(set_to_none=True).

    /usr/bin/python3 bench/bench_torch.py [--config a|b|c|all] [--encoding NAME|all] [--steps N]
                                          [--warmup N] [--threads N] [--json]

Threads: OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and OMP_WAIT_POLICY=PASSIVE are set before torch is
imported, then torch.set_num_threads(N); OPENBLAS_CORETYPE is left as the machine has it. Each
(config, encoding) cell runs in a fresh process so its peak RSS (ru_maxrss) is its own.
Exit status 3 (and a message) when torch cannot be imported.
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
}
ENCODINGS = ["none", "learned", "sinusoidal", "rope"]  # `all`, as bench_train's
VOCAB = 20
REF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "pytorch")


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
    p.add_argument("--json", action="store_true", help="one JSON line per cell")
    a = p.parse_args()
    if a.threads < 1 or a.steps == 0 or a.steps < -1 or a.warmup < -1:
        p.error("--threads and --steps must be >= 1, --warmup >= 0")
    return a


def run_children(a):
    """One fresh interpreter per cell: peak RSS must not mix across cells."""
    failed = 0
    for c in CONFIGS if a.config == "all" else [a.config]:
        for e in ENCODINGS if a.encoding == "all" else [a.encoding]:
            cmd = [sys.executable, os.path.abspath(__file__), "--config", c, "--encoding", e,
                   "--threads", str(a.threads), "--steps", str(a.steps), "--warmup", str(a.warmup)]
            if a.json:
                cmd.append("--json")
            sys.stdout.flush()
            r = subprocess.run(cmd)
            if r.returncode == 3:
                return 3
            if r.returncode != 0:
                print(f"bench_torch: cell config {c} encoding {e} failed", file=sys.stderr)
                failed += 1
    return 1 if failed else 0


def run_cell(a):
    threads = str(a.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = threads  # read by OpenBLAS when torch loads it
    os.environ["OMP_NUM_THREADS"] = threads
    os.environ["MKL_NUM_THREADS"] = threads
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"      # idle OpenMP workers sleep instead of spinning
    try:
        import torch
        sys.path.insert(0, REF_DIR)
        import pelab_ref as ref
    except ImportError as err:
        print(f"PyTorch not available ({err}): measuring pelab only", file=sys.stderr)
        return 3
    if a.encoding not in ref.ENCODINGS:
        print(f"bench_torch: unknown encoding '{a.encoding}'; known: {', '.join(sorted(ref.ENCODINGS))}",
              file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    rss_base = rss_mb()

    d, n_layers, n_heads, B, T, def_steps, def_warmup = CONFIGS[a.config]
    steps = a.steps if a.steps > 0 else def_steps
    warmup = a.warmup if a.warmup >= 0 else def_warmup
    enc = a.encoding

    torch.manual_seed(0)
    cfg = dict(vocab=VOCAB, d_model=d, n_layers=n_layers, n_heads=n_heads, d_mlp=4 * d, ln_eps=1e-5, seq_len=T)
    model = ref.Model(cfg, enc)  # learned: a table of T rows (max_len 0 = the training length)
    ref.init_pelab(model)        # weights and embeddings N(0, 0.02), biases 0, LayerNorm 1/0
    opt = ref.make_adamw(model, lr=1e-3, weight_decay=0.01)

    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB, (B, T), generator=g)
    targets = torch.randint(0, VOCAB, (B, T), generator=g)
    positions = ref.default_positions(B, T)
    mask = torch.ones(B, T)
    losses = []

    def step():
        loss = ref.masked_ce(model(tokens, positions), targets, mask)
        losses.append(loss.item())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    wall, cpu = [0.0] * steps, [0.0] * steps
    rss_warm = rss_mb()
    for i in range(steps):
        c0, t0 = time.process_time(), time.perf_counter()
        step()
        wall[i], cpu[i] = time.perf_counter() - t0, time.process_time() - c0
    rss_end = rss_mb()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KB on Linux

    n_mm = n_layers * (4 * d * d + 2 * d * 4 * d) + d * VOCAB  # see bench_train.cpp for the formula
    flops = 6.0 * n_mm * B * T + n_layers * 12.0 * B * T * T * d
    step_s, cpu_s = statistics.median(wall), statistics.median(cpu)
    r = dict(impl="torch", config=a.config, encoding=enc, threads=a.threads, batch=B, seq=T, d_model=d,
             n_layers=n_layers, n_heads=n_heads, vocab=VOCAB, params=sum(p.numel() for p in model.parameters()),
             warmup=warmup, steps=steps, step_ms=step_s * 1e3, cpu_ms=cpu_s * 1e3, tok_s=B * T / step_s,
             cpu_tok_s=B * T / cpu_s, flops_per_step=flops, gflops=flops / step_s / 1e9, rss_base_mb=rss_base,
             peak_rss_mb=peak, rss_warm_mb=rss_warm, rss_end_mb=rss_end, rss_delta_mb=rss_end - rss_warm,
             loss_first=losses[0], loss_last=losses[-1], torch_version=torch.__version__,
             openblas_coretype=os.environ.get("OPENBLAS_CORETYPE", ""))
    if a.json:
        print(json.dumps(r, separators=(",", ":")))
    else:
        print(f"config {a.config} (d_model {d}, {n_layers} layers, {n_heads} heads, batch {B}, seq {T}), "
              f"encoding {enc}, {a.threads} thread(s), torch {torch.__version__}")
        print(f"  {r['tok_s']:.0f} tok/s: median step {r['step_ms']:.3f} ms (cpu {r['cpu_ms']:.3f} ms) "
              f"over {steps} steps after {warmup} warm-up; {r['gflops']:.2f} GFLOP/s")
        print(f"  peak RSS {peak:.1f} MB (after import {rss_base:.1f} MB); RSS after warm-up {rss_warm:.2f} MB, "
              f"after {steps} more steps {rss_end:.2f} MB ({rss_end - rss_warm:+.3f} MB)")
        print(f"  loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    sys.stdout.flush()
    return 0


def main():
    a = parse_args()
    if a.config == "all" or a.encoding == "all":
        return run_children(a)
    return run_cell(a)


if __name__ == "__main__":
    sys.exit(main())
