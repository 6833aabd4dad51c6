// The reference process of user types: the request/reply path and its failures on a small fake
// server (Python without torch), the pool's layout, and on a GPU the real server judging GELU on
// the very inputs it drew into the pool.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "harness/gpu/cuda_driver.hpp"
#include "harness/gpu/gpu_context.hpp"
#include "harness/user_types/ipc_pool.hpp"
#include "harness/user_types/reference_process.hpp"
#include "tests/support.hpp"

using namespace ak;
using nlohmann::json;

namespace {

const char* kFakeServer = R"PY(
import json, os, sys, time
for line in sys.stdin:
    req = json.loads(line)
    op = req["op"]
    if op == "echo":
        print(json.dumps({"ok": True, "echo": req["value"]}))
    elif op == "fail":
        print(json.dumps({"ok": False, "error": "load: the reference of t has no Model"}))
    elif op == "oom":
        print(json.dumps({"ok": False, "harness": True, "error": "check: the reference process ran out of memory"}))
    elif op == "garbage":
        print("this is not json")
    elif op == "no_ok":
        print(json.dumps({"pass": True}))
    elif op == "sleep":
        time.sleep(60)
    elif op == "die":
        sys.stderr.write("Traceback: boom\n")
        sys.stderr.flush()
        os._exit(3)
    elif op == "env":
        print(json.dumps({"ok": True, "names": sorted(os.environ), "isolated": sys.flags.isolated}))
    sys.stdout.flush()
)PY";

std::unique_ptr<ReferenceProcess> fake() {
  ReferenceProcessOptions o;
  o.source = kFakeServer;
  auto p = ReferenceProcess::start(o);
  REQUIRE(p.ok());
  return std::move(*p);
}

}  // namespace

TEST_CASE("a request gets its reply line, and one request follows another", "[reference_process]") {
  auto p = fake();
  auto a = p->request({{"op", "echo"}, {"value", 7}}, 10);
  REQUIRE(a.ok());
  CHECK((*a)["echo"] == 7);
  auto b = p->request({{"op", "echo"}, {"value", "two"}}, 10);
  REQUIRE(b.ok());
  CHECK((*b)["echo"] == "two");
}

TEST_CASE("the server's own error names the op and keeps the process", "[reference_process]") {
  auto p = fake();
  auto r = p->request({{"op", "fail"}}, 10);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "the reference process failed fail: load: the reference of t has no Model");
  CHECK(p->running());
  CHECK(p->request({{"op", "echo"}, {"value", 1}}, 10).ok());
}

TEST_CASE("a reply that says the process ran out of memory is the harness's error", "[reference_process]") {
  auto p = fake();
  auto r = p->request({{"op", "oom"}}, 10);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().harness);
  CHECK_THAT(r.error().message, Catch::Contains("ran out of memory"));
  auto plain = p->request({{"op", "fail"}}, 10);
  REQUIRE_FALSE(plain.ok());
  CHECK_FALSE(plain.error().harness);
}

TEST_CASE("a reply that is not a JSON object with ok stops the process, and later requests say why",
          "[reference_process]") {
  for (const char* op : {"garbage", "no_ok"}) {
    auto p = fake();
    auto r = p->request({{"op", op}}, 10);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("answered " + std::string(op) + " with something that is not"));
    CHECK_FALSE(p->running());
    auto later = p->request({{"op", "echo"}, {"value", 1}}, 10);
    REQUIRE_FALSE(later.ok());
    CHECK_THAT(later.error().message, Catch::Contains("it is not running (it was stopped: answered"));
  }
}

TEST_CASE("a server that does not answer in time is killed and the error says so", "[reference_process]") {
  auto p = fake();
  const auto start = std::chrono::steady_clock::now();
  auto r = p->request({{"op", "sleep"}}, 0.5);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("did not answer sleep within 0.5 s and was killed"));
  CHECK(took < 5);
  CHECK_FALSE(p->running());
}

TEST_CASE("a server that dies is reported with how it ended and the end of its stderr", "[reference_process]") {
  auto p = fake();
  auto r = p->request({{"op", "die"}}, 10);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("ended while answering die (exited with code 3)"));
  CHECK_THAT(r.error().message, Catch::Contains("Traceback: boom"));
}

TEST_CASE("the server runs isolated, in the minimal environment", "[reference_process]") {
  setenv("AK_TEST_REFERENCE_SECRET", "sk-not-for-the-reference", 1);
  auto p = fake();
  unsetenv("AK_TEST_REFERENCE_SECRET");
  auto r = p->request({{"op", "env"}}, 10);
  REQUIRE(r.ok());
  CHECK((*r)["isolated"] == 1);
  for (auto& name : (*r)["names"]) CHECK(name != "AK_TEST_REFERENCE_SECRET");
}

TEST_CASE("a python that cannot be found is an error that says what to do", "[reference_process]") {
  ReferenceProcessOptions o;
  o.python = "no-such-python-for-autokernel";
  auto p = ReferenceProcess::start(o);
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(p.error().message, Catch::Contains("no executable no-such-python-for-autokernel"));
  CHECK_THAT(p.error().message, Catch::Contains("Python with torch"));
}

TEST_CASE("executables are found along PATH, and a path is taken as it is", "[reference_process]") {
  CHECK(find_executable("sh", "/nonexistent:/bin:/usr/bin") == "/bin/sh");
  CHECK(find_executable("sh", "/nonexistent") == "");
  CHECK(find_executable("/bin/sh", "") == "/bin/sh");
  CHECK(find_executable("/nonexistent/sh", "/bin") == "");
}

TEST_CASE("the embedded server is the repository's reference_server.py", "[reference_process]") {
  CHECK(reference_server_source() == test::read_file(std::string(AK_SOURCE_DIR) + "/harness/user_types/reference_server.py"));
}

TEST_CASE("the pool places every tensor at a 256-byte aligned offset after the previous one", "[ipc_pool]") {
  PoolLayout l = layout_pool({100, 256, 1, 0, 300});
  REQUIRE(l.slots.size() == 5);
  CHECK(l.slots[0].offset == 0);
  CHECK(l.slots[1].offset == 256);
  CHECK(l.slots[2].offset == 512);
  CHECK(l.slots[3].offset == 768);
  CHECK(l.slots[4].offset == 768);
  CHECK(l.slots[4].bytes == 300);
  CHECK(l.total_bytes == 1068);
  CHECK(layout_json(l)[1] == json{{"offset", 256}, {"bytes", 256}});
  CHECK(layout_pool({}).total_bytes == 0);
}

TEST_CASE("an IPC handle is written as 128 hex digits, byte by byte", "[ipc_pool]") {
  CUipcMemHandle h{};
  h.reserved[0] = char(0xab);
  h.reserved[63] = 0x01;
  const std::string hex = handle_hex(h);
  REQUIRE(hex.size() == 128);
  CHECK(hex.substr(0, 4) == "ab00");
  CHECK(hex.substr(124) == "0001");
}

// ---- on a GPU, with torch -------------------------------------------------------------------------

namespace {

/// The Python with torch: $AK_REFERENCE_PYTHON, else python3.
std::string reference_python() {
  const char* p = std::getenv("AK_REFERENCE_PYTHON");
  return p ? p : "python3";
}

json gelu_load() {
  const json tensor_x = {{"name", "x"}, {"role", "input"}, {"shape", {"batch_size", "dim"}}, {"type", "float"}};
  const json tensor_out = {{"name", "out"}, {"role", "output"}, {"shape", {"batch_size", "dim"}}, {"type", "float"}};
  return {{"op", "load"},
          {"name", "gelu_tanh"},
          {"reference_source", test::read_file(std::string(AK_SOURCE_DIR) + "/examples/kernelbench/gelu_tanh.py")},
          {"dims", {"batch_size", "dim"}},
          {"fixed", json::object()},
          {"tensors", {tensor_x, tensor_out}},
          {"tolerance", {{"fp32", 1e-4}, {"fp16", 1e-2}, {"bf16", 2e-2}}},
          {"device", 0}};
}

double gelu(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

struct GeluBench {
  std::unique_ptr<GpuContext> gpu;
  std::unique_ptr<ReferenceProcess> ref;
  PoolLayout layout;
  std::optional<IpcPool> pool;
  const int rows = 4, cols = 1000;

  GeluBench() {
    auto g = GpuContext::open(0);
    REQUIRE(g.ok());
    gpu = std::move(*g);
    layout = layout_pool({size_t(rows * cols * 4), size_t(rows * cols * 4)});
    auto p = IpcPool::allocate(layout.total_bytes, 2 << 20);
    REQUIRE(p.ok());
    pool.emplace(std::move(*p));
    ReferenceProcessOptions o;
    o.python = reference_python();
    auto r = ReferenceProcess::start(o);
    REQUIRE(r.ok());
    ref = std::move(*r);
    auto hello = ref->request({{"op", "hello"}}, 120);
    INFO("the reference process needs a Python with torch: set AK_REFERENCE_PYTHON");
    REQUIRE(hello.ok());
    auto load = ref->request(gelu_load(), 120);
    INFO((load.ok() ? "" : load.error().message));
    REQUIRE(load.ok());
    auto map = ref->request(pool->map_request(), 60);
    INFO((map.ok() ? "" : map.error().message));
    REQUIRE(map.ok());
  }
  ~GeluBench() { ref.reset(); }  // the server unmaps the pool before it is freed

  Result<json> prepare() {
    return ref->request({{"op", "prepare"}, {"shape", {rows, cols}}, {"dtype", "fp32"}, {"layout", layout_json(layout)}}, 120);
  }
  std::vector<float> read(int slot) {
    std::vector<float> v(size_t(rows * cols));
    REQUIRE(gpu->driver().cuMemcpyDtoH(v.data(), pool->at(layout.slots[slot]), v.size() * 4) == CUDA_SUCCESS);
    return v;
  }
  void write(int slot, const std::vector<float>& v) {
    REQUIRE(gpu->driver().cuMemcpyHtoD(pool->at(layout.slots[slot]), v.data(), v.size() * 4) == CUDA_SUCCESS);
  }
  /// The right outputs, computed here in double from the inputs read back from the pool.
  std::vector<float> right_outputs() {
    std::vector<float> x = read(0), out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = float(gelu(x[i]));
    return out;
  }
  json check() {
    auto r = ref->request({{"op", "check"}}, 120);
    INFO((r.ok() ? "" : r.error().message));
    REQUIRE(r.ok());
    return *r;
  }
};

}  // namespace

TEST_CASE("the reference process judges outputs on the inputs it drew into the pool", "[gpu][reference_process]") {
  if (!test::gpu_or_skip()) return;
  GeluBench b;
  auto prepared = b.prepare();
  INFO((prepared.ok() ? "" : prepared.error().message));
  REQUIRE(prepared.ok());
  std::vector<float> x = b.read(0);
  bool varied = false;
  for (float v : x) varied |= v != x[0] && std::isfinite(v);
  CHECK(varied);  // get_inputs() drew randn into the pool

  std::vector<float> out = b.right_outputs();
  b.write(1, out);
  json right = b.check();
  CHECK(right["pass"] == true);
  CHECK(right["kernelbench_pass"] == true);
  CHECK(right["max_abs_error"].get<double>() < 1e-5);

  out[2 * b.cols + 17] += 1.0f;
  b.write(1, out);
  json wrong = b.check();
  CHECK(wrong["pass"] == false);
  CHECK(wrong["kernelbench_pass"] == false);
  CHECK_THAT(wrong["message"].get<std::string>(), Catch::Contains("output out: 1 of 4000 elements differ, worst at [2, 17]"));

  out[2 * b.cols + 17] -= 1.0f;
  b.write(1, out);
  x[5] += 0.5f;
  b.write(0, x);
  json touched = b.check();
  CHECK(touched["pass"] == false);
  CHECK_THAT(touched["message"].get<std::string>(), Catch::Contains("the kernel wrote into its input x"));
}

TEST_CASE("each prepare draws new inputs and leaves the outputs poisoned", "[gpu][reference_process]") {
  if (!test::gpu_or_skip()) return;
  GeluBench b;
  REQUIRE(b.prepare().ok());
  std::vector<float> first = b.read(0);
  b.write(1, b.right_outputs());
  REQUIRE(b.prepare().ok());
  CHECK(b.read(0) != first);  // a fresh seed from the OS each time
  json unwritten = b.check();
  CHECK(unwritten["pass"] == false);
  CHECK_THAT(unwritten["message"].get<std::string>(), Catch::Contains("4000 of 4000 elements differ"));
}

TEST_CASE("a module whose tensors differ from the spec is refused with the difference", "[gpu][reference_process]") {
  if (!test::gpu_or_skip()) return;
  GeluBench b;
  json load = gelu_load();
  load["tensors"].insert(load["tensors"].begin() + 1,
                         json{{"name", "w"}, {"role", "parameter"}, {"shape", {"dim"}}, {"type", "float"}});
  REQUIRE(b.ref->request(load, 60).ok());  // the pool stays mapped across loads
  auto layout = layout_pool({size_t(b.rows * b.cols * 4), size_t(b.cols * 4), size_t(b.rows * b.cols * 4)});
  auto r = b.ref->request({{"op", "prepare"}, {"shape", {b.rows, b.cols}}, {"dtype", "fp32"}, {"layout", layout_json(layout)}}, 60);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("the module has 0 parameters (none) where the spec declares 1 (w)"));
}

TEST_CASE("the baseline times the module in eager PyTorch and under torch.compile", "[gpu][reference_process][baseline]") {
  if (!test::gpu_or_skip()) return;
  GeluBench b;
  auto r = b.ref->request({{"op", "baseline"}, {"shape", {256, 4096}}, {"dtype", "fp32"}, {"repetitions", 5}}, 540);
  INFO((r.ok() ? "" : r.error().message));
  REQUIRE(r.ok());
  INFO(r->dump());
  CHECK((*r)["eager_us"].get<double>() > 0);
  CHECK(((*r)["compile_us"].is_number() || (*r)["compile_error"].is_string()));
}
