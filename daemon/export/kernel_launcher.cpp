#include "daemon/export/kernel_launcher.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>

#include "harness/module/grid_launch.hpp"
#include "harness/compile/kernel_contract.hpp"
#include "harness/module/tensor_maps.hpp"
#include "kernels_cuda/grid_rules.h"
#include "kernels_cuda/rotary_embedding/rotary_layouts.hpp"
#include "kernels_cuda/rowwise_reference.hpp"

namespace ak {
namespace {

/// The launchers' dtype codes, in order: 0 fp16, 1 bf16, 2 fp32 (daemon/export/package/ops/common.h).
int dtype_code(DType d) { return d == DType::F16 ? 0 : d == DType::BF16 ? 1 : 2; }

std::string identifier(const std::string& arch) {
  std::string out;
  for (char c : arch) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

constexpr char kHex[] = "0123456789abcdef";

/// `bytes` as the body of a C array, 16 values a line.
std::string byte_array(const std::vector<char>& bytes) {
  std::string out;
  out.reserve(bytes.size() * 5 + bytes.size() / 16 * 4);
  for (size_t i = 0; i < bytes.size(); ++i) {
    out += i % 16 == 0 ? "\n    " : " ";
    const auto b = static_cast<unsigned char>(bytes[i]);
    out += {'0', 'x', kHex[b >> 4], kHex[b & 15], ','};
  }
  return out;
}

/// A tensor-core type's tile rule, as the generated launcher writes it and as C++ evaluates it
/// (to check it against the spec's own grid before a launcher is written with it).
struct TiledRule {
  const char* type;
  int version;
  const char* text;
  int64_t (*blocks)(const Shape& s, int tile_m, int tile_n);
};

const TiledRule kTiledRules[] = {
    {"matmul", 2, "ak_tiled_blocks(s[0], s[1], m->tile_m, m->tile_n, 1)",
     [](const Shape& s, int tm, int tn) -> int64_t { return ak_tiled_blocks(s[0], s[1], tm, tn, 1); }},
    {"fused_mlp", 1, "ak_tiled_blocks(s[0], s[2], m->tile_m, m->tile_n, 1) + ak_tiled_blocks(s[0], s[1], m->tile_m, m->tile_n, 1)",
     [](const Shape& s, int tm, int tn) -> int64_t {
       return ak_tiled_blocks(s[0], s[2], tm, tn, 1) + ak_tiled_blocks(s[0], s[1], tm, tn, 1);
     }},
    {"flash_attention", 1, "ak_tiled_blocks(s[2], 1, m->tile_m, 1, s[0] * s[1])",
     [](const Shape& s, int tm, int) -> int64_t { return ak_tiled_blocks(s[2], 1, tm, 1, s[0] * s[1]); }},
    // Version 2: B, Hq, Hkv, S, D, mask, layout; one block per tile_m query rows of a query head.
    {"flash_attention", 2, "ak_tiled_blocks(s[3], 1, m->tile_m, 1, s[0] * s[1])",
     [](const Shape& s, int tm, int) -> int64_t { return ak_tiled_blocks(s[3], 1, tm, 1, s[0] * s[1]); }},
};

/// Every shape the harness judged the type at.
std::vector<Shape> stage_shapes(const KernelSpec& spec) {
  std::vector<Shape> out{spec.smoke_shape, spec.stability_shape, spec.determinism_shape};
  for (auto& s : spec.sweep_shapes) out.push_back(s);
  for (auto& s : spec.edge_shapes) out.push_back(s);
  if (!spec.bench_shape.empty()) out.push_back(spec.bench_shape);
  return out;
}

/// The rule of this spec's type and version, when it gives the spec's own grid at every stage
/// shape and several tile sizes; nullptr otherwise (a new contract version with another grid).
const TiledRule* tiled_rule(const KernelSpec& spec) {
  for (const TiledRule& r : kTiledRules) {
    if (spec.type != r.type || spec.contract_version != r.version) continue;
    for (const Shape& s : stage_shapes(spec))
      for (auto [tm, tn] : {std::pair{64, 64}, {128, 256}, {192, 128}, {16, 8}, {128, 1}}) {
        LaunchGeometry g;
        g.tile_m = tm;
        g.tile_n = tn;
        if (spec.grid(s, g) != r.blocks(s, tm, tn)) return nullptr;
      }
    return &r;
  }
  return nullptr;
}

/// A product of the shape's dimensions, `dims` listing each factor's index (repeated for a power).
int64_t product(const std::vector<int>& dims, const Shape& s) {
  int64_t p = 1;
  for (int d : dims) p *= s[size_t(d)];
  return p;
}

/// `value` as a product of the probe's dimensions (distinct primes, so the factors are unique), or
/// nullopt when it is not one.
std::optional<std::vector<int>> factors(int64_t value, const Shape& probe) {
  std::vector<int> out;
  for (size_t d = 0; d < probe.size() && value > 1; ++d)
    while (value % probe[d] == 0) value /= probe[d], out.push_back(int(d));
  if (value != 1) return std::nullopt;
  return out;
}

}  // namespace

namespace {

/// Where in the launcher's `s` each computed int argument lies (after the shape's dimensions, in
/// the order of the arguments), by argument index; -1 for the others.
std::vector<int> computed_positions(const KernelSpec& spec) {
  std::vector<int> out;
  int next = int(spec.shape_names.size());
  for (const ArgSpec& a : spec.args) out.push_back(a.kind == ArgSpec::Dim && a.computed ? next++ : -1);
  return out;
}

/// The position in `s` of a computed argument that equals `a`'s row length at every judged shape
/// (flash_attention's seq stride, which its layout code decides), or -1; one of `a`'s own (named
/// "<a>_...") first, since another operand's may equal it at every judged shape and not in a call.
int row_length_argument(const KernelSpec& spec, const ArgSpec& a) {
  const std::vector<int> at = computed_positions(spec);
  int found = -1;
  for (size_t j = 0; j < spec.args.size(); ++j) {
    if (at[j] < 0) continue;
    bool holds = true;
    for (const Shape& s : stage_shapes(spec)) holds = holds && spec.args[j].computed(s) == a.row_length(s);
    if (holds && spec.args[j].name.rfind(a.name + "_", 0) == 0) return at[j];
    if (holds && found < 0) found = at[j];
  }
  return found;
}

}  // namespace

std::vector<std::optional<OperandExtent>> operand_extents(const KernelSpec& spec) {
  static const int64_t primes[] = {101, 103, 107, 109, 113, 127, 131, 137};
  Shape probe;
  for (size_t d = 0; d < spec.shape_names.size() && d < 8; ++d) probe.push_back(primes[d]);
  std::vector<std::optional<OperandExtent>> out;
  for (const ArgSpec& a : spec.args) {
    out.emplace_back();
    if (!a.is_buffer() || !a.row_length || probe.size() != spec.shape_names.size()) continue;
    auto numel = factors(a.numel(probe), probe);
    if (!numel) continue;
    bool holds = true;
    for (const Shape& s : stage_shapes(spec)) holds = holds && product(*numel, s) == a.numel(s);
    if (!holds) continue;
    auto cols = factors(a.row_length(probe), probe);
    for (const Shape& s : stage_shapes(spec)) cols = cols && product(*cols, s) == a.row_length(s) ? cols : std::nullopt;
    if (cols) out.back() = OperandExtent{*cols, *numel};
    // A row length no product gives (a stride the layout decides) may be an argument the op passes.
    else if (int at = row_length_argument(spec, a); at >= 0) out.back() = OperandExtent{{}, *numel, at};
  }
  return out;
}

bool tensor_core_type(const std::string& type) {
  for (const TiledRule& r : kTiledRules)
    if (type == r.type) return true;
  return false;
}

bool tensor_core_exportable(const KernelSpec& spec) {
  if (!tiled_rule(spec)) return false;
  auto extents = operand_extents(spec);
  for (size_t i = 0; i < spec.args.size(); ++i)
    if (spec.args[i].is_buffer() && spec.args[i].row_length && !extents[i]) return false;
  return true;
}

std::string grid_rule_call(const KernelSpec& spec) {
  using Grid = int64_t (*)(const Shape&, const LaunchGeometry&);
  const Grid* g = spec.grid.target<Grid>();
  if (g && *g == &rowwise_grid) return "ak_rowwise_blocks(s, " + std::to_string(spec.shape_names.size()) + ", m->rows_per_block)";
  if (g && *g == &first_dim_grid) return "ak_first_dim_blocks(s, m->rows_per_block)";
  if (g && *g == &rotary::blocks) return "ak_rotary_blocks(s, m->rows_per_block)";
  if (const TiledRule* r = tiled_rule(spec)) return r->text;
  return "";
}

bool exportable(const KernelSpec& spec) {
  if (tiled_rule(spec)) return tensor_core_exportable(spec);
  return !grid_rule_call(spec).empty();
}

std::vector<std::string> exported_constants(const std::string& kernel_source) {
  static const std::regex decl(R"(extern\s+"C"\s+__constant__\s+int\s+(ak_[A-Za-z0-9_]+))");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(kernel_source.begin(), kernel_source.end(), decl); it != std::sregex_iterator(); ++it)
    if (std::find(out.begin(), out.end(), (*it)[1].str()) == out.end()) out.push_back((*it)[1]);
  return out;
}

std::string launch_header(const std::vector<const KernelSpec*>& specs) {
  std::string out =
      "// Generated by autokernel export: the launchers of the compiled kernels (<type>_module.h), one per type,\n"
      "// and the version of its type's contract each kernel file follows (docs/kernel-contract.md): an op\n"
      "// gives its arguments the meaning of that version. Each launcher returns nullptr, or what failed.\n"
      "// dtype: 0 fp16, 1 bf16, 2 fp32. load_<type> loads the modules in the current CUDA context (the op calls it at\n"
      "// import: a first launch may come inside a CUDA graph capture). A type may carry several files, each\n"
      "// tuned at one shape: a launch takes the one pick_<type> names (file_pick.h), launches_<type> counts them.\n"
      "#pragma once\n#include <cuda_runtime_api.h>\n\n";
  for (const KernelSpec* spec : specs) {
    const std::string& t = spec->type;
    out += "#define AK_CONTRACT_VERSION_" + t + " " + std::to_string(spec->contract_version) + "\n";
    out += "const char* launch_" + t + "(void* const* buffers, const long long* shape, const float* consts, int dtype,\n" +
           std::string(13 + t.size(), ' ') + "cudaStream_t stream);\nconst char* load_" + t + "();\n";
    out += "int files_" + t + "();\nint pick_" + t + "(const long long* shape, int dtype);\nlong long launches_" + t + "(int file);\n";
  }
  return out;
}

namespace {

/// The names of the i-th file's arrays and objects: the first file's are the type's own.
std::string file_id(const KernelSpec& spec, size_t i) {
  return "k" + identifier(spec.type) + (i == 0 ? "" : "_f" + std::to_string(i));
}

}  // namespace

std::string module_header(const KernelSpec& spec, const std::vector<std::vector<ExportedModule>>& files) {
  std::string out = "// Generated by autokernel export: the " + spec.type + " kernel as NVRTC compiled it, byte for byte, one\n"
                    "// module per architecture (and per kept file, where the run kept several). No source text:\n"
                    "// loaded_module.h hands these bytes to the CUDA driver.\n"
                    "#pragma once\n#include \"loaded_module.h\"\n\nnamespace {\n\n";
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string id = file_id(spec, f);
    std::string images;
    for (auto& m : files[f]) {
      const std::string name = id + "_" + identifier(m.arch);
      out += "alignas(16) const unsigned char " + name + "[] = {" + byte_array(m.cubin) + "\n};\n\n";
      images += "    {\"" + m.arch + "\", " + name + ", sizeof " + name + "},\n";
    }
    out += "const autokernel_launch::Image " + id + "_images[] = {\n" + images + "};\n\n";
    out += "// The entry point of each dtype, in the order of the launcher's entry table.\nconst char* const " + id + "_entries[] = {\n";
    for (size_t i = 0; i < spec.dtypes.size(); ++i)
      out += "    \"" + files[f].front().entries.at(i) + "\",  // " + entry_expression(spec, spec.dtypes[i]) + "\n";
    out += "};\n\n";
  }
  return out + "}  // namespace\n";
}

std::vector<long long> tuned_dimensions(const KernelSpec& spec, const std::string& shape) {
  // Read here rather than with parse_shape, which takes sizes only: a dimension may be 0 (matmul's
  // has_bias), and a file tuned without a bias must not pass for one of unknown shape.
  std::vector<long long> dims;
  size_t start = 0;
  while (start <= shape.size()) {
    const size_t end = std::min(shape.find('x', start), shape.size());
    const std::string part = shape.substr(start, end - start);
    if (part.empty() || part.size() > 18 || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return {};
    dims.push_back(std::stoll(part));
    start = end + 1;
  }
  if (dims.size() != spec.shape_names.size()) return {};
  return dims;
}

namespace {

/// -1 for a dtype name the launcher does not know.
int dtype_code_of(const std::string& name) {
  for (DType d : {DType::F16, DType::BF16, DType::F32})
    if (dtype_name(d) == name) return dtype_code(d);
  return -1;
}

/// The table of each file's tuned shape and dtype, and which dimensions the rule compares (all but
/// rotary's layout code, which the op passes as 0).
std::string tuned_table(const KernelSpec& spec, const std::vector<TunedFile>& files) {
  const std::string id = "k" + identifier(spec.type);
  const size_t dims = spec.shape_names.size();
  std::string shapes, dtypes, compared;
  for (auto& f : files) {
    std::vector<long long> d = tuned_dimensions(spec, f.shape);
    if (d.empty()) d.assign(dims, -1);
    std::string row;
    for (long long v : d) row += (row.empty() ? "" : ", ") + std::to_string(v);
    shapes += "    {" + row + "},  // " + (f.shape.empty() ? "not known" : f.shape) + " " + f.dtype + "\n";
    dtypes += (dtypes.empty() ? "" : ", ") + std::to_string(dtype_code_of(f.dtype));
  }
  // rotary's op passes no layout code; flash_attention's passes the one its operands' strides are.
  for (auto& n : spec.shape_names)
    compared += std::string(compared.empty() ? "" : ", ") + (n == "layout" && spec.type == "rotary_embedding" ? "false" : "true");
  return "// The shape each file was tuned at (-1: not known) and its dtype code, and the dimensions the\n"
         "// rule of file_pick.h compares.\nconst long long " + id + "_tuned[][" + std::to_string(dims) + "] = {\n" + shapes +
         "};\nconst int " + id + "_tuned_dtype[] = {" + dtypes + "};\nconst bool " + id + "_compared[] = {" + compared + "};\n" +
         "std::atomic<long long> " + id + "_launches[" + std::to_string(files.size()) + "];\n\n";
}

}  // namespace

namespace {

std::string product_text(const std::vector<int>& dims) {
  std::string out;
  for (int d : dims) out += (out.empty() ? "s[" : " * s[") + std::to_string(d) + "]";
  return out.empty() ? "1" : out;
}

/// The generated operand_view: each buffer a map may cover, as the harness views it
/// (harness/module/tensor_maps.cpp: rows of its row length; the type's own operands and scratch mapped in
/// the call's dtype, other buffers in their fixed element type).
std::string operand_view_source(const KernelSpec& spec) {
  const auto extents = operand_extents(spec);
  std::string out =
      "// How a tensor map sees each buffer of the entry point in a call: rows of its row length, as the\n"
      "// harness views it (the " + spec.type + " spec's row lengths and sizes, as products of the shape's dimensions).\n"
      "bool operand_view(int operand, const long long* s, int dtype, ak_tensor_map_view& v) {\n"
      "  const size_t t = dtype == 2 ? 4 : 2;  // the call's element size\n"
      "  const CUtensorMapDataType tt = ak_tensor_map_type_of_dtype(dtype);\n"
      "  switch (operand) {\n";
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const ArgSpec& a = spec.args[i];
    if (!extents[i] || (a.elem == Elem::I64 && a.kind != ArgSpec::Scratch)) continue;  // the harness maps no int64 operand
    const bool as_t = a.elem == Elem::T || a.kind == ArgSpec::Scratch;
    const std::string stored = a.elem == Elem::T ? "t" : std::to_string(elem_size(a.elem, DType::F32));
    const std::string mapped = as_t ? "t" : stored;
    const std::string type = as_t ? "tt" : a.elem == Elem::U32 ? "CU_TENSOR_MAP_DATA_TYPE_UINT32" : "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
    const std::string cols = extents[i]->cols_at >= 0 ? "s[" + std::to_string(extents[i]->cols_at) + "]" : product_text(extents[i]->cols);
    out += "    case " + std::to_string(i) + ":  // " + a.name + "\n      v = ak_tensor_map_view_of(" + cols +
           ", " + product_text(extents[i]->numel) + ", " + stored + ", " + mapped + ", " + type + ");\n      return true;\n";
  }
  return out + "    default:\n      return false;\n  }\n}\n\n";
}

}  // namespace

Result<std::string> launcher_source(const KernelSpec& spec, const std::string& kernel_source) {
  return launcher_source(spec, std::vector<TunedFile>{{kernel_source, "", ""}});
}

Result<std::string> launcher_source(const KernelSpec& spec, const std::vector<TunedFile>& files) {
  if (files.empty()) return error("no " + spec.type + " file to launch");
  const bool tiled = tiled_rule(spec) != nullptr;
  if (tiled && !tensor_core_exportable(spec))
    return error("the " + spec.type + " launcher cannot view every buffer a tensor map may cover as rows of the shape's dimensions");
  for (size_t f = 0; f < files.size(); ++f) {
    const std::vector<std::string> constants = exported_constants(files[f].source);
    const std::string which = files.size() == 1 ? "the " + spec.type + " file" : "the " + spec.type + " file " + std::to_string(f + 1);
    if (std::find(constants.begin(), constants.end(), kBlockThreadsSymbol) == constants.end())
      return error(which + " exports no " + kBlockThreadsSymbol + " (extern \"C\" __constant__ int " + kBlockThreadsSymbol +
                   " = <threads>;): its launch geometry is unknown");
    // A row-wise launcher launches a plain grid: a file that asks for maps, clusters or a persistent
    // grid would be launched otherwise than the harness judged it. The tensor-core launcher does all three.
    if (!tiled)
      for (const char* s : {kTensorMapsSymbol, kClusterBlocksSymbol, kPersistentSymbol})
        if (std::find(constants.begin(), constants.end(), s) != constants.end())
          return error(which + " declares " + s + ", which the row-wise launchers do not provide: export "
                       "the last kept file without it, or keep this one for the harness only");
  }
  const std::string t = spec.type, id = identifier(t), n = std::to_string(files.size());
  std::string out = "// Generated by autokernel export: launches the compiled " + t + " kernel (" + t + "_module.h) as\n"
                    "// autokernel's harness does: through the CUDA driver, the argument order of the " + t + " spec, the\n"
                    "// geometry the module exports, the grid of grid_rules.h; of several files, the one tuned nearest\n"
                    "// the call's shape (file_pick.h).\n"
                    "#include <atomic>\n\n#include \"file_pick.h\"\n#include \"grid_rules.h\"\n#include \"launch.h\"\n" +
                    (tiled ? "#include \"tiled_launch.h\"\n" : "") + "#include \"" + t + "_module.h\"\n\nnamespace {\n\n";
  std::string modules;
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string k = file_id(spec, f);
    out += "const autokernel_launch::ModuleSpec " + k + "_spec{\"" + t + "\", " + k + "_images,\n"
           "    int(sizeof " + k + "_images / sizeof " + k + "_images[0]), " + k + "_entries,\n"
           "    int(sizeof " + k + "_entries / sizeof " + k + "_entries[0]), " + std::to_string(nvrtc_cuda_version()) + "};\n"
           "autokernel_launch::Module " + k + "_module(" + k + "_spec);\n";
    modules += (modules.empty() ? "" : ", ") + ("&" + k + "_module");
  }
  out += "autokernel_launch::Module* const k" + id + "_files[] = {" + modules + "};\n\n";
  out += tuned_table(spec, files);
  if (tiled) out += operand_view_source(spec);
  out += "}  // namespace\n\n";
  out += "int files_" + t + "() { return " + n + "; }\n\n";
  out += "int pick_" + t + "(const long long* s, int dtype) {\n  return autokernel_launch::" +
         (tiled ? "pick_exact_file" : "pick_file") + "(s, " +
         std::to_string(spec.shape_names.size()) + ", &k" + id + "_tuned[0][0], k" + id + "_tuned_dtype, k" + id + "_compared, " +
         n + ", dtype);\n}\n\n";
  out += "long long launches_" + t + "(int file) {\n  return file >= 0 && file < " + n + " ? k" + id +
         "_launches[file].load(std::memory_order_relaxed) : -1;\n}\n\n";
  // Loading is the one step of a launch that must not happen inside a CUDA graph capture
  // (cuModuleLoadData is not a stream operation): the op loads at import, in the current context.
  out += "const char* load_" + t + "() {\n  const char* error = nullptr;\n  for (autokernel_launch::Module* f : k" + id +
         "_files)\n    if (!f->current(error)) return error;\n  return nullptr;\n}\n\n";
  out += "const char* launch_" + t + "(void* const* b, const long long* s, const float* c, int dtype, cudaStream_t stream) {\n"
         "  (void)c;\n  // The entry of each dtype code (0 fp16, 1 bf16, 2 fp32); -1 where the spec has none.\n"
         "  static const int entry_of_dtype[3] = {";
  for (int code = 0; code < 3; ++code) {
    int entry = -1;
    for (size_t i = 0; i < spec.dtypes.size(); ++i)
      if (dtype_code(spec.dtypes[i]) == code) entry = int(i);
    out += (code ? ", " : "") + std::to_string(entry);
  }
  out += "};\n  if (dtype < 0 || dtype > 2 || entry_of_dtype[dtype] < 0) return \"the " + t + " kernel is not built for this dtype\";\n"
         "  const int file = pick_" + t + "(s, dtype);\n" +
         (tiled ? "  if (file < 0) return \"no " + t + " file was measured faster at this shape\";\n" : "") +
         "  const char* error = nullptr;\n  const autokernel_launch::Loaded* m = k" + id + "_files[file]->current(error);\n"
         "  if (!m) return error;\n"
         "  const long long blocks = " + grid_rule_call(spec) + ";\n";
  // The arguments as the kernel takes them, each in a variable of its own, then their addresses:
  // a buffer is a pointer whatever its element type, a dimension an int, a constant a float.
  std::string addrs;
  // An int the shape implies (a stride) comes after the shape's dimensions in `s`: the op
  // computes it from its tensors, as the harness does from the shape's layout.
  int i = 0, buffer = 0, constant = 0, computed = int(spec.shape_names.size());
  for (const ArgSpec& a : spec.args) {
    const std::string v = "a" + std::to_string(i++);
    if (a.is_buffer()) out += "  void* " + v + " = b[" + std::to_string(buffer++) + "];\n";
    else if (a.kind == ArgSpec::Dim && a.computed) out += "  int " + v + " = (int)s[" + std::to_string(computed++) + "];  // " + a.name + "\n";
    else if (a.kind == ArgSpec::Dim) out += "  int " + v + " = (int)s[" + std::to_string(a.dim) + "];\n";
    else out += "  float " + v + " = c[" + std::to_string(constant++) + "];\n";
    addrs += (addrs.empty() ? "" : ", ") + std::string("&") + v;
  }
  if (tiled)
    out += "  // The tensor maps' parameter, when the module declares maps, goes in the last slot.\n"
           "  void* args[] = {" + addrs + ", nullptr};\n"
           "  const char* launched = autokernel_launch::launch_tiled(*m, entry_of_dtype[dtype], blocks, s, dtype, &operand_view, args,\n"
           "                                                        " + std::to_string(spec.args.size()) + ", (CUstream)stream);\n";
  else
    out += "  void* args[] = {" + addrs + "};\n"
           "  const char* launched = autokernel_launch::launch(*m, entry_of_dtype[dtype], blocks, (CUstream)stream, args);\n";
  out +=
         "  if (!launched) k" + id + "_launches[file].fetch_add(1, std::memory_order_relaxed);\n  return launched;\n}\n";
  return out;
}

}  // namespace ak
