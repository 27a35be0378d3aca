#!/usr/bin/env python3
"""gpu_moe_profile: time the kernels of one MoE layer on this machine's GPU (issue 14).

The shapes are those one GPU runs per micro-batch in the Megatron-Bridge DGX-H100 MoE rows of
scenarios/validation/ (balanced routing, as the recipes force it), so that the simulator's op
times (`trainsim run --ops`) can be compared with real kernels. Per case it times:

  gemm      the experts' matrix products, forward, dgrad and wgrad, three ways: one grouped
            kernel (torch._grouped_mm, CUTLASS), one cuBLAS product per expert (torch.mm in a
            loop on one stream, as Megatron's SequentialMLP issues them; TE's GroupedLinear
            spreads them over 4 streams), and FP8 per expert (torch._scaled_mm, per-tensor
            scales: TE's current scaling);
  cast      FP8 current scaling of each expert's input: amax, then scale and cast;
  permute   the gather of the routed copies and the weighted index_add that undoes it;
  act       SwiGLU (gated experts) or squared ReLU;
  attention scaled_dot_product_attention, causal, with the cuDNN and the Flash backends;
  layer     one eager MoE layer, forward and backward, in BF16 (router, top-k, the host sync for
            the tokens per expert, permute, experts, unpermute): wall time per iteration, the
            CPU time to issue it, its GPU time, and the GPU activities (kernels, copies, memsets)
            one iteration runs (torch.profiler), so that issue time per kernel can be read.

Timing: CUDA events around each call after warm-up; the median of --reps calls. Only PyTorch is
needed. Writes JSON (--out) and prints a table. Exit 0 done, 77 no GPU, 2 bad arguments.
"""
import argparse
import json
import os
import statistics
import sys
import time

torch = None  # imported in main(), after the arguments are checked
F = None

# Per GPU, per micro-batch, from the scenario files and presets (scenarios/presets.cc):
# tokens = seq / TP (sequence parallel), experts = experts / EP, routed copies on this GPU =
# tokens x top_k (balanced routing), so per expert tokens x top_k / local experts.
CASES = [
    # Qwen3-30B-A3B, seq 4096, TP 1, EP 16: 128 experts top 8, hidden 2048, expert ffn 768.
    dict(name="qwen3_30b_a3b", tokens=4096, hidden=2048, ffn=768, gated=True, experts=8,
         top_k=8, router_experts=128, heads=32, kv_heads=4, head_dim=128, seq=4096),
    # Qwen3-235B-A22B, seq 4096, TP 2 (SP), EP 32, ETP 1: hidden 4096, expert ffn 1536.
    dict(name="qwen3_235b_a22b", tokens=2048, hidden=4096, ffn=1536, gated=True, experts=4,
         top_k=8, router_experts=128, heads=32, kv_heads=2, head_dim=128, seq=4096),
    # GPT-OSS-120B, seq 4096, TP 1, EP 8: 128 experts top 4, hidden 2880, expert ffn 2880.
    dict(name="gpt_oss_120b", tokens=4096, hidden=2880, ffn=2880, gated=True, experts=16,
         top_k=4, router_experts=128, heads=64, kv_heads=8, head_dim=64, seq=4096),
    # Nemotron 3 Nano, seq 8192, TP 1, EP 8: 128 experts top 6, hidden 2688, ffn 1856, ReLU².
    dict(name="nemotron3_nano", tokens=8192, hidden=2688, ffn=1856, gated=False, experts=16,
         top_k=6, router_experts=128, heads=32, kv_heads=2, head_dim=128, seq=8192),
]

BF16_PEAK = 989.4e12  # H100/H200 SXM dense BF16 (datasheet); FP8 twice that
FP8_PEAK = 1978.9e12


def timed(fn, warmup, reps):
    """Median seconds of one fn() call: calls back to back between two CUDA events, as many as
    make the span at least a millisecond, so that a short kernel's launch latency is amortised.
    (The 2026-12-04 data in docs/evidence/ was taken one call per event pair.)"""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()

    def span(calls):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e-3 / calls

    calls = max(1, min(100, int(1e-3 / max(span(1), 1e-7)) + 1))
    return statistics.median(span(calls) for _ in range(reps))


def attempt(results, key, fn):
    """Runs fn(); stores its value or the error under key, never raising."""
    try:
        results[key] = fn()
    except Exception as ex:  # noqa: BLE001 - every failure is reported, the rest goes on
        results[key] = {"error": f"{type(ex).__name__}: {str(ex).splitlines()[0][:200]}"}
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 - a sticky CUDA error: the next attempts report it
            pass


def gemm_rows(c, dev, warmup, reps):
    """Expert products: grouped, per-expert cuBLAS, per-expert FP8; fwd, dgrad, wgrad."""
    E, T, h, f = c["experts"], c["tokens"] * c["top_k"] // c["experts"], c["hidden"], c["ffn"]
    up = 2 * f if c["gated"] else f
    out = {}
    # (name, M, N, K): fwd C[M×N] = A[M×K]·B[K×N]; dgrad dA = dC·Bᵀ; wgrad dB = Aᵀ·dC.
    for lin, n_out, k_in in (("up", up, h), ("down", h, f)):
        shapes = {"fwd": (T, n_out, k_in), "dgrad": (T, k_in, n_out), "wgrad": (k_in, n_out, T)}
        for pas, (M, N, K) in shapes.items():
            key = f"{lin}.{pas}"
            flops = 2.0 * E * M * N * K
            row = {"m": M, "n": N, "k": K, "batch": E, "gflop": flops / 1e9}
            a = torch.randn(E * M, K, device=dev, dtype=torch.bfloat16)
            b = torch.randn(E, N, K, device=dev, dtype=torch.bfloat16)  # B as [N×K]: "TN"
            offs = torch.arange(1, E + 1, device=dev, dtype=torch.int32) * M

            def grouped():
                return torch._grouped_mm(a, b.transpose(-2, -1), offs=offs)

            def grouped_s():
                s = timed(grouped, warmup, reps)
                return {"s": s, "tflops": flops / s / 1e12, "of_peak": flops / s / BF16_PEAK}

            attempt(row, "bf16_grouped", grouped_s)
            a_e = [a[i * M:(i + 1) * M] for i in range(E)]

            def loop():
                for i in range(E):
                    torch.mm(a_e[i], b[i].t())

            def loop_s():
                s = timed(loop, warmup, reps)
                return {"s": s, "tflops": flops / s / 1e12, "of_peak": flops / s / BF16_PEAK}

            attempt(row, "bf16_loop", loop_s)

            def fp8_s():
                a8 = [x.to(torch.float8_e4m3fn) for x in a_e]
                b8 = [b[i].to(torch.float8_e4m3fn) for i in range(E)]
                one = torch.ones((), device=dev, dtype=torch.float32)

                def run():
                    for i in range(E):
                        torch._scaled_mm(a8[i], b8[i].t(), scale_a=one, scale_b=one,
                                         out_dtype=torch.bfloat16)

                s = timed(run, warmup, reps)
                return {"s": s, "tflops": flops / s / 1e12, "of_peak": flops / s / FP8_PEAK}

            attempt(row, "fp8_loop", fp8_s)
            out[key] = row
            del a, b
    return out


def cast_row(c, dev, warmup, reps):
    """FP8 current scaling of each expert's input [T×h]: amax pass, then scale and cast, as
    unfused PyTorch ops (TE fuses the cast: an upper bound on its time)."""
    E, T, h = c["experts"], c["tokens"] * c["top_k"] // c["experts"], c["hidden"]
    x = torch.randn(E * T, h, device=dev, dtype=torch.bfloat16)
    parts = [x[i * T:(i + 1) * T] for i in range(E)]

    def run():
        for p in parts:
            amax = p.abs().amax().float()
            (p.float() * (448.0 / amax)).to(torch.float8_e4m3fn)

    s = timed(run, warmup, reps)
    # Ideal traffic: read 2 B twice (amax, cast), write 1 B.
    return {"s": s, "bytes": 5.0 * x.numel(), "gbyte_per_s": 5.0 * x.numel() / s / 1e9}


def permute_rows(c, dev, warmup, reps):
    S, k, h = c["tokens"], c["top_k"], c["hidden"]
    x = torch.randn(S, h, device=dev, dtype=torch.bfloat16)
    src = torch.randperm(S * k, device=dev) // k  # each token k times, shuffled
    y = torch.randn(S * k, h, device=dev, dtype=torch.bfloat16)
    w = torch.rand(S * k, 1, device=dev, dtype=torch.bfloat16)
    out = {}
    moved = 2.0 * S * k * h * 2  # read and write each routed copy once (bf16)

    def gather():
        return x.index_select(0, src)

    def scatter():
        return torch.zeros_like(x).index_add_(0, src, y * w)

    for key, fn in (("permute", gather), ("unpermute", scatter)):
        def one(fn=fn):
            s = timed(fn, warmup, reps)
            return {"s": s, "bytes": moved, "gbyte_per_s": moved / s / 1e9}
        attempt(out, key, one)
    return out


def act_row(c, dev, warmup, reps):
    E, T, f = c["experts"], c["tokens"] * c["top_k"] // c["experts"], c["ffn"]
    if c["gated"]:
        a = torch.randn(E * T, 2 * f, device=dev, dtype=torch.bfloat16)

        def run():
            g, u = a.chunk(2, dim=-1)
            return F.silu(g) * u
        moved = E * T * (4 * f + 2 * f)
    else:
        a = torch.randn(E * T, f, device=dev, dtype=torch.bfloat16)

        def run():
            return torch.square(F.relu(a))
        moved = E * T * (2 * f + 2 * f)
    s = timed(run, warmup, reps)
    return {"s": s, "bytes": float(moved), "gbyte_per_s": moved / s / 1e9}


def attention_rows(c, dev, warmup, reps):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    H, D, S = c["heads"], c["head_dim"], c["seq"]
    q = torch.randn(1, H, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
    kv = [torch.randn(1, H, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
          for _ in range(2)]  # KV heads expanded to H outside the timing (GQA)
    g = torch.randn(1, H, S, D, device=dev, dtype=torch.bfloat16)
    # Causal: the two products over the lower triangle, S(S+1)/2 pairs, 2 FLOPs per MAC.
    fwd_flops = 4.0 * H * D * S * (S + 1) / 2
    out = {"fwd_gflop": fwd_flops / 1e9, "bwd_gflop": 2.5 * fwd_flops / 1e9}
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        def one(be=be):
            with sdpa_kernel([be]):
                def fwd():
                    return F.scaled_dot_product_attention(q, kv[0], kv[1], is_causal=True)
                o = fwd()

                def bwd():
                    torch.autograd.grad(o, (q, kv[0], kv[1]), g, retain_graph=True)
                tf = timed(fwd, warmup, reps)
                tb = timed(bwd, warmup, reps)
            return {"fwd_s": tf, "bwd_s": tb, "fwd_of_peak": fwd_flops / tf / BF16_PEAK,
                    "bwd_of_peak": 2.5 * fwd_flops / tb / BF16_PEAK}
        attempt(out, name, one)
    return out


def layer_row(c, dev, warmup, reps):
    """One eager BF16 MoE layer, forward + backward, as a plain PyTorch implementation runs it."""
    S, k, E, h, f = c["tokens"], c["top_k"], c["experts"], c["hidden"], c["ffn"]
    up = 2 * f if c["gated"] else f
    x = torch.randn(S, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    wr = torch.randn(c["router_experts"], h, device=dev, dtype=torch.bfloat16) * 0.02
    w1 = (torch.randn(E, up, h, device=dev, dtype=torch.bfloat16) * 0.02).requires_grad_()
    w2 = (torch.randn(E, h, f, device=dev, dtype=torch.bfloat16) * 0.02).requires_grad_()
    grad = torch.randn(S, h, device=dev, dtype=torch.bfloat16)
    use_grouped = [True]
    fallback = []

    def step():
        logits = (x @ wr.t()).float()
        probs, top = torch.topk(torch.softmax(logits, -1), k, dim=-1)
        # Force-balanced routing (the recipes' moe_router_force_load_balancing): copy j of
        # token t goes to local expert (t·k + j) mod E; the router's work is still done above.
        ids = (torch.arange(S * k, device=dev) % E) + 0 * top.reshape(-1)
        counts = torch.bincount(ids, minlength=E)
        splits = counts.tolist()  # the host sync Megatron's all-to-all dispatcher makes
        order = torch.argsort(ids, stable=True)
        src = order // k
        xp = x.index_select(0, src)
        if use_grouped[0]:
            offs = torch.cumsum(counts, 0).to(torch.int32)
            a = torch._grouped_mm(xp, w1.transpose(-2, -1), offs=offs)
        else:
            a = torch.cat([p @ w1[i].t() for i, p in enumerate(xp.split(splits))])
        if c["gated"]:
            g_, u_ = a.chunk(2, dim=-1)
            a = F.silu(g_) * u_
        else:
            a = torch.square(F.relu(a))
        if use_grouped[0]:
            y = torch._grouped_mm(a, w2.transpose(-2, -1), offs=offs)
        else:
            y = torch.cat([p @ w2[i].t() for i, p in enumerate(a.split(splits))])
        wgt = probs.reshape(-1)[order].to(torch.bfloat16).unsqueeze(1)
        out = torch.zeros_like(x).index_add(0, src, y * wgt)
        out.backward(grad)

    try:
        step()
    except Exception as ex:  # noqa: BLE001 - grouped_mm without autograd: per-expert products
        fallback.append(f"{type(ex).__name__}: {str(ex).splitlines()[0][:200]}")
        use_grouped[0] = False
        x.grad = None
        step()
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    walls, issues, gpus = [], [], []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        s.record()
        step()
        e.record()
        t1 = time.perf_counter()
        e.synchronize()
        t2 = time.perf_counter()
        issues.append(t1 - t0)
        walls.append(t2 - t0)
        gpus.append(s.elapsed_time(e) * 1e-3)
    kernels = None
    try:  # kernels one step launches, to put the host's time per kernel next to issue_s
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        kernels = sum(1 for ev in prof.events()
                      if getattr(ev, "device_type", None) == torch.autograd.DeviceType.CUDA)
    except Exception:  # noqa: BLE001 - no profiler here: the count is left out
        kernels = None
    return {"experts_kernel": "grouped" if use_grouped[0] else "per-expert loop",
            "gpu_kernels": kernels,
            "grouped_error": fallback[0] if fallback else None,
            "wall_s": statistics.median(walls), "issue_s": statistics.median(issues),
            "events_s": statistics.median(gpus)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="JSON file to write")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--cases", default=",".join(c["name"] for c in CASES))
    args = ap.parse_args()
    if args.reps < 1 or args.warmup < 0:
        print("gpu_moe_profile: --reps must be >= 1 and --warmup >= 0", file=sys.stderr)
        return 2
    names = args.cases.split(",")
    unknown = [n for n in names if n not in {c["name"] for c in CASES}]
    if unknown:
        print(f"gpu_moe_profile: unknown case {unknown[0]!r}; expected one of "
              + ", ".join(c["name"] for c in CASES), file=sys.stderr)
        return 2
    global torch, F
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("gpu_moe_profile: SKIPPED: needs PyTorch")
        return 77
    if not torch.cuda.is_available():
        print("gpu_moe_profile: SKIPPED: no CUDA GPU")
        return 77
    dev = torch.device("cuda")
    torch.manual_seed(1)
    props = torch.cuda.get_device_properties(dev)
    report = {"gpu": props.name, "sms": props.multi_processor_count,
              "torch": torch.__version__, "cuda": torch.version.cuda,
              "cudnn": torch.backends.cudnn.version(),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cases": {}}
    # HBM: a device-to-device copy of 2 GiB (read + write).
    buf = torch.empty(1 << 30, device=dev, dtype=torch.uint16)
    dst = torch.empty_like(buf)
    s = timed(lambda: dst.copy_(buf), args.warmup, args.reps)
    report["copy_gbyte_per_s"] = 2 * buf.numel() * 2 / s / 1e9
    del buf, dst
    print(f"# gpu_moe_profile: {props.name}, {props.multi_processor_count} SMs, torch "
          f"{torch.__version__}, CUDA {torch.version.cuda}; copy "
          f"{report['copy_gbyte_per_s']:.0f} GB/s", flush=True)
    for c in CASES:
        if c["name"] not in names:
            continue
        t0 = time.time()
        r = {"shape": c}
        attempt(r, "gemm", lambda: gemm_rows(c, dev, args.warmup, args.reps))
        attempt(r, "cast", lambda: cast_row(c, dev, args.warmup, args.reps))
        attempt(r, "permute", lambda: permute_rows(c, dev, args.warmup, args.reps))
        attempt(r, "act", lambda: act_row(c, dev, args.warmup, args.reps))
        attempt(r, "attention", lambda: attention_rows(c, dev, args.warmup, args.reps))
        attempt(r, "layer", lambda: layer_row(c, dev, args.warmup, args.reps))
        torch.cuda.empty_cache()
        report["cases"][c["name"]] = r
        print(f"\n## {c['name']} ({time.time() - t0:.1f} s)")
        print(json.dumps({k: v for k, v in r.items() if k != "shape"}, indent=1), flush=True)
    if args.out:
        with open(args.out + ".tmp", "w") as fh:
            json.dump(report, fh, indent=1)
        os.replace(args.out + ".tmp", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
