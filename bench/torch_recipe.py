"""PyTorch twin of a recipe's main cell (bench/bench_recipe.cpp is the pelab side): the model of the cell as
tests/pytorch/pelab_ref.py defines it, in bench/torch_fast.py's fast form (FastModel; pelab_ref.Model itself
where the fast form cannot: RoPE/xPos with per-row position ids), timed on exactly the batches pelab drew
(`bench_recipe --dump FILE`). A step is pelab's trainer step: forward, masked cross-entropy, backward, global
norm clipping at [train] grad_clip, AdamW at the recipe's lr and decay groups, zero_grad.

Before timing, a separate process checks the variant against pelab_ref in float64 on the first batch (loss and
every gradient), and that its parameter count is pelab's. A cell the twin cannot reproduce (the dump's
"blockers", an encoding pelab_ref lacks, another optimizer) prints {"twin": false, "why": ...} and no time.
"""
import json
import os
import statistics
import subprocess
import sys
import time

CHECK_TOL = 1e-9  # as bench_torch.py: float64 loss and worst gradient difference relative to its max


def load(path):
    with open(path) as f:
        return json.load(f)


def why_no_twin(dump, ref):
    why = list(dump["blockers"])
    if dump["encoding"] not in ref.ENCODINGS:
        why.append(f"encoding {dump['encoding']} has no pelab_ref twin")
    if dump["optimizer"] != "adamw":
        why.append(f"optimizer {dump['optimizer']}")
    return "; ".join(why)


def tensors(torch, b):
    shape = (b["B"], b["T"])
    t = {k: torch.tensor(b[k], dtype=torch.int64).view(shape) for k in ("tokens", "targets", "positions")}
    t["mask"] = torch.tensor(b["mask"], dtype=torch.float32).view(shape)
    t["digit_index"] = torch.tensor(b["digit_index"], dtype=torch.int64).view(shape) if "digit_index" in b else None
    return t


def model_cfg(dump):
    return dict(vocab=dump["vocab"], d_model=dump["d_model"], n_layers=dump["n_layers"], n_heads=dump["n_heads"],
                d_mlp=4 * dump["d_model"], ln_eps=dump["ln_eps"], seq_len=dump["seq_len"], causal=dump["causal"])


def pick_variant(dump, ref, batches):
    """eager FastModel (bench_torch.py's best at the small configs), or ref where FastModel cannot."""
    rotary = dump["encoding"] in ("rope", "xpos")
    per_row = any(not bool((b["positions"] == b["positions"][:1]).all()) for b in batches)
    return "ref" if rotary and per_row else "eager"


def build(tf, ref, variant, cfg, dump):
    enc, params = dump["encoding"], dump["encoding_params"]
    rule = dict(decay_norm_and_bias=dump["decay_norm_and_bias"], decay_embeddings=dump["decay_embeddings"])
    if variant == "ref":
        model = ref.Model(cfg, enc, params)
        ref.init_pelab(model)
        return model, ref.make_adamw(model, lr=dump["lr"], weight_decay=dump["weight_decay"], **rule)
    model = tf.FastModel(cfg, enc, params)
    ref.init_pelab(model)
    return model, tf.make_adamw(model, lr=dump["lr"], weight_decay=dump["weight_decay"], foreach=True, **rule)


def check(tf, dump, cfg, b, variant):
    if variant == "ref":
        return 0.0, 0.0
    dl, dg, _ = tf.check_matches_reference(cfg, dump["encoding"], b["tokens"], b["positions"], b["targets"],
                                           b["mask"], encoding_params=dump["encoding_params"],
                                           digit_index=b["digit_index"])
    return dl, dg


def run(path, torch, ref, tf, check_only=False, no_check=False):
    dump = load(path)
    out = dict(impl="torch", recipe=dump["recipe"], cell=dump["cell"], encoding=dump["encoding"])
    why = why_no_twin(dump, ref)
    if why:
        print(json.dumps(dict(out, twin=False, why=why), separators=(",", ":")))
        return 0
    batches = [tensors(torch, b) for b in dump["batches"]]
    cfg, variant = model_cfg(dump), pick_variant(dump, ref, batches)
    if check_only:
        dl, dg = check(tf, dump, cfg, batches[0], variant)
        ok = dl <= CHECK_TOL and dg <= CHECK_TOL
        print(f"check {variant} vs pelab_ref (recipe {dump['recipe']}, float64): loss differs by {dl:.2e}, "
              f"gradients by {dg:.2e} of their max: {'ok' if ok else 'MISMATCH'}")
        return 0 if ok else 4
    checked = ""
    if not no_check:
        r = subprocess.run([sys.executable, os.path.abspath(sys.argv[0]), "--recipe-file", path, "--check-only"],
                           capture_output=True, text=True)
        if r.returncode:
            sys.stderr.write(r.stdout + r.stderr)
            return 4
        checked = r.stdout.strip()
    torch.manual_seed(0)
    model, opt = build(tf, ref, variant, cfg, dump)
    n_params = sum(p.numel() for p in model.parameters())
    if n_params != dump["params"]:
        print(f"bench_torch: the twin of {dump['recipe']} has {n_params} parameters, pelab's {dump['params']}",
              file=sys.stderr)
        return 4
    wall, cpu = time_steps(torch, model, opt, batches, loss_makers(tf, ref, batches, variant), dump, variant)
    out.update(twin=True, variant=variant, check=checked, params=n_params, steps=len(wall),
               step_ms=1e3 * statistics.median(wall), cpu_ms=1e3 * statistics.median(cpu),
               torch_version=torch.__version__)
    print(json.dumps(out, separators=(",", ":")))
    return 0


def loss_makers(tf, ref, batches, variant):
    """Per batch: logits -> loss, as bench_torch.py's sides (pelab_ref's masked mean, or ignore_index)."""
    if variant == "ref":
        return [lambda logits, b=b: ref.masked_ce(logits, b["targets"], b["mask"]) for b in batches]
    return [lambda logits, t=tf.ce_targets(b["targets"], b["mask"]): tf.loss_fn(logits, t) for b in batches]


def time_steps(torch, model, opt, batches, losses, dump, variant):
    """Every batch in turn; wall and CPU seconds of those after the warm-up."""
    wall, cpu = [], []
    params = list(model.parameters())
    for i, (b, loss_of) in enumerate(zip(batches, losses)):
        c0, t0 = time.process_time(), time.perf_counter()
        extra = () if variant == "ref" or b["digit_index"] is None else (b["digit_index"],)
        loss = loss_of(model(b["tokens"], b["positions"], *extra))
        loss.item()
        loss.backward()
        if dump["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(params, dump["grad_clip"])
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= dump["warmup"]:
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return wall, cpu
