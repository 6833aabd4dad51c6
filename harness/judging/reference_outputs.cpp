#include "harness/judging/reference_outputs.hpp"

namespace ak {

/// The rows a sampled validation checks: all when there are few, else the first, the last, and
/// random others drawn from the run's seed, in increasing order.
std::vector<int32_t> pick_sample_rows(int64_t rows, int want, uint64_t seed) {
  std::vector<int32_t> out;
  if (rows <= want) {
    for (int64_t r = 0; r < rows; ++r) out.push_back(int32_t(r));
    return out;
  }
  std::vector<bool> taken(size_t(rows), false);
  taken[0] = taken[size_t(rows - 1)] = true;
  uint64_t x = seed | 1;
  for (int n = 2; n < want;) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    if (!taken[size_t(x % uint64_t(rows))]) taken[size_t(x % uint64_t(rows))] = true, ++n;
  }
  for (int64_t r = 0; r < rows; ++r)
    if (taken[size_t(r)]) out.push_back(int32_t(r));
  return out;
}

Result<Comparison> ExpectedOutputs::judge(size_t i, const DeviceBuffer& got, DType d, Tolerance tol) const {
  const DeviceBuffer& e = values_.at(i);
  const int64_t n = int64_t(e.bytes() / sizeof(float));
  auto suspects = checks_->suspects(got, d, e, n, tol, rows_.empty() ? nullptr : &d_rows_, row_length_);
  if (!suspects) return suspects.error();
  if (*suspects == 0) {
    Comparison all_good;
    all_good.elements = n;
    return all_good;
  }
  // The host's comparison is the judge of record and says what is wrong.
  std::vector<float> expected(static_cast<size_t>(n));
  std::vector<char> bytes(got.bytes());
  if (auto s = gpu_->download(expected.data(), e, e.bytes()); !s) return s.error();
  if (auto s = gpu_->download(bytes.data(), got, bytes.size()); !s) return s.error();
  return rows_.empty() ? compare_output(bytes.data(), d, expected.data(), n, tol)
                       : compare_rows(bytes.data(), d, expected.data(), rows_, row_length_, tol);
}

Status ExpectedOutputs::wipe() const {
  const CudaDriver& d = gpu_->driver();
  for (const DeviceBuffer& e : values_)
    if (auto s = cu_check(d.cuMemsetD8(e.ptr(), 0xff, e.bytes()), "wiping the expected outputs"); !s) return s;
  if (d_rows_.bytes() > 0)
    if (auto s = cu_check(d.cuMemsetD8(d_rows_.ptr(), 0xff, d_rows_.bytes()), "wiping the sampled rows"); !s) return s;
  return ok();
}

std::string ExpectedOutputs::sampled_note() const {
  return rows_.empty() ? "" : " (" + std::to_string(rows_.size()) + " sampled rows checked)";
}

Result<ExpectedOutputs> reference_outputs(GpuContext& gpu, const DeviceChecks& checks, const KernelSpec& spec,
                                          const LaunchableKernel& reference, const RunBuffers& inputs,
                                          const Shape& shape, DType d, uint64_t seed, CUresult& cuda_error) {
  cuda_error = CUDA_SUCCESS;
  ExpectedOutputs out;
  out.gpu_ = &gpu;
  out.checks_ = &checks;
  RunBuffers ref_bufs = inputs;
  if (spec.validation_rows > 0) {
    out.row_length_ = spec.output_row_length(shape);
    out.rows_ = pick_sample_rows(output_rows(spec, shape), spec.validation_rows, seed);
    auto buf = gpu.alloc(out.rows_.size() * sizeof(int32_t));
    if (!buf) return buf.error();
    out.d_rows_ = std::move(*buf);
    if (auto s = gpu.upload(out.d_rows_, out.rows_.data(), out.d_rows_.bytes()); !s) return s.error();
    ref_bufs.sample_rows = &out.d_rows_;
    ref_bufs.sample_count = int64_t(out.rows_.size());
  }
  for (const DeviceBuffer* o : inputs.outputs) {
    const size_t n = out.rows_.empty() ? o->bytes() / dtype_size(d) : out.rows_.size() * size_t(out.row_length_);
    auto e = gpu.alloc(n * sizeof(float));
    if (!e) return e.error();
    out.values_.push_back(std::move(*e));
  }
  ref_bufs.outputs.clear();
  for (auto& e : out.values_) ref_bufs.outputs.push_back(&e);
  CUresult r = reference.launch(spec, d, shape, ref_bufs);
  if (r == CUDA_SUCCESS) r = gpu.driver().cuCtxSynchronize();
  cuda_error = r;
  if (r != CUDA_SUCCESS)
    return error("the reference kernel failed (a harness bug, not the candidate's): " + cu_error_text(r));
  return out;
}

}  // namespace ak
