#include "harness/gpu/cublas_gemm.hpp"

#include <cublas_api.h>
#include <dlfcn.h>

#include <algorithm>

#include "harness/gpu/cupti_timer.hpp"
#include "harness/gpu/inputs.hpp"

namespace ak {

struct CublasGemm::Api {
  void* lib = nullptr;
  cublasHandle_t handle = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  // Spelled out: cublas_api.h overloads cublasGemmEx in C++, so decltype cannot name it.
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemm = nullptr;
};

Result<std::unique_ptr<CublasGemm>> CublasGemm::open() {
  std::unique_ptr<CublasGemm> g(new CublasGemm());
  g->api_ = std::make_unique<Api>();
  Api& a = *g->api_;
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
    if ((a.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  if (!a.lib) return error(std::string("cuBLAS could not be loaded (") + dlerror() + "): install libcublas or set LD_LIBRARY_PATH");
  auto create = reinterpret_cast<decltype(&cublasCreate_v2)>(dlsym(a.lib, "cublasCreate_v2"));
  a.destroy = reinterpret_cast<decltype(&cublasDestroy_v2)>(dlsym(a.lib, "cublasDestroy_v2"));
  a.gemm = reinterpret_cast<Api::GemmEx>(dlsym(a.lib, "cublasGemmEx"));
  if (!create || !a.destroy || !a.gemm) return error("this cuBLAS lacks cublasCreate_v2 / cublasGemmEx");
  if (cublasStatus_t st = create(&a.handle); st != CUBLAS_STATUS_SUCCESS)
    return error("cublasCreate failed (status " + std::to_string(int(st)) + ")");
  return g;
}

CublasGemm::~CublasGemm() {
  if (api_ && api_->handle) api_->destroy(api_->handle);
}

Status CublasGemm::run(const GemmShape& g, DType d, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  const cudaDataType t = d == DType::F16 ? CUDA_R_16F : d == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
  const float alpha = 1, beta = 0;
  // cuBLAS is column-major: the row-major C = A B is the column-major C^T = B^T A^T. A row-major
  // B[n, k] (a Linear's weight) reads as the column-major k x n matrix, transposed by the call.
  cublasStatus_t st = api_->gemm(api_->handle, g.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, int(g.n), int(g.m),
                                 int(g.k), &alpha, reinterpret_cast<void*>(b), t, int(g.b_transposed ? g.k : g.n),
                                 reinterpret_cast<void*>(a), t, int(g.k), &beta,
                                 reinterpret_cast<void*>(c), t, int(g.n),
                                 d == DType::F32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    return error("cublasGemmEx " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) + " " +
                 dtype_name(d) + " failed (status " + std::to_string(int(st)) + ")");
  return ok();
}

namespace {

/// Replaces each repetition's event time by the span of its kernels on the GPU, first start to
/// last end, as the candidate is timed (CUPTI, no launch overhead); a repetition of which CUPTI
/// returned no kernel keeps its event time.
void cupti_spans_into(const std::vector<CuptiKernelTimer::Span>& spans, const std::vector<uint64_t>& done_at,
                      std::vector<double>& us) {
  uint64_t from = 0;
  for (size_t i = 0; i < done_at.size(); ++i) {
    uint64_t first = UINT64_MAX, last = 0;
    for (const auto& s : spans)
      if (s.start > from && s.start <= done_at[i]) first = std::min(first, s.start), last = std::max(last, s.end);
    if (last > first) us[i] = double(last - first) / 1000.0;
    from = done_at[i];
  }
}

}  // namespace

Result<double> time_cublas_gemms(GpuContext& gpu, const std::vector<GemmShape>& gemms, DType d, int repetitions) {
  auto blas = CublasGemm::open();
  if (!blas) return blas.error();
  const CudaDriver& drv = gpu.driver();
  std::vector<DeviceBuffer> bufs;
  for (const GemmShape& g : gemms)
    for (int64_t n : {g.m * g.k, g.k * g.n, g.m * g.n}) {
      auto host = make_input(d, n, g.k, Fill::FanIn, Recipe::Normal, uint64_t(bufs.size() + 1), 0.03f);
      auto buf = gpu.alloc(host.size());
      if (!buf) return buf.error();
      if (auto s = gpu.upload(*buf, host.data(), host.size()); !s) return s.error();
      bufs.push_back(std::move(*buf));
    }
  auto flush = gpu.alloc(std::max<size_t>(gpu.info().l2_bytes * 2, 64 << 20));
  if (!flush) return flush.error();
  CUevent e0, e1;
  drv.cuEventCreate(&e0, CU_EVENT_DEFAULT);
  drv.cuEventCreate(&e1, CU_EVENT_DEFAULT);
  std::vector<double> us;
  std::vector<uint64_t> done_at;   // CUPTI's clock after each repetition: the windows of its kernels
  const bool cupti = CuptiKernelTimer::start().ok();
  Status st = ok();
  for (int i = 0; i < repetitions + 3 && st; ++i) {
    drv.cuMemsetD8Async(flush->ptr(), (unsigned char)(i & 0xff), flush->bytes(), nullptr);
    drv.cuEventRecord(e0, nullptr);
    for (size_t j = 0; j < gemms.size() && st; ++j)
      st = (*blas)->run(gemms[j], d, bufs[3 * j].ptr(), bufs[3 * j + 1].ptr(), bufs[3 * j + 2].ptr());
    drv.cuEventRecord(e1, nullptr);
    if (auto s = cu_check(drv.cuEventSynchronize(e1), "timing the cuBLAS baseline"); !s) st = s;
    float ms = 0;
    drv.cuEventElapsedTime(&ms, e0, e1);
    done_at.push_back(cupti ? CuptiKernelTimer::now() : 0);
    us.push_back(double(ms) * 1000.0);
  }
  drv.cuEventDestroy(e0);
  drv.cuEventDestroy(e1);
  if (cupti) {
    auto spans = CuptiKernelTimer::stop_all(done_at.size() * gemms.size());
    if (!spans) return spans.error();
    if (st) cupti_spans_into(*spans, done_at, us);
  }
  if (!st) return st.error();
  us.erase(us.begin(), us.begin() + 3);   // the first three warm cuBLAS up
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace ak
