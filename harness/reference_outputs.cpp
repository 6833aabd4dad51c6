#include "harness/reference_outputs.hpp"

#include "harness/stages.hpp"

namespace ak {

Comparison ExpectedOutputs::compare(size_t i, const void* got, DType d, Tolerance tol) const {
  const auto& e = values.at(i);
  return rows.empty() ? compare_output(got, d, e.data(), int64_t(e.size()), tol)
                      : compare_rows(got, d, e.data(), rows, row_length, tol);
}

std::string ExpectedOutputs::sampled_note() const {
  return rows.empty() ? "" : " (" + std::to_string(rows.size()) + " sampled rows checked)";
}

Result<ExpectedOutputs> reference_outputs(GpuContext& gpu, const KernelSpec& spec, const LaunchableKernel& reference,
                                          const RunBuffers& inputs, const Shape& shape, DType d, uint64_t seed,
                                          CUresult& cuda_error) {
  cuda_error = CUDA_SUCCESS;
  ExpectedOutputs out;
  RunBuffers ref_bufs = inputs;
  DeviceBuffer d_rows;
  if (spec.validation_rows > 0) {
    out.row_length = spec.output_row_length(shape);
    out.rows = pick_sample_rows(output_rows(spec, shape), spec.validation_rows, seed);
    auto buf = gpu.alloc(out.rows.size() * sizeof(int32_t));
    if (!buf) return buf.error();
    d_rows = std::move(*buf);
    if (auto s = gpu.upload(d_rows, out.rows.data(), d_rows.bytes()); !s) return s.error();
    ref_bufs.sample_rows = &d_rows;
    ref_bufs.sample_count = int64_t(out.rows.size());
  }
  std::vector<DeviceBuffer> d_expected;
  for (const DeviceBuffer* o : inputs.outputs) {
    const size_t n = out.rows.empty() ? o->bytes() / dtype_size(d) : out.rows.size() * size_t(out.row_length);
    auto e = gpu.alloc(n * sizeof(float));
    if (!e) return e.error();
    d_expected.push_back(std::move(*e));
  }
  ref_bufs.outputs.clear();
  for (auto& e : d_expected) ref_bufs.outputs.push_back(&e);
  CUresult r = reference.launch(spec, d, shape, ref_bufs);
  if (r == CUDA_SUCCESS) r = gpu.driver().cuCtxSynchronize();
  cuda_error = r;
  if (r != CUDA_SUCCESS)
    return error("the reference kernel failed (a harness bug, not the candidate's): " + cu_error_text(r));
  for (auto& e : d_expected) {
    out.values.emplace_back(e.bytes() / sizeof(float));
    if (auto s = gpu.download(out.values.back().data(), e, e.bytes()); !s) return s.error();
  }
  return out;
}

}  // namespace ak
