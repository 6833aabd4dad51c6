#include "harness/user_types/user_reference.hpp"

#include <algorithm>
#include <cstdlib>

#include "harness/gpu/inputs.hpp"

namespace ak {
namespace {

/// How long a request may take: the first prepare builds the model and warms torch's kernels up;
/// a baseline runs torch.compile, which autotunes for minutes on a large shape.
constexpr double kStartSeconds = 180, kRunSeconds = 120, kBaselineSeconds = 540;

/// A [fixed] value as the spec holds it (Python's text of a TOML value) as the JSON value the
/// server sets the global to.
nlohmann::json python_value(const std::string& text) {
  if (text == "True") return true;
  if (text == "False") return false;
  nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
  return v.is_discarded() ? nlohmann::json(text) : v;
}

/// A size as the spec writes it: an integer, or a dim's name or an expression as its text.
nlohmann::json size_term(const SizeTerm& t) {
  return t.dim.empty() && !t.expr ? nlohmann::json(t.value) : nlohmann::json(t.text());
}

std::string install_hint() {
  return "a user type is judged by its PyTorch reference, run by " + reference_python() +
         ": install torch with CUDA for it (pip install torch), or set AK_REFERENCE_PYTHON to a python that has it";
}

}  // namespace

std::string reference_python() {
  const char* p = std::getenv("AK_REFERENCE_PYTHON");
  return p && *p ? p : "python3";
}

nlohmann::json load_request(const UserTypeSpec& spec, int device) {
  nlohmann::json fixed = nlohmann::json::object(), tensors = nlohmann::json::array(), tolerance = nlohmann::json::object();
  for (auto& [name, text] : spec.fixed) fixed[name] = python_value(text);
  for (const UserTensor& t : spec.tensors) {
    nlohmann::json shape = nlohmann::json::array();
    for (auto& s : t.shape) shape.push_back(size_term(s));
    nlohmann::json j = {{"name", t.name}, {"role", tensor_role_name(t.role)}, {"shape", shape},
                        {"type", t.int64 ? "int64" : "float"}};
    if (t.low) j["low"] = size_term(*t.low);
    if (t.high) j["high"] = size_term(*t.high);
    if (t.least) j["low"] = *t.least;   // a float input's range: the edge inputs stay in it
    if (t.most) j["high"] = *t.most;
    tensors.push_back(j);
  }
  for (DType d : spec.dtypes) tolerance[dtype_name(d)] = spec.tolerance_for(d).atol;
  return {{"op", "load"},     {"name", spec.name},       {"reference_source", spec.reference_source},
          {"dims", spec.dims}, {"fixed", fixed},          {"tensors", tensors},
          {"tolerance", tolerance}, {"device", device}};
}

RunBuffers PreparedRun::view() const {
  RunBuffers b;
  for (auto& x : inputs) b.inputs.push_back(&x);
  for (auto& x : outputs) b.outputs.push_back(&x);
  return b;
}

Result<std::unique_ptr<UserReference>> UserReference::start(GpuContext& gpu, const UserTypeSpec& spec) {
  std::unique_ptr<UserReference> r(new UserReference(gpu, spec));
  ReferenceProcessOptions o;
  o.python = reference_python();
  o.log_prefix = "reference " + spec.name + ": ";
  auto process = ReferenceProcess::start(o);
  if (!process) return error("the reference process of " + spec.name + " did not start (" + process.error().message + "): " + install_hint());
  r->process_ = std::move(*process);
  auto hello = r->process_->request({{"op", "hello"}}, kStartSeconds);
  if (!hello) return error("the reference process of " + spec.name + " has no working torch (" + hello.error().message + "): " + install_hint());
  auto load = r->process_->request(load_request(spec, gpu.info().index), kStartSeconds);
  if (!load) return error("the reference of " + spec.name + " (" + spec.reference + ") cannot be loaded: " + load.error().message);
  return r;
}

UserReference::~UserReference() {
  process_.reset();  // the process unmaps the pool before it is freed
}

Status UserReference::ensure_pool(size_t bytes) {
  if (pool_ && pool_->bytes() >= bytes) return ok();
  // A new pool is mapped before the old one is freed: the process closes its old mapping when it
  // maps the new one, so no freed memory stays mapped there.
  auto pool = IpcPool::allocate(bytes, gpu_.info().allocation_granularity);
  if (!pool) return pool.error();
  auto map = process_->request(pool->map_request(), kRunSeconds);
  if (!map) return error("the reference process could not map the pool: " + map.error().message);
  pool_.emplace(std::move(*pool));
  return ok();
}

Result<PreparedRun> UserReference::prepare(const Shape& shape, DType d, double scale, const std::string& edge) {
  std::vector<size_t> sizes;
  for (const UserTensor& t : spec_.tensors) sizes.push_back(size_t(spec_.numel(t, shape)) * (t.int64 ? 8 : dtype_size(d)));
  const PoolLayout layout = layout_pool(sizes);
  if (auto s = ensure_pool(layout.total_bytes); !s) return s.error();
  // Each tensor's sizes at this shape, evaluated here: a spec's size may be an expression.
  nlohmann::json tensor_shapes = nlohmann::json::array();
  for (const UserTensor& t : spec_.tensors) tensor_shapes.push_back(spec_.sizes(t, shape));
  nlohmann::json req = {{"op", "prepare"},  {"shape", shape}, {"dtype", dtype_name(d)}, {"layout", layout_json(layout)},
                        {"tensor_shapes", tensor_shapes}};
  if (scale != 1) req["scale"] = scale;
  if (!edge.empty()) req["inputs"] = edge;
  auto reply = process_->request(req, kRunSeconds);
  if (!reply) return reply.error();
  PreparedRun run;
  run.bytes = layout.total_bytes;
  size_t end = 0;
  for (const PoolSlot& slot : layout.slots) {
    if (slot.offset > end) run.gaps.push_back({pool_->base() + end, slot.offset - end});
    end = std::max(end, slot.offset + slot.bytes);
  }
  if (pool_->bytes() > end) run.gaps.push_back({pool_->base() + end, pool_->bytes() - end});
  if (reply->contains("inputs") && (*reply)["inputs"].is_string()) run.edge_inputs = (*reply)["inputs"].get<std::string>();
  for (size_t i = 0; i < spec_.tensors.size(); ++i) {
    DeviceBuffer view(nullptr, pool_->at(layout.slots[i]), layout.slots[i].bytes);  // no driver: owns nothing
    (spec_.tensors[i].role == TensorRole::Output ? run.outputs : run.inputs).push_back(std::move(view));
  }
  return run;
}

Status PreparedRun::poison_gaps(const CudaDriver& d) const {
  for (const auto& [at, bytes] : gaps)
    if (auto s = cu_check(d.cuMemsetD8(at, kPoisonByte, bytes), "poisoning the pool's bytes between its tensors"); !s) return s;
  return ok();
}

Result<UserCheck> UserReference::check() {
  auto reply = process_->request({{"op", "check"}}, kRunSeconds);
  if (!reply) return reply.error();
  UserCheck c;
  c.pass = reply->value("pass", false);
  c.kernelbench_pass = reply->value("kernelbench_pass", false);
  c.message = reply->value("message", "");
  return c;
}

Result<UserBaseline> UserReference::baseline(const Shape& shape, DType d, int repetitions, bool with_compile) {
  auto reply = process_->request({{"op", "baseline"}, {"shape", shape}, {"dtype", dtype_name(d)},
                                  {"repetitions", repetitions}, {"compile", with_compile}},
                                 kBaselineSeconds);
  if (!reply) return reply.error();
  UserBaseline b;
  b.eager_us = reply->value("eager_us", 0.0);
  if ((*reply)["compile_us"].is_number()) b.compile_us = (*reply)["compile_us"].get<double>();
  b.compile_error = reply->value("compile_error", "");
  return b;
}

}  // namespace ak
