#!/usr/bin/env python3
"""Writes dgx_h100_sample.json: a SAMPLE calibration file, not a measurement.

The numbers are what NCCL's own cost model and the H100 datasheet predict for one DGX H100
(8x H100 SXM 80GB, NVLink 4 through NVSwitch), so that the file is physically plausible and its
derivation can be checked by hand. Replace it with a file written by `trainsim calibrate` (or
scripts/gpu-check.sh) on real GPUs before trusting any result that depends on it.

Collectives -- NCCL's tuning model (NVIDIA/nccl src/graph/tuning.cc v2.30, summarised in
docs/evidence/references.md, "NCCL's cost model"): time = lat + S / algbw, minimised over the protocols LL, LL128 and Simple
as NCCL does when it picks one per call.
  * per-channel NVLink bandwidth on H100: 20.6 GB/s; 16 channels assumed -> busBw 329.6 GB/s;
    LL <= 0.5 busBw, LL128 <= 0.92 busBw, Simple = busBw (Tree all-reduce also <= 0.92 busBw).
  * latency = base + nsteps * per-hop NVLink latency; base [LL, LL128, Simple] = Ring 6.6/14/8.4,
    Tree 6.8/14/8.4 us; per hop Ring 0.6/1.9/3.4, Tree 0.6/1.25/4.0 us. Ring nsteps: all-reduce
    2(n-1), reduce-scatter/all-gather/broadcast n-1; Tree all-reduce on one node:
    2 (n-1) hops.
  * bus -> algorithm bandwidth: Ring all-reduce x n/(2(n-1)), reduce-scatter/all-gather
    x n/(n-1), broadcast x1; Tree all-reduce x0.5.
  * send_recv: NCCL's p2p path is outside tuning.cc; modelled as one Ring step (nsteps 1) with
    the Ring protocol table -- an assumption, stated.
  busbw_GBps follows nccl-tests (doc/PERFORMANCE.md): algbw x 2(n-1)/n for all-reduce, x(n-1)/n
  for reduce-scatter/all-gather, x1 for broadcast and send/recv.
Matrix products -- H100 SXM dense peaks 989 TFLOP/s BF16 and 1979 FP8 (datasheet); cuBLAS on
large GEMMs is assumed to reach 75% (BF16) and 65% (FP8) of peak (clock and power limits keep
H100 below its dense peak); smaller shapes lose to wave quantisation (128x256 output tiles on 132
SMs) and to the K-loop prologue/epilogue (factor k/(k+128)).
Shapes: one GPT-3 175B layer (h 12288, 96 heads, ffn 49152, seq 2048, micro-batch 1) under TP 8
with unfused attention, the shapes `trainsim calibrate --dry-run` lists for the demo with
model.flash_attention=false (the roles carry an older naming; lookups go by shape alone).

Usage: python3 scenarios/calibration/make_sample.py > scenarios/calibration/dgx_h100_sample.json
"""
import json
import math

N_CH = 16
BUS = N_CH * 20.6  # GB/s
PROTO = ("LL", "LL128", "Simple")
BASE = {"ring": (6.6, 14.0, 8.4), "tree": (6.8, 14.0, 8.4)}
HOP = {"ring": (0.6, 1.9, 3.4), "tree": (0.6, 1.25, 4.0)}
BW_CAP = {"ring": (0.5, 0.92, 1.0), "tree": (0.5, 0.92, 0.92)}


def coll_time_s(op, algo, n, size):
    table = "tree" if algo == "tree" else "ring"
    if op == "all_reduce":
        steps = 2 * (n - 1)
        alg_factor = 0.5 if algo == "tree" else n / (2 * (n - 1))
    elif op in ("reduce_scatter", "all_gather"):
        steps, alg_factor = n - 1, n / (n - 1)
    elif op == "broadcast":
        steps, alg_factor = n - 1, 1.0
    else:  # send_recv
        steps, alg_factor = 1, 1.0
    best = None
    for p in range(3):
        lat_us = BASE[table][p] + steps * HOP[table][p]
        algbw = BUS * BW_CAP[table][p] * alg_factor  # GB/s
        t = lat_us * 1e-6 + size / (algbw * 1e9)
        best = t if best is None else min(best, t)
    return float("%.4g" % best)


def busbw(op, n, size, t):
    factor = {"all_reduce": 2 * (n - 1) / n, "reduce_scatter": (n - 1) / n,
              "all_gather": (n - 1) / n}.get(op, 1.0)
    return round(size / t / 1e9 * factor, 3)


def gemm_tflops(dtype, m, n, k, batch):
    peak, eff = {"bf16": (989.0, 0.75), "fp8": (1979.0, 0.65)}[dtype]
    tiles = math.ceil(m / 128) * math.ceil(n / 256) * batch
    waves = tiles / (math.ceil(tiles / 132) * 132)
    return round(peak * eff * waves * k / (k + 128), 1)


def main():
    sizes = [8 * 8**i for i in range(10)]  # 8 B .. 1 GiB
    rows = []
    curves = [("all_reduce", "ring", 8), ("all_reduce", "tree", 8), ("all_reduce", "ring", 4),
              ("reduce_scatter", "ring", 8), ("all_gather", "ring", 8), ("broadcast", "ring", 8),
              ("send_recv", "direct", 8)]
    for op, algo, n in curves:
        for s in sizes:
            t = coll_time_s(op, algo, n, s)
            rows.append({"op": op, "algo": algo, "nranks": n, "nodes": 1, "size_bytes": s,
                         "time_s": t,
                         "busbw_GBps": busbw(op, n, s, t)})
    h, a, f, s, b, tp = 12288, 96, 49152, 2048, 1, 8
    d, tok = h // a, b * s
    lin = [("qkv", 3 * h // tp, h), ("proj", h, h // tp), ("fc1", f // tp, h), ("fc2", h, f // tp)]
    shapes = [(nm, tok, n, k, 1) for nm, n, k in lin]
    shapes += [(nm + ".dgrad", tok, k, n, 1) for nm, n, k in lin]
    shapes += [(nm + ".wgrad", n, k, tok, 1) for nm, n, k in lin]
    attn = [("attn.scores", s, s, d, b * a // tp), ("attn.context", s, d, s, b * a // tp)]
    gemm, seen = [], set()
    for dtype, shape_list in (("bf16", shapes + attn), ("fp8", shapes)):
        for nm, m, n, k, bt in shape_list:
            if (dtype, m, n, k, bt) in seen:
                continue
            seen.add((dtype, m, n, k, bt))
            row = {"name": nm, "dtype": dtype, "m": m, "n": n, "k": k}
            if bt != 1:
                row["batch"] = bt
            row["tflops"] = gemm_tflops(dtype, m, n, k, bt)
            gemm.append(row)
    doc = {
        "format": "trainsim-calibration", "version": 1, "sample": True,
        "note": "SAMPLE, NOT MEASURED: NCCL tuning-model and datasheet numbers for a DGX H100; "
                "see scenarios/calibration/make_sample.py for the derivation",
        "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "compute_capability": "9.0",
        "nccl_version": "2.30 (tuning model)", "cuda_version": "13.0",
        "date": "2026-11-30", "collectives": rows, "gemm": gemm,
    }
    out = json.dumps(doc, indent=1)
    # One row per line keeps the file readable and diffs small.
    out = json.dumps({k: v for k, v in doc.items() if k not in ("collectives", "gemm")},
                     indent=2)[:-2]
    lines = [out + ","]
    for key in ("collectives", "gemm"):
        lines.append('  "%s": [' % key)
        items = doc[key]
        for i, r in enumerate(items):
            lines.append("    " + json.dumps(r) + ("," if i + 1 < len(items) else ""))
        lines.append("  ]" + ("," if key == "collectives" else ""))
    lines.append("}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
