#include "harness/module/run_buffers.hpp"

#include <cmath>

namespace ak {

RunBuffers RunSet::view() const {
  RunBuffers b;
  for (auto& x : inputs) b.inputs.push_back(&x);
  for (auto& x : outputs) b.outputs.push_back(&x);
  for (auto& x : scratch) b.scratch.push_back(&x);
  for (auto& x : counters) b.counters.push_back(&x);
  return b;
}

float fill_scale(const ArgSpec& a, const Shape& shape) {
  return a.fill == Fill::FanIn ? float(1.0 / std::sqrt(double(shape.at(size_t(a.dim))))) : 1.0f;
}

Result<RunSet> allocate_run_set(GpuContext& gpu, const KernelSpec& spec, const Shape& shape, DType d) {
  RunSet r;
  for (const ArgSpec& a : spec.args) {
    if (!a.is_buffer()) continue;
    const size_t bytes = size_t(a.numel(shape)) * elem_size(a.elem, d);
    auto buf = gpu.alloc(bytes);
    if (!buf) return error("allocating " + a.name + " (" + std::to_string(bytes) + " bytes) for " + shape_str(shape) +
                           ": " + buf.error().message);
    r.bytes += bytes;
    switch (a.kind) {
      case ArgSpec::Input: r.inputs.push_back(std::move(*buf)); break;
      case ArgSpec::Output: r.outputs.push_back(std::move(*buf)); break;
      case ArgSpec::Scratch: r.scratch.push_back(std::move(*buf)); break;
      case ArgSpec::Counters: r.counters.push_back(std::move(*buf)); break;
      default: break;
    }
  }
  if (auto s = zero_counters(gpu, r); !s) return s.error();
  return r;
}

Result<RunSet> make_run_set(GpuContext& gpu, const KernelSpec& spec, const Shape& shape, DType d, Recipe recipe,
                            uint64_t seed) {
  auto r = allocate_run_set(gpu, spec, shape, d);
  if (!r) return r.error();
  size_t k = 0;
  for (const ArgSpec& a : spec.args) {
    if (a.kind != ArgSpec::Input) continue;
    DeviceBuffer& buf = r->inputs[k++];
    r->host_inputs.push_back(make_input(d, a.numel(shape), spec.cols(shape), a.fill_for(shape), recipe, ++seed, fill_scale(a, shape)));
    if (auto s = gpu.upload(buf, r->host_inputs.back().data(), buf.bytes()); !s) return s.error();
  }
  return r;
}

Status poison_writable(GpuContext& gpu, const RunSet& r) {
  const CudaDriver& d = gpu.driver();
  for (auto* group : {&r.outputs, &r.scratch})
    for (auto& b : *group)
      if (auto s = cu_check(d.cuMemsetD8Async(b.ptr(), kPoisonByte, b.bytes(), nullptr), "poisoning the outputs"); !s)
        return s;
  for (auto& c : r.counters)
    if (auto s = cu_check(d.cuMemsetD8Async(c.ptr(), 0, c.bytes(), nullptr), "zeroing the counters"); !s) return s;
  return ok();
}

Status zero_counters(GpuContext& gpu, const RunSet& r) {
  for (auto& c : r.counters)
    if (auto s = cu_check(gpu.driver().cuMemsetD8(c.ptr(), 0, c.bytes()), "zeroing the counters"); !s) return s;
  return ok();
}

std::string counters_left_set(GpuContext& gpu, const RunSet& r) {
  for (auto& c : r.counters) {
    std::vector<uint32_t> v(c.bytes() / sizeof(uint32_t));
    if (auto s = gpu.download(v.data(), c, c.bytes()); !s) return s.error().message;
    if (std::string left = first_counter_set(v.data(), v.size(), "the kernel ended"); !left.empty()) return left;
  }
  return "";
}

std::string first_counter_set(const uint32_t* values, size_t n, const std::string& when) {
  for (size_t i = 0; i < n; ++i)
    if (values[i] != 0)
      return "counter " + std::to_string(i) + " is " + std::to_string(values[i]) + " after " + when +
             ": the kernel must set its counters back to zero for the next launch";
  return "";
}

}  // namespace ak
