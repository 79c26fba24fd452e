#!/usr/bin/python3
"""Reference fixtures for pelab, computed in PyTorch with the model of pelab_ref.py.

Writes into tests/fixtures/:
  model_<fixture>.safetensors, one per entry of FIXTURES (every encoding registered in pelab_ref, some
      with several parameter sets): parameters under pelab's checkpoint names, a fixed batch, the logits,
      the loss, every parameter's gradient and a 5-step AdamW run on that batch;
  t5_buckets.safetensors: Hugging Face's T5 bucket function over distances -600..600 (T5_BUCKETS);
  trainer_<encoding>.safetensors: a 20-step run of pelab's training loop on a stored stream of batches
      (per-step loss, gradient norm and learning rate, and the final parameters).
See tests/pytorch/README.md. Run with Debian's torch (NOT a pyenv/venv python):
    /usr/bin/python3 tests/pytorch/gen_fixtures.py              every file
    /usr/bin/python3 tests/pytorch/gen_fixtures.py NAME [NAME...] only these (a FIXTURES key such as rope,
                                                                 t5_buckets, trainer_rope, or a file name)
    /usr/bin/python3 tests/pytorch/gen_fixtures.py --list        the names, one per line, with their files
An unknown name exits 2 listing the known ones; --out DIR writes elsewhere than tests/fixtures/.
The self-checks run before anything is written, whatever is asked for.
"""
import argparse
import copy
import json
import math
import os
import sys
import tempfile

import numpy as np
import torch

import abc_calibration_ref
import pelab_ref as ref

COMMAND = "/usr/bin/python3 tests/pytorch/gen_fixtures.py"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures")

CFG = dict(vocab=20, d_model=32, n_layers=2, n_heads=4, d_mlp=128, batch=3, seq_len=12, ln_eps=1e-5)
FIXTURES = {  # file stem -> (encoding, the parameters given; the metadata records them resolved)
    "none": ("none", {}),
    "learned": ("learned", {"max_len": 16}),
    "sinusoidal": ("sinusoidal", {}),
    "rope": ("rope", {"layout": "interleaved"}),
    "rope_half": ("rope", {"layout": "half"}),
    "rope_partial": ("rope", {"layout": "half", "fraction": 0.5}),  # 4 of 8 dims rotated, 4 pass through
    "alibi": ("alibi", {}),
    "t5": ("t5", {}),                                                 # distances < 16: exact buckets only
    "t5_small": ("t5", {"num_buckets": 8, "max_distance": 10, "shared_layers": False}),  # log buckets too
    "t5_bidir": ("t5", {"num_buckets": 12, "max_distance": 7}),      # model.causal = false: both sides
    "kerple": ("kerple", {}),
    "kerple_power": ("kerple", {"variant": "power", "shared_layers": True}),
    "fire": ("fire", {}),                                             # ids < L: one normalizer
    "fire_small_L": ("fire", {"init_L": 8.0, "hidden": 8, "per_head": False, "shared_layers": True}),
    # ---- the history encodings
    "integer": ("integer", {"scale": 0.5}),
    "normalized": ("normalized", {}),                                 # row 2's ids 2..13: the same values as 0..11
    "binary": ("binary", {}),                                         # 4 bits: ids up to 15
    "multiplicative": ("multiplicative", {}),
    "multiplicative_learned": ("multiplicative", {"kind": "learned", "max_len": 16}),
    "concat": ("concat", {}),                                         # 8 position dims, 24-wide token table
    "concat_learned": ("concat", {"kind": "learned", "d_pos": 4, "max_len": 16}),
    "recurrent": ("recurrent", {}),                                   # GRU, replacing the embeddings
    "recurrent_lstm": ("recurrent", {"cell": "lstm", "residual": True}),
    # ---- end of the history encodings
    # ---- RoPE length extension (L = 6 < the 12..14 ids here) and [attention] scaling (FIXTURE_CFG)
    "rope_pi": ("rope", {"scaling": "pi", "factor": 2.0}),
    "rope_ntk": ("rope", {"scaling": "ntk", "factor": 3.0, "layout": "half"}),
    "rope_dynamic_ntk": ("rope", {"scaling": "dynamic_ntk", "factor": 2.0, "original_len": 6}),
    # yarn: r_i = 6 theta_i / (2 pi) = 0.95, 0.095, 0.0095, 0.00095, so alpha 0.05 / beta 0.5 put pairs in all three
    # parts. Its temperature (mscale) is off here: with it, one logit near 0 sat at 1.02x the float32 logit
    # tolerance (noise, not a formula error); tests/layers/test_length_scaling.cpp checks mscale's value.
    "rope_yarn": ("rope", {"scaling": "yarn", "factor": 4.0, "original_len": 6, "yarn_alpha": 0.05, "yarn_beta": 0.5,
                           "yarn_mscale": 0.0}),
    "none_log_length": ("none", {}),
    "rope_log_length_plain": ("rope", {}),
    "alibi_fixed_temperature": ("alibi", {}),
    "shaw_learned_temperature": ("shaw", {"clip": 3}),
    # ---- Shaw, xPos, CoPE
    "shaw": ("shaw", {}),                                             # clip 16 > every distance here
    "shaw_clip": ("shaw", {"clip": 3}),                               # distances past 3 share the edge buckets
    "shaw_keys": ("shaw", {"clip": 5, "values": False}),              # relative keys only
    "xpos": ("xpos", {}),                                             # scale_base 512: a mild decay
    "xpos_strong": ("xpos", {"scale_base": 8.0, "gamma": 0.6}),       # a strong one
    "cope": ("cope", {}),                                             # npos = seq_len + 1 = 13
    "cope_small": ("cope", {"npos": 4, "shared_layers": True}),       # counts clamp at 3
    # ---- the 2024-2026 frontier: normalizers, content-dependent biases, SSMax, windows, per-layer layouts
    "fox": ("fox", {}),                                               # forget gates from each layer's input
    "selective": ("selective", {}),                                   # head 0's logits mask later queries' keys
    "dynamic_bias": ("dynamic_bias", {}),                             # MLP of the signed log distance
    "dynamic_bias_deep": ("dynamic_bias", {"depth": 3}),
    "dape": ("dape", {}),                                             # kerple + the MLP of scores and biases
    "dape_alibi": ("dape", {"base": "alibi", "width": 8}),
    "path": ("path", {}),                                             # Householder-like transforms of the keys
    "pope": ("pope", {}),                                             # q, k twice as wide as v
    "pope_base": ("pope", {"base": 50.0}),                            # every frequency turns within 12 ids
    "pope_phase_bias": ("pope", {"phase_bias": "uniform"}),           # learned delta, some clamped (fixture_init)
    "hope": ("hope", {}),                                             # L = 12 keeps pair 0 of 4 (theta 1)
    "hope_half": ("hope", {"base": 10.0, "length": 20, "layout": "half"}),  # 3 of 4 pairs: dims (i, i+3) of 6
    "fope": ("fope", {}),                                             # L = 12: D' = 1, one series, 3 pairs of 1s
    "fope_mixed": ("fope", {"base": 10.0, "length": 20, "sigma": 1.0, "seed": 3}),  # D' = 3, d_out = 2: step 2
    "stick_breaking": ("stick_breaking", {}),                         # the first query sees nothing
    "stick_breaking_window": ("stick_breaking", {"attend_current": True}),  # + a window of 3 keys
    "none_ssmax": ("none", {}),                                       # [attention] scaling = ssmax
    "rope_window": ("rope", {}),                                      # windows "0,4": full, then 4 keys
    "hybrid_rnope_swa": ("none", {}),                                 # layers "none,rope", windows "0,4"
    "hybrid_t5_none": ("none", {}),                                   # layers "t5,none", t5's own parameters
    "rope_two_heads": ("rope", {}),                                   # [encoding] heads = 2 of 4
    "alibi_three_heads": ("alibi", {}),                               # heads = 3: the head dim of its bias
    "fox_one_head": ("fox", {}),                                      # heads = 1
    "abacus": ("abacus", {}),                                         # input.digit_index from the tokens
    "transformer_xl": ("transformer_xl", {}),                         # causal: R of p_i - p_j + 1 (DeepMind)
    "transformer_xl_bidir": ("transformer_xl", {"base": 100.0}),      # bidirectional: negative distances too
    # ---- group actions (GRAPE) and learned rotations
    "grape_m": ("grape_m", {}),                                       # 16 log omega: RoPE's spectrum perturbed
    "grape_m_comrope": ("grape_m", {"variant": "comrope", "layout": "interleaved", "per_head": True}),  # matrix_exp
    "grape_a": ("grape_a", {}),                                       # learned omega, query and key gates
    "grape_a_gated": ("grape_a", {"rate": "gated"}),                  # FoX's gates, query and key gates
    "grape_a_key": ("grape_a", {"lift": "key"}),                      # the key gate alone
    "abc": ("abc", {"bias_file": "abc_bias.txt"}),                    # ABC_BIAS, written beside the fixtures
    # ---- architecture features of 2025-2026 open models (issue 46): QK-norm and Canon layers
    "rope_qk_norm": ("rope", {}),                                     # [attention] qk_norm = "on"
    "hybrid_qk_norm": ("rope", {}),                                   # layers "rope,none", qk_norm "on,off"
    "none_canon": ("none", {}),                                       # [canon] points = "ABCD" (Canon + NoPE)
    "rope_canon_bd": ("rope", {}),                                    # points "BD", kernel 3, no residual
    "alibi_canon_qk_norm": ("alibi", {}),                             # Canon B, then QK-norm, kernel 5 > 12/4
    # ---- what open models ship (issue 46): encoding variants, chunked attention, temperature tuning
    "variant_rope_bases": ("rope", {"base": 10.0}),                   # layers "rope,rope.global": bases 10, 1000
    "variant_t5": ("t5", {}),                                         # layers "t5,t5.far": two T5s, own tables
    "rope_chunk": ("rope", {}),                                       # chunks "4,none": local, then global
    "stick_breaking_chunk": ("stick_breaking", {"attend_current": True}),  # chunks of 5, window 3 too
    "none_temperature_tuning": ("none", {}),                          # tuning "0,1", F = 4, a = 0.5, in training
    "llama4_irope": ("rope", {}),                                     # layers "rope,none", chunk "4,none", tuning "0,1"
    # ---- looped depth ([loop], Fan et al. 2025): shared weights applied N times, the input injected
    "looped_rope": ("rope", {}),                                      # block 0 three times, then block 1
    "looped_none_length": ("none", {}),                               # NoPE, block 1 looped floor(T/4) + 1 times
}
# dynamic NTK's base follows a row's largest id: relative only among rows with the same largest id.
NOT_SHIFT_INVARIANT = {"rope_dynamic_ntk"}
BOUNDED_IDS = {"binary", "multiplicative_learned", "concat_learned"}  # ids < 16 only (check_model)
# Model settings of single fixtures, on top of CFG (recorded in their "config" metadata).
FIXTURE_CFG = {"t5_bidir": {"causal": False},
               "none_log_length": {"attention": {"scaling": "log_length", "log_length_base": 4, "temperature": 0.8}},
               "rope_log_length_plain": {"attention": {"scaling": "log_length", "log_length_clamp": False}},
               "alibi_fixed_temperature": {"attention": {"scaling": "fixed", "temperature": 0.6}},
               "shaw_learned_temperature": {"attention": {"scaling": "learned", "temperature": 0.5}},
               "stick_breaking_window": {"attention": {"window": "3"}},
               "none_ssmax": {"attention": {"scaling": "ssmax", "temperature": 0.7}},
               "rope_window": {"attention": {"window": "0,4"}},
               "hybrid_rnope_swa": {"layers": "none,rope", "attention": {"window": "0,4"}},
               "hybrid_t5_none": {"layers": "t5,none", "layer_params": {"t5": {"num_buckets": 8, "max_distance": 10}}},
               "rope_two_heads": {"heads": 2}, "alibi_three_heads": {"heads": 3}, "fox_one_head": {"heads": 1},
               "transformer_xl_bidir": {"causal": False},
               "rope_qk_norm": {"qk_norm": "on"}, "hybrid_qk_norm": {"layers": "rope,none", "qk_norm": "on,off"},
               "none_canon": {"canon": {"points": "ABCD"}},
               "rope_canon_bd": {"canon": {"points": "BD", "kernel": 3, "residual": False}},
               "alibi_canon_qk_norm": {"canon": {"points": "B", "kernel": 5}, "qk_norm": "on"},
               "variant_rope_bases": {"layers": "rope,rope.global", "attention": {"window": "4,0"},
                                      "layer_params": {"rope.global": {"base": 1000.0}}},
               "variant_t5": {"layers": "t5,t5.far", "layer_params": {"t5.far": {"num_buckets": 8, "max_distance": 10}}},
               "rope_chunk": {"attention": {"chunk": "4,none"}},
               "stick_breaking_chunk": {"attention": {"chunk": "5", "window": "3"}},
               "none_temperature_tuning": {"attention": {"temperature_tuning": "0,1", "tuning_floor_scale": 4.0,
                                                         "tuning_attn_scale": 0.5, "tuning_in_training": True}},
               "llama4_irope": {"layers": "rope,none", "attention": {"chunk": "4,none", "temperature_tuning": "0,1",
                                                                     "tuning_floor_scale": 4.0, "tuning_attn_scale": 0.5,
                                                                     "tuning_in_training": True}},
               "looped_rope": {"loop": {"first": 0, "blocks": 1, "times": 3}},
               # N = 4, 7, 13 at 1x, 2x, 4x the training length (12 tokens): the loops grow with T
               "looped_none_length": {"loop": {"first": 1, "rule": "length", "per_token": 0.25, "offset": 1}}}
# Fixtures that also record float64 logits at these multiples of seq_len (long.<n>.tokens, .positions,
# .logits; row 2's ids start at 2), from the fixture's initial weights: parity beyond the training length.
LONGER = {"transformer_xl": (2, 4), "transformer_xl_bidir": (2, 4), "grape_m": (2, 4), "grape_m_comrope": (2, 4),
          "grape_a": (2, 4), "grape_a_gated": (2, 4), "grape_a_key": (2, 4), "abc": (2, 4),
          "rope_qk_norm": (2, 4), "hybrid_qk_norm": (2, 4), "none_canon": (2, 4), "rope_canon_bd": (2, 4),
          "alibi_canon_qk_norm": (2, 4),
          "variant_rope_bases": (2, 4), "variant_t5": (2, 4), "rope_chunk": (2, 4), "stick_breaking_chunk": (2, 4),
          "none_temperature_tuning": (2, 4), "llama4_irope": (2, 4),
          "looped_rope": (2, 4), "looped_none_length": (2, 4)}
# The abc fixture's bias file (tests/fixtures/abc_bias.txt; its path is recorded relative, and the C++ tests
# read it from tests/fixtures): a window of 4 differences, one head without d = 0 (row 0 then has only
# masked keys), a transparent head, and soft values with a difference past the window and a future one.
ABC_BIAS = """# the abc fixture's bias (tests/pytorch/gen_fixtures.py ABC_BIAS)
pelab-abc-bias 1
n_heads 4
head 0 masked -10000
distance 0 0
distance 1 -0.25
distance 2 -0.5
distance 3 -0.125
head 1 masked -10000
distance 1 0
distance 2 -0.75
head 2 masked 0
head 3 masked -6
distance -2 3
distance 0 -1.5
distance 5 0
distance 7 -0.375
"""
# The bias the C++ registry tests give `abc` (tests/layers/model_helpers.hpp small_config: 2 heads), so that
# its properties are checked with a bias rather than with the identity of an empty bias_file.
ABC_BIAS_TWO_HEADS = """# the abc bias of the C++ property tests (tests/pytorch/gen_fixtures.py ABC_BIAS_TWO_HEADS)
pelab-abc-bias 1
n_heads 2
head 0 masked -10000
distance 0 -0.5
distance 1 0
distance 2 -1
head 1 masked -2
distance 0 0.5
distance 3 -1
distance 7 1
"""
ABC_BIAS_FILES = {"abc_bias": ABC_BIAS, "abc_bias_two_heads": ABC_BIAS_TWO_HEADS}
# T5 bucket tables (tests/fixtures/t5_buckets.safetensors): (num_buckets, max_distance, bidirectional).
T5_BUCKETS = [(32, 128, False), (32, 128, True), (8, 10, False), (16, 9, True), (10, 40, True), (64, 1000, False)]
TRAIN = dict(steps=5, peak_lr=1e-2, min_lr=1e-3, warmup=2, betas=[0.9, 0.999], eps=1e-8,
             weight_decay=0.1, clip_norm=1.0)
# The training-loop fixture: pelab's Trainer on a stream of distinct batches, positions 0..T-1 (the
# Trainer's), dropout 0, default decay rule, non-default betas so that the Trainer must pass them on.
# clip_norm sits inside the range of the gradient norms: some steps clip, others do not.
TRAINER = dict(encoding="rope", encoding_params={}, steps=20, batch=4, seq_len=12, schedule="cosine",
               peak_lr=1e-2, min_lr=1e-3, warmup=3, betas=[0.9, 0.95], eps=1e-8, weight_decay=0.1,
               clip_norm=1.5, decay_norm_and_bias=False, decay_embeddings=True, seed=1)


def lr_at(s):
    t = TRAIN
    return ref.lr_at(s, t["peak_lr"], t["min_lr"], t["warmup"], t["steps"])


def make_inputs():
    B, T, V = CFG["batch"], CFG["seq_len"], CFG["vocab"]
    tokens = torch.randint(0, V, (B, T))
    targets = torch.randint(0, V, (B, T))
    positions = torch.arange(T).repeat(B, 1)
    positions[2] += 2                                        # row 2 holds positions 2..13
    mask = (torch.rand(B, T) >= 0.25).to(torch.float32)
    targets[mask == 0] = -1
    return tokens, positions, targets, mask


def build_fixture(fixture):
    enc, given = FIXTURES[fixture]
    torch.manual_seed(0)
    tokens, positions, targets, mask = make_inputs()
    cfg = dict(CFG, **FIXTURE_CFG.get(fixture, {}))
    model = ref.Model(cfg, enc, given)
    ref.init_fixture_weights(model)
    names = [n for n, _ in model.named_parameters()]
    params = {n: p.detach().clone() for n, p in model.named_parameters()}

    # The reference outputs come from the same model and float32 weights evaluated in float64: the
    # oracle is then the exact result, and pelab's float32 error is measured alone (a float32 PyTorch
    # result carries rounding errors of its own, as large as pelab's).
    model64 = copy.deepcopy(model).double()
    logits = model64(tokens, positions)
    loss = ref.masked_ce(logits, targets, mask.double())
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model64.named_parameters()}
    longer = longer_logits(fixture, model64)
    del model64

    opt = ref.make_adamw(model, TRAIN["peak_lr"], TRAIN["weight_decay"], TRAIN["betas"], TRAIN["eps"])
    losses, norms, lrs = [], [], []
    for s in range(TRAIN["steps"]):
        lrs.append(lr_at(s))
        step_loss, norm = ref.train_step(model, opt, tokens, positions, targets, mask, lrs[-1], TRAIN["clip_norm"])
        losses.append(step_loss)
        norms.append(norm)
    with torch.no_grad():
        losses.append(ref.masked_ce(model(tokens, positions), targets, mask).item())

    out = {n: params[n].numpy() for n in names}
    out.update({"grad." + n: grads[n].numpy() for n in names})
    out.update({
        "input.tokens": tokens.to(torch.int32).numpy(),
        "input.positions": positions.to(torch.int32).numpy(),
        "input.targets": targets.to(torch.int32).numpy(),
        "input.mask": mask.numpy(),
        **({"input.digit_index": model.pos.digit_index_of(tokens).to(torch.int32).numpy()}
           if hasattr(model.pos, "digit_index_of") else {}),
        "out.logits": logits.detach().numpy(),
        "out.loss": np.array(loss.item(), dtype=np.float64),
        "train.losses": np.array(losses, dtype=np.float32),
        "train.grad_norms": np.array(norms, dtype=np.float32),
        "train.lrs": np.array(lrs, dtype=np.float32),
        **longer,
    })
    meta = {
        "fixture": fixture,
        "encoding": enc,
        "encoding_params": json.dumps(model.pos.p, sort_keys=True),
        "config": json.dumps(cfg, sort_keys=True),
        "train": json.dumps(TRAIN, sort_keys=True),
        "torch_version": torch.__version__,
        "command": COMMAND,
    }
    return out, meta


def longer_logits(fixture, model64):
    """The LONGER evaluations of a fixture: tokens from a generator of their own (the fixture's other
    tensors keep their random stream), ids 0..n-1 (row 2: 2..n+1)."""
    out, g = {}, torch.Generator().manual_seed(5)
    for mult in LONGER.get(fixture, ()):
        n = mult * CFG["seq_len"]
        tokens = torch.randint(0, CFG["vocab"], (CFG["batch"], n), generator=g)
        positions = torch.arange(n).repeat(CFG["batch"], 1)
        positions[2] += 2
        with torch.no_grad():
            logits = model64(tokens, positions)
        out.update({f"long.{n}.tokens": tokens.to(torch.int32).numpy(),
                    f"long.{n}.positions": positions.to(torch.int32).numpy(),
                    f"long.{n}.logits": logits.numpy()})
    return out


def make_batch_stream():
    """TRAINER["steps"] batches (S, B, T) of a random next-token stream, a quarter of the targets masked."""
    S, B, T, V = TRAINER["steps"], TRAINER["batch"], TRAINER["seq_len"], CFG["vocab"]
    seq = torch.randint(0, V, (S, B, T + 1))
    tokens, targets = seq[..., :-1].clone(), seq[..., 1:].clone()
    mask = (torch.rand(S, B, T) >= 0.25).to(torch.float32)
    targets[mask == 0] = -1
    return tokens, targets, mask


def build_trainer_fixture():
    """Trainer parity: float32 initial weights, then every step computed in float64 (the exact result
    for those weights and batches, so that the C++ test measures pelab's float32 error alone)."""
    t = TRAINER
    torch.manual_seed(t["seed"])
    tokens, targets, mask = make_batch_stream()
    cfg = dict(CFG, batch=t["batch"], seq_len=t["seq_len"])
    model = ref.Model(cfg, t["encoding"], t["encoding_params"])
    ref.init_fixture_weights(model)
    init = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    model = model.double()
    opt = ref.make_adamw(model, t["peak_lr"], t["weight_decay"], t["betas"], t["eps"],
                         decay_norm_and_bias=t["decay_norm_and_bias"], decay_embeddings=t["decay_embeddings"])
    positions = ref.default_positions(t["batch"], t["seq_len"])
    losses, norms, lrs = [], [], []
    for s in range(t["steps"]):
        lr = ref.lr_at(s, t["peak_lr"], t["min_lr"], t["warmup"], t["steps"], t["schedule"])
        loss, norm = ref.train_step(model, opt, tokens[s], positions, targets[s], mask[s].double(), lr,
                                    t["clip_norm"])
        losses.append(loss)
        norms.append(norm)
        lrs.append(lr)
    clipped = sum(n > t["clip_norm"] for n in norms)
    assert 0 < clipped < t["steps"], f"clipping should act on some steps, not all: {clipped}"
    margin = min(abs(n / t["clip_norm"] - 1) for n in norms)
    assert margin > 1e-3, f"a gradient norm is within {margin:.1e} of clip_norm: the clip decision is fragile"

    out = dict(init)
    out.update({"final." + n: p.detach().to(torch.float32).numpy() for n, p in model.named_parameters()})
    out.update({
        "batch.tokens": tokens.to(torch.int32).numpy(),
        "batch.targets": targets.to(torch.int32).numpy(),
        "batch.mask": mask.numpy(),
        "train.losses": np.array(losses, dtype=np.float64),
        "train.grad_norms": np.array(norms, dtype=np.float64),
        "train.lrs": np.array(lrs, dtype=np.float64),
    })
    meta = {
        "fixture": f"trainer_{t['encoding']}",
        "encoding": t["encoding"],
        "encoding_params": json.dumps(model.pos.p, sort_keys=True),
        "config": json.dumps(cfg, sort_keys=True),
        "train": json.dumps({k: v for k, v in t.items() if k not in ("encoding", "encoding_params")},
                            sort_keys=True),
        "torch_version": torch.__version__,
        "command": COMMAND,
    }
    return out, meta, clipped


# ---------------------------------------------------------------- self-checks
DIMS = dict(d_model=32, n_heads=4, head_dim=8, n_layers=2, train_len=12, causal=True)


def check_encodings():
    """Each encoding against its formula written out another way."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 5, 8, generator=g)
    pos = torch.tensor([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
    # The two RoPE layouts are the same rotation up to a permutation of dims.
    perm = torch.tensor([0, 4, 1, 5, 2, 6, 3, 7])  # half-layout dim of each interleaved slot
    a = ref.make_encoding("rope", {"layout": "interleaved"}, DIMS).encode_qk(x[..., perm], x, ref.Ctx(pos, 0, False))[0]
    b = ref.make_encoding("rope", {"layout": "half"}, DIMS).encode_qk(x, x, ref.Ctx(pos, 0, False))[0][..., perm]
    assert torch.allclose(a, b, atol=1e-6), "rope layouts disagree"
    # A fraction rotates the first dims as RoPE of that head size would, and passes the rest through.
    part = ref.make_encoding("rope", {"layout": "half", "fraction": 0.5}, DIMS).encode_qk(x, x, ref.Ctx(pos, 0, False))[0]
    small = ref.make_encoding("rope", {"layout": "half"}, dict(DIMS, head_dim=4)).encode_qk(x[..., :4], x, ref.Ctx(pos, 0, False))[0]
    assert torch.equal(part[..., 4:], x[..., 4:]) and torch.allclose(part[..., :4], small, atol=1e-6), "rope fraction"
    # Sinusoidal: PE[t, 2i] = sin(t / base^(2i/d)), PE[t, 2i+1] = cos(same).
    pe = ref.sinusoidal_table(torch.tensor([[0, 3, 13]]), 6, 10000.0)[0]
    for r, t in enumerate([0, 3, 13]):
        for j in range(6):
            w = t / 10000.0 ** (2 * (j // 2) / 6)
            want = math.sin(w) if j % 2 == 0 else math.cos(w)
            assert abs(pe[r, j].item() - want) < 1e-6, (t, j)
    # ALiBi: the paper's slopes (6 heads: 4 geometric, then every other one of 8), bias -m_h |i - j|.
    assert ref.alibi_slopes(4) == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8]
    assert ref.alibi_slopes(6) == [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]
    alibi = ref.make_encoding("alibi", {"slope_scale": 2.0}, DIMS)
    bias = alibi.attention_bias(x, x, ref.Ctx(pos[:1].repeat(3, 1), 0, True))
    assert bias.shape == (1, 4, 5, 5) and bias[0, 1, 4, 1].item() == -2.0 * 2 ** -4 * 3 and bias[0, 0, 2, 2].item() == 0.0
    rows = alibi.attention_bias(x, x, ref.Ctx(pos, 0, False))               # row 1 holds 7..11
    assert rows.shape == (2, 4, 5, 5) and torch.equal(rows[0], rows[1])    # the same distances
    # T5 buckets: hand-computed values of the reference formula.
    rel = torch.tensor([-1000, -128, -20, -16, -15, -3, 0, 3, 100])
    assert ref.t5_bucket(rel, False, 32, 128).tolist() == [31, 31, 17, 16, 15, 3, 0, 0, 0]
    assert ref.t5_bucket(rel, True, 32, 128).tolist() == [15, 15, 10, 10, 9, 3, 0, 19, 31]  # -16: log 2 / log 16 * 8 = 2 exactly
    # Kerple: -r1 log(1 + r2 d) and -r1 d^r2 at one head, one distance.
    for variant, want in (("log", lambda r1, r2, d: -r1 * math.log(1 + r2 * d)), ("power", lambda r1, r2, d: -r1 * d ** r2)):
        ker = ref.make_encoding("kerple", {"variant": variant}, DIMS)
        with torch.no_grad():
            ker.tables[1]["r1"][2], ker.tables[1]["r2"][2] = 0.7, 1.3
        b = ker.attention_bias(x, x, ref.Ctx(pos, 1, False))
        assert abs(b[1, 2, 4, 1].item() - want(0.7, 1.3, 3.0)) < 1e-5, variant
    # FIRE: one head's value written out, with a query id past L (so max(L, p_i) = p_i).
    fire = ref.make_encoding("fire", {"init_L": 8.0, "hidden": 3}, DIMS)
    torch.manual_seed(3)
    f = fire.tables[0]
    pos2 = torch.tensor([[5, 9, 20, 21, 30]])
    b = fire.attention_bias(x, x, ref.Ctx(pos2, 0, True))
    c, L = f.c.item(), abs(f.L_multiplier.item() * 8.0)
    u = math.log(abs(c * (30 - 9)) + 1) / (math.log(abs(c * max(30, L)) + 1) + 1e-6)
    hidden = [max(0.0, f.fc.weight[m, 0].item() * u + f.fc.bias[m].item()) for m in range(3)]
    want = sum(f.out.weight[2, m].item() * hidden[m] for m in range(3)) + f.out.bias[2].item()
    assert b.shape == (1, 4, 5, 5) and abs(b[0, 2, 4, 1].item() - want) < 1e-5, (b[0, 2, 4, 1].item(), want)


# ---- Shaw, xPos, CoPE
def check_encodings_part2():
    """Shaw, xPos and CoPE against independent numbers."""
    g = torch.Generator().manual_seed(4)
    B, H, T, hs = 2, 4, 6, 8
    q, k = torch.randn(B, H, T, hs, generator=g, dtype=torch.float64), torch.randn(B, H, T, hs, generator=g, dtype=torch.float64)
    pos = torch.tensor([[0, 1, 2, 3, 4, 5], [3, 5, 6, 9, 10, 20]])
    # Shaw: the bucket of (i, j) is clip(p_j - p_i, -k, k) + k, one table row per bucket.
    shaw = ref.make_encoding("shaw", {"clip": 2}, DIMS)
    index, a_k, a_v = shaw.relative_kv(ref.Ctx(pos, 1, False))
    assert index.shape == (2, T, T) and index[1, 5, 0].item() == 0 and index[1, 0, 1].item() == 4
    assert index[1, 2, 1].item() == 1 and index[0, 3, 3].item() == 2 and a_k is shaw.tables[1]["key"]
    logit = ref.relative_key_logits(q, index, a_k.double())
    assert abs(logit[1, 3, 4, 2].item() - float(q[1, 3, 4] @ a_k[index[1, 4, 2]].double())) < 1e-12
    assert ref.make_encoding("shaw", {"values": False}, DIMS).relative_kv(ref.Ctx(pos, 0, False))[2] is None
    # xPos: q_m . k_n = sum_i zeta_i^((m - n)/B) (rotated dot of pair i), zeta_i = (2i/hs + g) / (1 + g).
    xpos = ref.make_encoding("xpos", {"scale_base": 4.0, "gamma": 0.5}, DIMS)
    qx, kx = xpos.encode_qk(q, k, ref.Ctx(pos, 0, False))
    b, h, m, n = 1, 2, 4, 1
    want = 0.0
    for i in range(hs // 2):
        zeta = (2 * i / hs + 0.5) / 1.5
        a = (pos[b, n] - pos[b, m]).item() * 10000.0 ** (-2 * i / hs)  # R(p_m)^T R(p_n) = R(p_n - p_m)
        q1, q2, k1, k2 = q[b, h, m, 2 * i].item(), q[b, h, m, 2 * i + 1].item(), k[b, h, n, 2 * i].item(), k[b, h, n, 2 * i + 1].item()
        want += zeta ** ((pos[b, m] - pos[b, n]).item() / 4.0) * ((q1 * k1 + q2 * k2) * math.cos(a) + (q2 * k1 - q1 * k2) * math.sin(a))
    assert abs(float(qx[b, h, m] @ kx[b, h, n]) - want) < 1e-9, (float(qx[b, h, m] @ kx[b, h, n]), want)
    # ... and the norm of a scaled pair: |pair i of q_m| = zeta_i^(s/B) |pair i of q|, s = p - (p_0 + ceil(T/2)).
    s_m = (pos[b, m] - pos[b, 0]).item() - (T + 1) // 2
    zeta0 = 0.5 / 1.5
    assert abs(float(qx[b, h, m, :2].norm()) - zeta0 ** (s_m / 4.0) * float(q[b, h, m, :2].norm())) < 1e-9
    # CoPE: gates forced to 1 count i - j + 1 keys, forced to 1/2 half that; with e[m] chosen so that
    # q . e[m] = m, the bias is that count / sqrt(hs) (clamped at npos - 1), interpolation included.
    cope = ref.make_encoding("cope", {"npos": 5}, dict(DIMS, train_len=T)).double()
    u = torch.ones(B, H, T, hs, dtype=torch.float64)
    with torch.no_grad():
        cope.tables[0].weight.copy_(torch.arange(5.0)[:, None] * torch.ones(hs) / hs)       # u . e[m] = m
    for gate, kk in ((1.0, 20 * u), (0.5, torch.cat([u[..., :4], -u[..., 4:]], dim=-1))):
        bias = cope.attention_bias(u, kk, ref.Ctx(pos, 0, False))
        for i in range(T):
            for j in range(i + 1):
                assert abs(bias[1, 3, i, j].item() - min(gate * (i - j + 1), 4) / math.sqrt(hs)) < 1e-9, (gate, i, j)
# ---- end of Shaw, xPos, CoPE


def deepmind_relative_logits(q, k, u, v, w, base, causal):
    """DeepMind's compute_attention_with_relative_encodings (neural_networks_chomsky_hierarchy, commit 2b8eb4b,
    models/positional_encodings.py) ported to numpy, relative shift included: q, k (b, t, h, d), u, v (h, d),
    w (2m, h d) (hk.Linear's (in, out)) -> (b, h, t, t) logits before the 1/sqrt(d) scale."""
    b, T, h, d = k.shape
    D = h * d
    inv_freq = base ** (-np.arange(0, D, 2.0) / D)
    pos_seq = np.arange(T, 0, -1.0) if causal else np.arange(T, -T, -1.0)
    angles = np.einsum("i,j->ij", pos_seq, inv_freq)
    table = np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)             # (T or 2T, 2m)
    content = np.einsum("bthd,bThd->bhtT", q + u, k)
    rel_keys = (table @ w).reshape(table.shape[0], h, d)
    rel = np.einsum("bthd,Thd->bhtT", q + v, rel_keys)                            # (b, h, t, T or 2T)

    def shift_causal(x):  # _rel_shift_causal
        t1, t2 = x.shape
        return np.concatenate([np.zeros((t1, 1)), x], axis=-1).reshape(t2 + 1, t1)[1:].reshape(t1, t2)

    def shift_inner(x):   # _rel_shift_inner, attention length T
        tq, total = x.shape
        return x.reshape(total, tq)[1:].reshape(tq, total - 1)[:, :T]

    shift = shift_causal if causal else shift_inner
    return content + np.stack([np.stack([shift(rel[i, j]) for j in range(h)]) for i in range(b)])


def check_transformer_xl():
    """The twin's bias (written from the paper, pair by pair) plus q.k, over sqrt(hs), equals DeepMind's logits
    with their relative shift on the pairs a query sees: R of p_i - p_j + 1 causal, of p_i - p_j (negative
    ones included) bidirectional; and a shift of the ids changes nothing."""
    g = torch.Generator().manual_seed(6)
    B, H, T, hs = 2, 4, 7, 8
    q, k = (torch.randn(B, H, T, hs, generator=g, dtype=torch.float64) for _ in range(2))
    for causal, base in ((True, 10000.0), (False, 30.0)):
        xl = ref.make_encoding("transformer_xl", {"base": base}, dict(DIMS, causal=causal)).double()
        layer = xl.layers[1]
        with torch.no_grad():
            for p in layer.values():
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
        pos = torch.arange(T).repeat(B, 1)
        ours = (q @ k.transpose(-1, -2) / math.sqrt(hs) + xl.attention_bias(q, k, ref.Ctx(pos, 1, True))).detach().numpy()
        theirs = deepmind_relative_logits(q.transpose(1, 2).numpy(), k.transpose(1, 2).numpy(), layer["u"].detach().numpy(),
                                          layer["v"].detach().numpy(), layer["weight"].detach().numpy().T, base, causal) / math.sqrt(hs)
        seen = np.tril(np.ones((T, T), dtype=bool)) if causal else np.ones((T, T), dtype=bool)
        err = np.abs(ours - theirs)[..., seen].max()
        assert err < 1e-5, f"transformer_xl (causal {causal}) vs DeepMind's logits: {err}"  # float32 sinusoids
        shifted = xl.attention_bias(q, k, ref.Ctx(pos + 9, 1, True))
        assert torch.allclose(shifted, xl.attention_bias(q, k, ref.Ctx(pos, 1, True)), atol=1e-5)


def skew_planes(A):
    """A real skew-symmetric (d, d), d even, generic: (Q, theta) with A = Q diag(theta_k J) Q^T, Q orthogonal with
    columns x_1, y_1, x_2, y_2, ... (A x = theta y, A y = -theta x), from the eigenvectors of the Hermitian iA."""
    lam, U = torch.linalg.eigh(1j * A.to(torch.complex128))
    cols, theta = [], []
    for k in torch.nonzero(lam > 0).flatten().tolist():
        u = U[:, k] * math.sqrt(2.0)
        cols += [u.real, u.imag]
        theta.append(lam[k].item())
    return torch.stack(cols, dim=1), torch.tensor(theta, dtype=torch.float64)


def check_grape_a_lift(pos, q, k):
    """GRAPE-A's closed form (the twin) against the group action itself, with explicit unipotent matrices:
    each token moved by its own id, q^ by G(p_i)^-T and k^ by G(p_j), G(p) = matrix_exp(p omega_h A), A^2 = 0,
    q^ = [q; g_q; 1; 0; 0], k^ = [k; 0; 0; 1; g_k], A = E_{hs,hs+2} + E_{hs+1,hs+3}, the gates written out from
    eq. 4.6 (log1p exp, v / |v|): (G^-T q^) . (G k^) - q . k must be the bias, a penalty (<= 0) on past keys."""
    hs = q.shape[-1]
    A = torch.zeros(hs + 4, hs + 4, dtype=torch.float64)
    A[hs, hs + 2] = A[hs + 1, hs + 3] = 1.0
    assert torch.equal(A @ A, torch.zeros_like(A))
    causal = torch.ones(5, 5).tril().bool()
    for lift in ("query_key", "query", "key"):
        torch.manual_seed(8)
        enc = ref.make_encoding("grape_a", {"lift": lift}, DIMS).double()
        with torch.no_grad():
            enc.omega[0].normal_(0.0, 1.0)
        theta = enc.omega[0].detach()
        omega = torch.log1p(torch.exp(theta)) * torch.tensor(ref.alibi_slopes(4), dtype=torch.float64)  # (H)
        def gate(x, name):
            v = getattr(enc, name)[0].detach()
            return torch.log1p(torch.exp((x * (v / v.norm(dim=-1, keepdim=True))[None, :, None]).sum(-1) / math.sqrt(hs)))
        zero, one = torch.zeros(2, 4, 5, dtype=torch.float64), torch.ones(2, 4, 5, dtype=torch.float64)
        gq = gate(q, "query_gate") if lift != "key" else zero
        gk = gate(k, "key_gate") if lift != "query" else zero
        qh = torch.cat([q, torch.stack([gq, one if lift != "query" else zero, zero, zero], -1)], -1)  # (B, H, T, hs+4)
        kh = torch.cat([k, torch.stack([zero, zero, one, gk], -1)], -1)
        G = torch.matrix_exp(pos.to(torch.float64)[:, None, :, None, None] * omega[None, :, None, None, None] * A)
        qm = (torch.linalg.inv(G).transpose(-1, -2) @ qh[..., None])[..., 0]
        km = (G @ kh[..., None])[..., 0]
        want = qm @ km.transpose(-1, -2) - q @ k.transpose(-1, -2)
        got = enc.attention_bias(q, k, ref.Ctx(pos, 0, False))
        assert torch.allclose(got, want, atol=1e-12, rtol=0), f"grape_a {lift}: the closed form is not the group action"
        assert bool((got[..., causal] <= 0).all()), f"grape_a {lift}: a past key rewarded"


def check_grape():
    """GRAPE-A's two named settings against ALiBi and FoX, and GRAPE-M's 1-D reductions: exp(p A) for any skew A
    (ComRoPE with 4x4 blocks, a non-commuting mixture of rank-2 planes, learned commuting planes) equals the
    grape_m rotation by the eigen-angles after the change of basis Q^T, which W_q and W_k absorb."""
    g = torch.Generator().manual_seed(6)
    pos = torch.tensor([[0, 1, 2, 5, 9], [3, 4, 6, 7, 30]])
    x = torch.randn(2, 4, 5, 8, generator=g, dtype=torch.float64)
    a = ref.make_encoding("grape_a", {"lift": "constant", "learn": False}, DIMS).attention_bias(x, x, ref.Ctx(pos, 0, False))
    b = ref.make_encoding("alibi", {}, DIMS).attention_bias(x, x, ref.Ctx(pos, 0, False))
    causal = torch.ones(5, 5).tril().bool()
    assert torch.equal(a[..., causal], b.to(a.dtype)[..., causal]), "grape_a is not alibi"
    torch.manual_seed(7)
    gated = ref.make_encoding("grape_a", {"rate": "gated", "lift": "constant"}, DIMS)
    fox = ref.make_encoding("fox", {}, DIMS)
    fox.load_state_dict(gated.state_dict())
    inp = torch.randn(2, 5, 32, generator=g)
    ctx = ref.Ctx(pos, 1, False, inp)
    assert torch.equal(gated.attention_bias(x, x, ctx), fox.attention_bias(x, x, ctx)), "grape_a gated is not fox"
    check_grape_a_lift(pos, x, torch.randn(2, 4, 5, 8, generator=g, dtype=torch.float64))
    d, J = 8, torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=torch.float64)
    blocks = torch.block_diag(*[(lambda F: F - F.T)(torch.randn(4, 4, generator=g, dtype=torch.float64)) for _ in range(2)])
    ab = torch.randn(4, 2, d, generator=g, dtype=torch.float64)  # 4 planes in general position: no zero angle
    mixture = sum(w * (u[:, None] * v[None, :] - v[:, None] * u[None, :]) for w, (u, v) in zip([0.7, -0.4, 1.1, 0.2], ab))
    B = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))[0]
    planes = B @ torch.block_diag(*[w * J for w in [0.9, 0.3, 0.05, -0.6]]) @ B.T
    for kind, A in (("comrope 4x4 blocks", blocks), ("non-commuting mixture", mixture), ("learned planes", planes)):
        Q, theta = skew_planes(A)
        R = torch.matrix_exp(pos.to(torch.float64)[:, None, :, None, None] * A)          # (B, 1, T, d, d)
        want = (R @ x[..., None])[..., 0] @ (R @ x[..., None])[..., 0].transpose(-1, -2)  # <G(p_i) q, G(p_j) k>
        enc = ref.make_encoding("grape_m", {"variant": "comrope", "layout": "interleaved"}, dict(DIMS, head_dim=d)).double()
        with torch.no_grad():
            enc.freq[0].copy_(theta[None, :])
        y = enc.encode_qk(x @ Q, x @ Q, ref.Ctx(pos, 0, False))[0]                       # rows: (Q^T q)^T
        assert torch.allclose(y @ y.transpose(-1, -2), want, atol=1e-9), f"grape_m is not exp(p A): {kind}"


def check_model():
    """Every fixture's model is causal (unless built bidirectional); relative encodings
    (`Encoding.relative`) give the same logits when every position is shifted by a constant, absolute ones
    do not (FIRE only once a query id passes L: shift 1000 too); two rows with their own ids give what
    two one-row batches give."""
    torch.manual_seed(2)
    tokens = torch.randint(0, CFG["vocab"], (2, CFG["seq_len"]))
    pos = torch.arange(CFG["seq_len"]).repeat(2, 1)
    for fixture, (enc, given) in FIXTURES.items():
        cfg = dict(CFG, **FIXTURE_CFG.get(fixture, {}))
        model = ref.Model(cfg, enc, given)
        ref.init_fixture_weights(model)
        with torch.no_grad():
            base = model(tokens, pos)
            changed = tokens.clone()
            changed[:, 7:] = (changed[:, 7:] + 1) % CFG["vocab"]
            causal = torch.equal(model(changed, pos)[:, :7], base[:, :7])
            assert causal == cfg.get("causal", True), f"{fixture}: causal {causal}"
            shifts = [4] if enc == "learned" or fixture in BOUNDED_IDS else [4, 1000]  # learned: a 16-row table
            same = [torch.allclose(model(tokens, pos + k), base, atol=1e-4) for k in shifts]
            if ref.ENCODINGS[enc].relative and fixture not in NOT_SHIFT_INVARIANT:
                assert all(same), f"{fixture}: declared relative, but a shift changes the logits"
            else:
                assert not all(same), f"{fixture}: declared absolute, but no shift changes the logits"
            mixed = pos.clone()
            mixed[1] = torch.tensor([0, 2, 3, 5, 6, 7, 9, 10, 11, 12, 14, 15])
            both = model(tokens, mixed)
            for r in range(2):
                one = model(tokens[r:r + 1], mixed[r:r + 1])
                assert torch.allclose(both[r:r + 1], one, atol=1e-5), f"{fixture}: row {r} depends on the other row"


def t5_bucket_tables():
    """HF's bucket function in torch for every T5_BUCKETS setting over relative distances -600..600."""
    rel = torch.arange(-600, 601)
    out = {"relative": rel.to(torch.int32).numpy()}
    for nb, md, bidir in T5_BUCKETS:
        out[f"buckets.{nb}_{md}_{'bidirectional' if bidir else 'causal'}"] = \
            ref.t5_bucket(rel, bidir, nb, md).to(torch.int32).numpy()
    return out, {"fixture": "t5_buckets", "settings": json.dumps(T5_BUCKETS), "torch_version": torch.__version__,
                 "command": COMMAND}


def write_model(fixture, out_dir):
    tensors, meta = build_fixture(fixture)
    path = os.path.join(out_dir, f"model_{fixture}.safetensors")
    ref.save_checked(path, tensors, meta)
    losses = " ".join(f"{v:.6f}" for v in tensors["train.losses"])
    norms = " ".join(f"{v:.6f}" for v in tensors["train.grad_norms"])
    print(f"{fixture:12s} {os.path.getsize(path) / 1024:6.1f} KB  loss {tensors['out.loss']:.6f}")
    print(f"             train.losses     {losses}")
    print(f"             train.grad_norms {norms}")


def write_t5_buckets(out_dir):
    tensors, meta = t5_bucket_tables()
    path = os.path.join(out_dir, "t5_buckets.safetensors")
    ref.save_checked(path, tensors, meta)
    print(f"t5_buckets   {os.path.getsize(path) / 1024:6.1f} KB  {len(T5_BUCKETS)} settings x {len(tensors['relative'])} distances")


def write_trainer(out_dir):
    tensors, meta, clipped = build_trainer_fixture()
    path = os.path.join(out_dir, f"trainer_{TRAINER['encoding']}.safetensors")
    ref.save_checked(path, tensors, meta)
    print(f"trainer_{TRAINER['encoding']} {os.path.getsize(path) / 1024:6.1f} KB  {TRAINER['steps']} steps, "
          f"{clipped} clipped at {TRAINER['clip_norm']}")
    print("             losses     " + " ".join(f"{v:.4f}" for v in tensors["train.losses"]))
    print("             grad_norms " + " ".join(f"{v:.4f}" for v in tensors["train.grad_norms"]))


def write_abc_bias(out_dir, name="abc_bias"):
    path = os.path.join(out_dir, name + ".txt")
    with open(path, "w") as f:
        f.write(ABC_BIAS_FILES[name])
    print(f"{name:12s} {os.path.getsize(path) / 1024:6.1f} KB  a bias file of the abc encoding")


def write_abc_calibration(out_dir):
    tensors, meta = abc_calibration_ref.build()  # numpy only (abc_calibration_ref.py)
    path = os.path.join(out_dir, "abc_calibration.safetensors")
    ref.save_checked(path, tensors, meta)
    print(f"abc_calibration {os.path.getsize(path) / 1024:6.1f} KB  ABC's calibration on a random attention "
          f"tensor (seed {meta['seed']})")


def targets():
    """Every file this script writes, in writing order: name -> (file name, writer(out_dir))."""
    out = {f: (f"model_{f}.safetensors", lambda d, f=f: write_model(f, d)) for f in FIXTURES}
    for name in ABC_BIAS_FILES:  # main writes abc_bias first: the abc fixture reads it
        out[name] = (name + ".txt", lambda d, name=name: write_abc_bias(d, name))
    out["abc_calibration"] = ("abc_calibration.safetensors", write_abc_calibration)
    out["t5_buckets"] = ("t5_buckets.safetensors", write_t5_buckets)
    out[f"trainer_{TRAINER['encoding']}"] = (f"trainer_{TRAINER['encoding']}.safetensors", write_trainer)
    return out


def resolve(names, known):
    """The target names asked for, in writing order, without repeats; a name may also be given as its
    file name (model_rope, model_rope.safetensors, tests/fixtures/model_rope.safetensors). Unknown
    names exit 2 with the known ones."""
    by_file = {file: name for name, (file, _) in known.items()}
    chosen, unknown = set(), []
    for n in names:
        base = os.path.basename(n)
        name = n if n in known else by_file.get(base, by_file.get(base + ".safetensors"))
        if name is None:
            unknown.append(n)
        else:
            chosen.add(name)
    if unknown:
        print(f"gen_fixtures.py: unknown fixture name{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
              f"known: {', '.join(known)}", file=sys.stderr)
        sys.exit(2)
    return [n for n in known if n in chosen]


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Write pelab's PyTorch reference fixtures (all of them, or the NAMEs given).")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="a fixture to write (see --list); none: every fixture")
    parser.add_argument("--list", action="store_true", help="print every NAME with its file and exit")
    parser.add_argument("--out", default=OUT_DIR, metavar="DIR", help="where to write (default: tests/fixtures)")
    args = parser.parse_args(argv)
    known = targets()
    if args.list:
        for name, (file, _) in known.items():
            print(f"{name:26s} {file}")
        return
    chosen = resolve(args.names, known) if args.names else list(known)
    if "abc" in chosen or "abc_bias" in chosen:  # the bias file first: the abc fixture's model reads it
        chosen = ["abc_bias"] + [n for n in chosen if n != "abc_bias"]
    out = os.path.abspath(args.out)

    if not torch.__version__.startswith("1.13"):
        print(f"warning: fixtures were made with torch 1.13, this is {torch.__version__}", file=sys.stderr)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    missing = sorted(set(ref.ENCODINGS) - {enc for enc, _ in FIXTURES.values()})
    assert not missing, f"registered encodings without a fixture in FIXTURES: {missing}"
    check_encodings()
    check_encodings_part2()
    check_transformer_xl()
    check_grape()
    with tempfile.TemporaryDirectory() as tmp:  # the abc fixture reads abc_bias.txt from the working directory
        write_abc_bias(tmp)
        os.chdir(tmp)
        check_model()
        os.chdir(ROOT)
    os.makedirs(out, exist_ok=True)
    os.chdir(out)
    for name in chosen:
        known[name][1](out)


if __name__ == "__main__":
    main()
