// cuBLASLt matrix-product benchmark and the GPU probe: see gpu_bench.h.
//
// Checks results: GEMM inputs are pseudo-random values with every mantissa bit of their type in
// use, exact in it, and sampled outputs are compared with a host dot product.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/nccl/cuda_status.h"
#include "comm/nccl/gpu_bench.h"

namespace trainsim::comm::nccl {
namespace {

using Clock = std::chrono::steady_clock;

std::string Version(int v) {  // CUDA's 1000·major + 10·minor
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// GEMM inputs: element idx holds a pseudo-random value of the period kGemmPeriod, ±(1 + f)·2^e
// with e in {-4..-1} and f using all `mantissa_bits` (7 for BF16, 10 for FP16, 3 for FP8 E4M3),
// so it is exact in its type and each product exact in FP32. Random mantissas matter: the GPU's
// clock under its power limit depends on how many bits toggle, and inputs of a few mantissa bits
// (as this runner used before, multiples of 1/8) ran the GPT-3 qkv product at 895 TFLOP/s on an
// H200, above what random data reaches on Hopper (docs/calibration.md). Training data is random.
constexpr int64_t kGemmPeriod = 65521;  // prime: the pattern does not line up with rows
float GemmValue(int64_t idx, int mantissa_bits) {
  uint32_t h = static_cast<uint32_t>(idx % kGemmPeriod) * 2654435761u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  const uint32_t frac = h & ((1u << mantissa_bits) - 1);
  const float v =
      std::ldexp(1.0f + static_cast<float>(frac) / static_cast<float>(1u << mantissa_bits),
                 -1 - static_cast<int>((h >> 16) & 3));
  return (h >> 31) ? -v : v;
}

uint32_t FloatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}
float BitsFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

// Encoders for the exact values above (normal numbers with no more mantissa bits than the type).
uint16_t ToBf16(float f) { return static_cast<uint16_t>(FloatBits(f) >> 16); }
uint16_t ToFp16(float f) {
  if (f == 0) return 0;
  uint32_t b = FloatBits(f);
  uint32_t sign = (b >> 16) & 0x8000u;
  int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | ((b >> 13) & 0x3ff));
}
uint8_t ToFp8E4M3(float f) {
  if (f == 0) return 0;
  uint32_t b = FloatBits(f);
  uint32_t sign = (b >> 24) & 0x80u;
  int exp = static_cast<int>((b >> 23) & 0xff) - 127 + 7;
  return static_cast<uint8_t>(sign | (static_cast<uint32_t>(exp) << 3) | ((b >> 20) & 0x7));
}
float FromBf16(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }
float FromFp16(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    v = man ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(man | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

struct DtypeInfo {
  cudaDataType_t in, out;
  size_t in_size, out_size;
  int mantissa_bits;  // of the input type
};
DtypeInfo InfoFor(const std::string& dtype) {
  if (dtype == "fp16") return {CUDA_R_16F, CUDA_R_16F, 2, 2, 10};
  if (dtype == "fp8") return {CUDA_R_8F_E4M3, CUDA_R_16BF, 1, 2, 3};
  return {CUDA_R_16BF, CUDA_R_16BF, 2, 2, 7};
}

std::vector<unsigned char> HostPattern(const std::string& dtype) {
  const DtypeInfo info = InfoFor(dtype);
  std::vector<unsigned char> bytes(static_cast<size_t>(kGemmPeriod) * info.in_size);
  for (int64_t i = 0; i < kGemmPeriod; ++i) {
    float v = GemmValue(i, info.mantissa_bits);
    if (dtype == "fp8") {
      bytes[static_cast<size_t>(i)] = ToFp8E4M3(v);
    } else {
      uint16_t h = dtype == "fp16" ? ToFp16(v) : ToBf16(v);
      std::memcpy(&bytes[static_cast<size_t>(i) * 2], &h, 2);
    }
  }
  return bytes;
}

// Fills `elems` elements with the periodic pattern: one host copy, then doubling device copies.
Status FillPattern(void* dst, int64_t elems, size_t elem_size,
                   const std::vector<unsigned char>& pattern, cudaStream_t s) {
  auto* d = static_cast<unsigned char*>(dst);
  int64_t filled = std::min<int64_t>(elems, kGemmPeriod);
  TRAINSIM_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(d, pattern.data(), filled * elem_size, cudaMemcpyHostToDevice, s),
                 "cudaMemcpyAsync (fill)"));
  while (filled < elems) {
    int64_t n = std::min(filled, elems - filled);
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(d + filled * elem_size, d, n * elem_size, cudaMemcpyDeviceToDevice, s),
        "cudaMemcpyAsync (fill)"));
    filled += n;
  }
  return CudaStatus(cudaStreamSynchronize(s), "cudaStreamSynchronize (fill)");
}

Status WaitEvent(cudaEvent_t e, Clock::time_point deadline, const std::string& what) {
  while (true) {
    cudaError_t rc = cudaEventQuery(e);
    if (rc == cudaSuccess) return Status::Ok();
    if (rc != cudaErrorNotReady) return CudaStatus(rc, what.c_str());
    if (Clock::now() > deadline) {
      return Status::Unavailable(what + " did not finish before the timeout (--timeout-s)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Owns the device memory and cuBLASLt descriptors of one benchmark; frees them on every path.
struct GemmResources {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void *a = nullptr, *b = nullptr, *d = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~GemmResources() {
    cudaSetDevice(device);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cudaFree(a);
    if (b) cudaFree(b);
    if (d) cudaFree(d);
  }
};

constexpr size_t kWorkspaceBytes = size_t{64} << 20;  // cuBLAS's recommendation for Hopper: 32 MiB+

Status SetBatch(cublasLtMatrixLayout_t l, int64_t batch, int64_t stride) {
  int32_t count = static_cast<int32_t>(batch);
  TRAINSIM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                    sizeof(count)),
                   "cublasLtMatrixLayoutSetAttribute (batch)"));
  return CublasStatus(cublasLtMatrixLayoutSetAttribute(
                          l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
                      "cublasLtMatrixLayoutSetAttribute (stride)");
}

// One shape and dtype. `skip` gets a reason when this GPU cannot run it (no row then).
Status RunOne(const RunnerOptions& o, const GemmSpec& g, const std::string& dtype, int device,
              cublasLtHandle_t handle, void* workspace, cudaStream_t stream, cudaEvent_t start,
              cudaEvent_t stop, GemmRow* row, std::string* skip) {
  const DtypeInfo info = InfoFor(dtype);
  const int64_t a_elems = g.m * g.k * g.batch, b_elems = g.k * g.n * g.batch,
                d_elems = g.m * g.n * g.batch;
  size_t free_b = 0, total_b = 0;
  TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"));
  const double need = static_cast<double>(a_elems + b_elems) * static_cast<double>(info.in_size) +
                      static_cast<double>(d_elems) * static_cast<double>(info.out_size);
  if (need + (256 << 20) > static_cast<double>(free_b)) {
    *skip = "needs " + std::to_string(static_cast<long long>(need / (1 << 20))) + " MiB, " +
            std::to_string(free_b >> 20) + " MiB free";
    return Status::Ok();
  }
  GemmResources r;
  r.device = device;
  TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&r.a, a_elems * info.in_size), "cudaMalloc (A)"));
  TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&r.b, b_elems * info.in_size), "cudaMalloc (B)"));
  TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&r.d, d_elems * info.out_size), "cudaMalloc (D)"));
  const std::vector<unsigned char> pattern = HostPattern(dtype);
  TRAINSIM_RETURN_IF_ERROR(FillPattern(r.a, a_elems, info.in_size, pattern, stream));
  TRAINSIM_RETURN_IF_ERROR(FillPattern(r.b, b_elems, info.in_size, pattern, stream));

  // D[m×n] = A[m×k]·B[k×n] in cuBLAS's column-major terms: A is stored k×m (ld k) and
  // transposed, B k×n (ld k), D m×n (ld m) -- the "TN" layout FP8 requires on Hopper, and the
  // one a row-major activation times a PyTorch-layout weight gives.
  TRAINSIM_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulDescCreate(&r.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate"));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  TRAINSIM_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)),
      "cublasLtMatmulDescSetAttribute"));
  TRAINSIM_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulDescSetAttribute(r.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)),
      "cublasLtMatmulDescSetAttribute"));
  TRAINSIM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&r.la, info.in, static_cast<uint64_t>(g.k),
                                              static_cast<uint64_t>(g.m), g.k),
                   "cublasLtMatrixLayoutCreate (A)"));
  TRAINSIM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&r.lb, info.in, static_cast<uint64_t>(g.k),
                                              static_cast<uint64_t>(g.n), g.k),
                   "cublasLtMatrixLayoutCreate (B)"));
  TRAINSIM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutCreate(&r.ld, info.out, static_cast<uint64_t>(g.m),
                                              static_cast<uint64_t>(g.n), g.m),
                   "cublasLtMatrixLayoutCreate (D)"));
  if (g.batch > 1) {
    TRAINSIM_RETURN_IF_ERROR(SetBatch(r.la, g.batch, g.m * g.k));
    TRAINSIM_RETURN_IF_ERROR(SetBatch(r.lb, g.batch, g.k * g.n));
    TRAINSIM_RETURN_IF_ERROR(SetBatch(r.ld, g.batch, g.m * g.n));
  }
  TRAINSIM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulPreferenceCreate(&r.pref), "cublasLtMatmulPreferenceCreate"));
  uint64_t ws = kWorkspaceBytes;
  TRAINSIM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulPreferenceSetAttribute(
                       r.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                   "cublasLtMatmulPreferenceSetAttribute"));
  cublasLtMatmulHeuristicResult_t heuristic;
  std::memset(&heuristic, 0, sizeof(heuristic));
  int found = 0;
  cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(handle, r.op, r.la, r.lb, r.ld, r.ld, r.pref,
                                                     1, &heuristic, &found);
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
    *skip = std::string("no cuBLASLt algorithm for this shape and type (") +
            cublasLtGetStatusString(hs) + ")";
    return Status::Ok();
  }
  const float alpha = 1, beta = 0;
  auto launch = [&]() {
    return CublasStatus(
        cublasLtMatmul(handle, r.op, &alpha, r.a, r.la, r.b, r.lb, &beta, r.d, r.ld, r.d, r.ld,
                       &heuristic.algo, workspace, kWorkspaceBytes, stream),
        "cublasLtMatmul");
  };
  const std::string where = dtype + " " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                            std::to_string(g.k) +
                            (g.batch > 1 ? "x" + std::to_string(g.batch) : "");
  const auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s));
  for (int w = 0; w < std::max(o.warmup, 1); ++w) TRAINSIM_RETURN_IF_ERROR(launch());
  const int iters = o.iters > 0 ? o.iters : 10;
  std::vector<double> times;
  for (int rep = 0; rep < o.repeats; ++rep) {
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(start, stream), "cudaEventRecord"));
    for (int it = 0; it < iters; ++it) TRAINSIM_RETURN_IF_ERROR(launch());
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(stop, stream), "cudaEventRecord"));
    TRAINSIM_RETURN_IF_ERROR(WaitEvent(stop, Clock::now() + timeout, "GEMM " + where));
    float ms = 0;
    TRAINSIM_RETURN_IF_ERROR(
        CudaStatus(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime"));
    times.push_back(static_cast<double>(ms) * 1e-3 / iters);
  }
  std::sort(times.begin(), times.end());
  const size_t h = times.size() / 2;
  const double t = times.size() % 2 ? times[h] : (times[h - 1] + times[h]) / 2;
  if (!(t > 0)) {
    *skip = "faster than the CUDA event resolution; raise --iters";
    return Status::Ok();
  }

  row->name = g.name;
  row->dtype = dtype;
  row->m = g.m;
  row->n = g.n;
  row->k = g.k;
  row->batch = g.batch;
  row->time_s = t;
  row->tflops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
                static_cast<double>(g.k) * static_cast<double>(g.batch) / t / 1e12;
  if (!o.check) return Status::Ok();
  // 32 sampled outputs against a host dot product. Tolerance: the final rounding of D (2^-8
  // relative for BF16, 2^-11 for FP16) plus a share of the sum of |products| for the FP32
  // accumulation's rounding and in case cuBLAS reduces split-K partials in the output type.
  for (int s = 0; s < 32; ++s) {
    const int64_t bi = (s * 7) % g.batch, i = (s * 2654435761LL) % g.m,
                  j = (s * 40503LL + 11) % g.n;
    double ref = 0, mag = 0;
    for (int64_t kk = 0; kk < g.k; ++kk) {
      double p = static_cast<double>(GemmValue(bi * g.m * g.k + i * g.k + kk, info.mantissa_bits)) *
                 static_cast<double>(GemmValue(bi * g.k * g.n + j * g.k + kk, info.mantissa_bits));
      ref += p;
      mag += std::fabs(p);
    }
    uint16_t raw = 0;
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpy(&raw, static_cast<unsigned char*>(r.d) + (bi * g.m * g.n + j * g.m + i) * 2, 2,
                   cudaMemcpyDeviceToHost),
        "cudaMemcpy (check)"));
    const double got = dtype == "fp16" ? FromFp16(raw) : FromBf16(raw);
    const double rel = dtype == "fp16" ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    // FP8 tensor-core accumulation is narrower than FP32 between promotions (DeepSeek-V3 report,
    // §3.3.2: about 14 bits on Hopper), so FP8 gets 2^-8 of the |products| sum instead of 2^-10;
    // a wrong or empty product still misses by about |ref| on most of the 32 samples.
    const double tol = rel * std::fabs(ref) + std::ldexp(mag, dtype == "fp8" ? -8 : -10) + 1e-6;
    if (!(std::fabs(got - ref) <= tol)) {
      return Status::Internal("GEMM " + where + ": wrong result at batch " + std::to_string(bi) +
                              ", row " + std::to_string(i) + ", column " + std::to_string(j) +
                              ": " + std::to_string(got) + ", expected " + std::to_string(ref) +
                              " ± " + std::to_string(tol));
    }
  }
  row->checked = true;
  return Status::Ok();
}

}  // namespace

Result<GpuEnvironment> ProbeGpus() {
  GpuEnvironment env;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
    return Status::Unavailable(
        "no CUDA GPU is visible (check nvidia-smi, the driver and CUDA_VISIBLE_DEVICES)");
  }
  if (e == cudaErrorInsufficientDriver) {
    return Status::Unavailable("the NVIDIA driver is missing or older than this CUDA runtime (" +
                               std::string(cudaGetErrorString(e)) +
                               "); install a driver for CUDA " + Version(CUDART_VERSION));
  }
  if (e != cudaSuccess) {
    return Status::Unavailable(std::string("cannot query the GPUs: ") + cudaGetErrorString(e) +
                               " (" + cudaGetErrorName(e) + ")");
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p;
    TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&p, i), "cudaGetDeviceProperties"));
    env.devices.push_back({i, p.name, p.major, p.minor, p.totalGlobalMem});
  }
  for (const DeviceInfo& d : env.devices) {
    if (d.name != env.devices[0].name) {
      return Status::Unavailable("the visible GPUs differ (\"" + env.devices[0].name + "\" and \"" +
                                 d.name +
                                 "\"); a calibration describes one GPU type: select "
                                 "one with CUDA_VISIBLE_DEVICES");
    }
  }
  int rt = 0, drv = 0, nv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  env.cuda_runtime = Version(rt);
  env.cuda_driver = Version(drv);
  if (ncclGetVersion(&nv) == ncclSuccess) {
    // NCCL_VERSION_CODE since 2.9: 10000·major + 100·minor + patch.
    env.nccl = std::to_string(nv / 10000) + "." + std::to_string((nv % 10000) / 100) + "." +
               std::to_string(nv % 100);
  } else {
    env.nccl = "unknown";
  }
  return env;
}

Status RunGemms(const RunnerOptions& o, const GpuEnvironment& env, int device, Report* report,
                std::ostream& out) {
  if (o.gemms.empty() || o.dtypes.empty()) return Status::Ok();
  const DeviceInfo& dev = env.devices.at(static_cast<size_t>(device));
  TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(dev.index), "cudaSetDevice"));
  cublasLtHandle_t handle = nullptr;
  TRAINSIM_RETURN_IF_ERROR(CublasStatus(cublasLtCreate(&handle), "cublasLtCreate"));
  std::unique_ptr<cublasLtContext, decltype(&cublasLtDestroy)> handle_guard(handle,
                                                                            &cublasLtDestroy);
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* workspace = nullptr;
  struct Cleanup {
    cudaStream_t& s;
    cudaEvent_t &a, &b;
    void*& w;
    ~Cleanup() {
      if (w) cudaFree(w);
      if (a) cudaEventDestroy(a);
      if (b) cudaEventDestroy(b);
      if (s) cudaStreamDestroy(s);
    }
  } cleanup{stream, start, stop, workspace};
  TRAINSIM_RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&start), "cudaEventCreate"));
  TRAINSIM_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&stop), "cudaEventCreate"));
  TRAINSIM_RETURN_IF_ERROR(
      CudaStatus(cudaMalloc(&workspace, kWorkspaceBytes), "cudaMalloc (cuBLASLt workspace)"));

  PrintGemmHeader(out);
  for (const std::string& dtype : o.dtypes) {
    if (dtype == "fp8" && dev.cc_major * 10 + dev.cc_minor < 89) {
      out << "#  fp8 skipped: " << dev.name << " is compute capability " << dev.cc_major << "."
          << dev.cc_minor << "; cuBLASLt FP8 needs 8.9 (Ada) or 9.0 (Hopper) and later\n";
      continue;
    }
    for (const GemmSpec& g : o.gemms) {
      GemmRow row;
      std::string skip;
      TRAINSIM_RETURN_IF_ERROR(
          RunOne(o, g, dtype, dev.index, handle, workspace, stream, start, stop, &row, &skip));
      if (!skip.empty()) {
        out << "#  " << dtype << " " << g.m << "x" << g.n << "x" << g.k << "x" << g.batch
            << " skipped: " << skip << "\n";
        continue;
      }
      PrintGemmRow(row, out);
      out.flush();
      report->gemms.push_back(row);
    }
  }
  return Status::Ok();
}

}  // namespace trainsim::comm::nccl
