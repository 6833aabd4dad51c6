"""Reads a problem in KernelBench's format (class Model, get_inputs, get_init_inputs, module-level
size globals) by running it, and prints what `autokernel kernelbench` needs to write a user type's
spec, as JSON on stdout: the dims (the globals that size its tensors) and the [fixed] globals, its
tensors in the spec's order with their shapes as integer expressions over those, its kind, the
shapes of its five stages, or a refusal with the reason.

The module runs with PyTorch, on the `meta` device (shapes, no data, no memory) wherever it can, and
on the CPU at small sizes only where meta cannot run it. It runs as KernelBench calls it: built by
`Model(*get_init_inputs())`, left in the mode it is built in (training), under no_grad.

Sizes are changed by executing the module's source again with the chosen globals assigned anew
after each of their module-level assignments, so that a global computed from them
(`bias_shape = (out_features,)`) follows: harness/user_types/reference_server.py does the same at every shape.

usage: python3 analyse_problem.py FILE.py...   (one JSON verdict a line, in the files' order; exit 2
without PyTorch)
"""
import ast
import inspect
import json
import re
import sys

torch = None  # imported in main(): the problem cannot be read without it

# A problem meta cannot run runs on the CPU where its inputs and weights hold at most this many elements.
CPU_ELEMENTS = 1 << 26
# Tensors of a stage shape stay under this many elements (the smoke shape under 1/64 of it).
MAX_STAGE_ELEMENTS = 1 << 22
# Names of globals that are a layer's hyperparameters rather than sizes, even where they shape a
# weight (kernel_size, groups): kept as the module sets them, [fixed] in the spec.
HYPERPARAMETER_NAME = re.compile(r"kernel|stride|pad|dilation|group|pool|window|scale_factor")
# Names a dim cannot have: every dim becomes an int parameter of the kernel, so C++'s words and the
# names CUDA gives a kernel are refused by the spec's reader (kernels_cuda/cpp_words.cpp and
# user_type_reader.cpp's is_reserved); such a global stays [fixed] (level 1's 43_Max_Pooling_3D's dim3).
RESERVED_NAMES = set("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await co_return co_yield
decltype default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while xor
xor_eq half blockIdx threadIdx blockDim gridDim warpSize dim3 main T elem""".split())


def kernel_may_take(name):
    """Whether the kernel can take `name` as a parameter (a dim's name)."""
    return name not in RESERVED_NAMES and not name.startswith("__") and not name.startswith("ak_")


class Refused(Exception):
    """The problem cannot be judged as a user type; the message says why."""


class Unfitted(Refused):
    """A tensor's axis no expression of the dims gives; `dims` are those it changes with."""

    def __init__(self, message, dims):
        super().__init__(message)
        self.dims = dims


# ---- running the module at chosen sizes -----------------------------------------------------------

def assigned_names(target):
    """The plain names an assignment target binds (a, or a, b in a tuple target)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in assigned_names(t)]
    return []


def with_overrides(tree, overrides):
    """The module's AST with `name = value` inserted after every module-level assignment of a name
    in `overrides`: what is computed from it afterwards sees the new value."""
    body = []
    for stmt in tree.body:
        body.append(stmt)
        if isinstance(stmt, ast.Assign):
            names = [n for t in stmt.targets for n in assigned_names(t)]
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            names = assigned_names(stmt.target)
        else:
            names = []
        for name in names:
            if name in overrides:
                assign = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Constant(value=overrides[name]))
                body.append(ast.copy_location(assign, stmt))
    out = ast.Module(body=body, type_ignores=[])
    return ast.fix_missing_locations(out)


def module_at(source, path, overrides):
    """The problem's globals after executing it with `overrides` assigned."""
    tree = with_overrides(ast.parse(source, filename=path), overrides)
    namespace = {"__name__": "kernelbench_problem", "__file__": path}
    exec(compile(tree, path, "exec"), namespace)
    return namespace


def module_globals(source, path):
    """The integer and float globals the module sets (bool excluded), in the order it sets them."""
    namespace = module_at(source, path, {})
    order = []
    for stmt in ast.parse(source).body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        for t in targets:
            for name in assigned_names(t) if t is not None else []:
                if name not in order:
                    order.append(name)
    return {n: namespace[n] for n in order
            if isinstance(namespace.get(n), (int, float)) and not isinstance(namespace.get(n), bool)}


def derived_globals(source):
    """{global: [the globals its module-level value is computed from]} for those computed from others."""
    seen, derived = set(), {}
    for stmt in ast.parse(source).body:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
            continue
        used = sorted({n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and n.id in seen})
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for name in [n for t in targets for n in assigned_names(t)]:
            if used:
                derived[name] = used
            seen.add(name)
    return derived


# ---- one run of the problem -------------------------------------------------------------------------

RNG_OPS = ("rand", "bernoulli", "normal", "uniform", "multinomial", "exponential", "geometric", "cauchy",
           "log_normal", "randperm", "poisson")


class OpLog:
    """The aten ops a forward ran (name, args), recorded by a dispatch mode."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        log = self
        self.ops = []
        self.largest_results = [0, 0]   # bytes of the two largest tensors an op returned

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                log.ops.append((func.overloadpacket.__name__, args))
                result = func(*args, **(kwargs or {}))
                for r in result if isinstance(result, (tuple, list)) else [result]:
                    if isinstance(r, torch.Tensor):
                        log.largest_results = sorted(log.largest_results + [r.numel() * r.element_size()])[-2:]
                return result
        self.mode = Mode()


def tensor_type(t):
    if t.is_floating_point():
        return "float"
    return "int64" if t.dtype == torch.int64 else str(t.dtype).replace("torch.", "")


class Run:
    """What one run of the problem at one set of overrides found: every tensor the kernel takes or
    writes as (role, name, type, shape), the forward's aten ops and the constant inputs."""

    def __init__(self, tensors, ops, constants, int_ranges, largest_results=(0, 0)):
        self.tensors = tensors
        self.ops = ops
        self.largest_results = list(largest_results)
        self.constants = constants      # {position: value} of get_inputs' non-tensor values
        self.int_ranges = int_ranges    # {input position: (low, high)} of torch.randint draws

    def signature(self):
        return [(r, n, t) for r, n, t, _ in self.tensors]

    def shapes(self):
        return [s for _, _, _, s in self.tensors]

    def largest(self, skip=()):
        """Elements of the largest tensor but those at the positions `skip`."""
        return max((numel(s) for i, s in enumerate(self.shapes()) if i not in skip), default=1)


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def forward_names(model_class, count):
    """forward's parameter names for `count` inputs (input<i> where it takes *args)."""
    try:
        params = [p for p in inspect.signature(model_class.forward).parameters.values()][1:]
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(count):
        p = params[i] if i < len(params) else None
        ok = p is not None and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        names.append(p.name if ok else "input%d" % i)
    return names


def tensor_attributes(model):
    """(dotted name, tensor) of tensors held as plain attributes of the model or its submodules
    (neither parameters nor buffers: an RNN's initial hidden state set in __init__). The kernel
    takes them as buffers."""
    out = []
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                out.append(((prefix + "." if prefix else "") + name, value))
    return out


def recorded_randint():
    """A torch.randint stand-in that remembers each draw's tensor with its [low, high)."""
    draws = []
    real = torch.randint

    def randint(*args, **kwargs):
        t = real(*args, **kwargs)
        ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
        low, high = (kwargs.get("low", 0), kwargs.get("high")) if "high" in kwargs else \
            ((0, ints[0]) if len(ints) == 1 else (ints[0], ints[1]) if len(ints) >= 2 else (None, None))
        draws.append((t, low, high))
        return t
    return randint, draws, real


def build_model(namespace, device):
    """Model(*get_init_inputs()) on `device`; for meta, built on the CPU and moved there where its
    construction reads a value (a stochastic-depth schedule's .item())."""
    try:
        with torch.device(device):
            return namespace["Model"](*namespace["get_init_inputs"]())
    except Exception:
        if device != "meta":
            raise
    torch.manual_seed(0)
    return namespace["Model"](*namespace["get_init_inputs"]()).to("meta")


def run_problem(source, path, overrides, device, record_ops=True):
    """Builds and runs the problem on `device` with `overrides`: a Run (with the forward's aten
    ops where `record_ops`: recording them costs a Python call an op), or an exception."""
    namespace = module_at(source, path, overrides)
    for needed in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(namespace.get(needed)):
            raise Refused("no %s: not a problem in KernelBench's format" % needed)
    torch.manual_seed(0)
    randint, draws, real = recorded_randint()
    torch.randint = randint
    try:
        model = build_model(namespace, device)
        with torch.device(device):
            inputs = list(namespace["get_inputs"]())
    finally:
        torch.randint = real
    constants, tensors, int_ranges = {}, [], {}
    names = forward_names(namespace["Model"], len(inputs))
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            tensors.append(("input", names[i], tensor_type(x), list(x.shape)))
            for t, low, high in draws:
                if t is x:
                    int_ranges[i] = (low, high)
        else:
            constants[i] = x
    tensors += [("parameter", n, tensor_type(p), list(p.shape)) for n, p in model.named_parameters()]
    tensors += [("buffer", n, tensor_type(b), list(b.shape)) for n, b in model.named_buffers()]
    tensors += [("buffer", n, tensor_type(b), list(b.shape)) for n, b in tensor_attributes(model)]
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
    log = OpLog()
    with torch.no_grad():
        if record_ops:
            with log.mode:
                result = model(*inputs)
        else:
            result = model(*inputs)
    outputs = list(result) if isinstance(result, (tuple, list)) else [result]
    for i, o in enumerate(outputs):
        if not isinstance(o, torch.Tensor):
            raise Refused("forward returns a %s (output %d): the outputs of a user type are tensors" % (type(o).__name__, i))
        tensors.append(("output", "out" if len(outputs) == 1 else "out%d" % i, tensor_type(o), list(o.shape)))
    return Run(tensors, log.ops, constants, int_ranges, log.largest_results)


class Runner:
    """Runs the problem at overrides on meta, or on the CPU where meta cannot run it, remembering
    each result (a Run, or None where the sizes are not valid for the problem)."""

    def __init__(self, source, path):
        self.source, self.path = source, path
        self.device = "meta"
        self.cache = {}
        self.meta_error = None
        self.recurrent = False

    def run(self, overrides):
        """The run at `overrides` (shapes and dtypes; the ops are recorded at the module's own sizes
        alone, see recorded_ops), or None where it does not run."""
        key = tuple(sorted(overrides.items()))
        if key not in self.cache:
            try:
                self.cache[key] = run_problem(self.source, self.path, overrides, self.device, record_ops=False)
            except Refused:
                raise
            except Exception:
                self.cache[key] = None
        return self.cache[key]

    def recorded_ops(self, overrides):
        """The aten ops of the forward at `overrides` (None where it does not run)."""
        try:
            return run_problem(self.source, self.path, overrides, self.device).ops
        except Exception:
            return None

    def first(self, overrides):
        """The run at the module's own sizes, which must succeed: on meta, else on the CPU where
        its tensors are small enough to run there (a forward that reads values: .item(), a mask),
        else None with the reason in meta_error."""
        elements = self.elements_on_meta(overrides)
        if self.recurrent and elements is not None and elements <= CPU_ELEMENTS:
            # A recurrent layer on meta runs its time steps as Python meta kernels, minutes a run;
            # on the CPU it is one fused op of C++.
            self.meta_error = "a recurrent layer, faster on the CPU at these sizes"
        else:
            try:
                return run_problem(self.source, self.path, overrides, "meta")
            except Refused:
                raise
            except Exception as e:
                self.meta_error = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])
        if elements is None or elements > CPU_ELEMENTS:
            self.meta_error += "; its tensors are too large to run it on the CPU instead" if elements else ""
            return None
        try:
            run = run_problem(self.source, self.path, overrides, "cpu")
        except Refused:
            raise
        except Exception as e:
            self.meta_error += "; on the CPU: %s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])
            return None
        self.device = "cpu"
        self.cache.clear()
        return run

    def elements_on_meta(self, overrides):
        """Elements of the inputs and the model's tensors, built on meta (None where that fails
        too); notes whether the model holds a recurrent layer."""
        try:
            namespace = module_at(self.source, self.path, overrides)
            model = build_model(namespace, "meta")
            self.recurrent = any(isinstance(m, torch.nn.RNNBase) for m in model.modules())
            with torch.device("meta"):
                inputs = [x for x in namespace["get_inputs"]() if isinstance(x, torch.Tensor)]
            return sum(t.numel() for t in inputs) + sum(p.numel() for p in model.parameters()) + \
                sum(b.numel() for b in model.buffers())
        except Exception:
            return None


# ---- what a forward does --------------------------------------------------------------------------

def rng_in_forward(run):
    """The first random-number op the forward ran (dropout with p > 0 in training mode draws one), or None."""
    for name, args in run.ops:
        if name == "native_dropout":
            if len(args) > 2 and args[2] is False or (len(args) > 1 and args[1] == 0):
                continue
            return "native_dropout"
        if any(name.startswith(r) or name.startswith("_" + r) for r in RNG_OPS):
            return name
    return None


GEMM_OPS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "_scaled_dot_product_flash_attention",
            "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention_for_cpu",
            "_scaled_dot_product_attention_math"}
NORM_OPS = ("batch_norm", "group_norm", "layer_norm", "instance_norm", "rms_norm")
SCAN_OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
ROW_OPS = ("_softmax", "_log_softmax", "_safe_softmax")
REDUCE_OPS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "logsumexp", "norm", "linalg_vector_norm",
              "var", "std", "var_mean", "std_mean", "argmax", "argmin", "all", "any", "aminmax"}
# aten's recurrent ops (lstm, gru, rnn_tanh, _cudnn_rnn, mkldnn_rnn_layer on the CPU, ...), by name
RNN_OPS = ("lstm", "gru", "rnn")


def heavy_ops(run):
    """The convolutions and GEMMs of the forward in order: ("conv" | "tconv" | "gemm2d" | "gemm", rank)."""
    out = []
    for name, args in run.ops:
        if name == "convolution":
            out.append(("tconv" if len(args) > 6 and args[6] else "conv", None))
        elif name in GEMM_OPS:
            ranks = [a.dim() for a in args if isinstance(a, torch.Tensor)]
            out.append(("gemm2d" if name in ("mm", "addmm") and all(r <= 2 for r in ranks) else "gemm", ranks))
    return out


def axes_of(name, args):
    """The normalised axes a reduction or a softmax names in its args (dim as int or list)."""
    x = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if x is None:
        return None
    rank = x.dim()
    dims = None
    # linalg_vector_norm(x, ord, dim, keepdim): its first int is the order, not an axis
    for a in args[2:] if name in ("linalg_vector_norm", "norm") else args[1:]:
        if isinstance(a, int) and not isinstance(a, bool):
            dims = [a]
            break
        if isinstance(a, (list, tuple)) and all(isinstance(d, int) for d in a):
            dims = list(a)
            break
    if dims is None or rank == 0:
        return list(range(rank)), rank
    return sorted({d % rank for d in dims}), rank


def classify(run):
    """(kind, grid, reduce_axis) of the forward from the ops it ran and its tensors."""
    names = [n for n, _ in run.ops]
    outputs = [t for t in run.tensors if t[0] == "output"]
    inputs = [t for t in run.tensors if t[0] == "input"]
    first = inputs[0][3] if inputs else []
    heavy = heavy_ops(run)
    kinds = {k for k, _ in heavy}
    if any(r in n for n in names for r in RNN_OPS) or len(heavy) >= 3 or \
            len(kinds & {"conv", "tconv"}) and len(kinds - {"conv", "tconv"}) or \
            sum(1 for k, _ in heavy if k in ("conv", "tconv")) >= 2:
        return "model", "elements", None
    if "tconv" in kinds:
        return "transposed_convolution", "elements", None
    if "conv" in kinds:
        return "convolution", "elements", None
    after_gemm = names[names.index(next(n for n in names if n in GEMM_OPS)) + 1:] if heavy else []
    if heavy:
        reduces_after = any(n in REDUCE_OPS or n in ROW_OPS or any(n.find(x) >= 0 for x in NORM_OPS)
                            for n in after_gemm)
        if kinds == {"gemm2d"} and len(heavy) == 1 and not reduces_after and len(outputs) == 1 and \
                len(outputs[0][3]) == 2:
            return "gemm_epilogue", "tiles", None
        return "matmul", "tiles" if outputs and outputs[0][3] else "elements", None
    if any(o[3] == [] or numel(o[3]) == 1 and len(first) > 1 for o in outputs):
        return "loss", "elements", None
    if any(o[2] == "int64" for o in outputs):
        return "index", "elements", None
    if any(n in SCAN_OPS for n in names):
        return "scan", "elements", None
    if any("pool" in n for n in names):
        return "pooling", "elements", None
    return classify_rowwise(run, first, outputs)


def classify_rowwise(run, first, outputs):
    """The kinds of a forward of no convolution, GEMM, scan or pooling: elementwise, rowwise (every
    reduction over the last axis, the output as the input), reduction (one axis reduced away),
    normalization (the rest: norms over other axes, GroupNorm, BatchNorm in training mode)."""
    axes = []
    norm = False
    for name, args in run.ops:
        if any(name.find(x) >= 0 for x in NORM_OPS):
            if name.find("layer_norm") >= 0 and len(args) > 1 and isinstance(args[0], torch.Tensor):
                rank = args[0].dim()
                axes.append((list(range(rank - len(args[1]), rank)), rank))
            else:
                norm = True
        elif name in ROW_OPS or name in REDUCE_OPS:
            found = axes_of(name, args)
            if found:
                axes.append(found)
    if norm:
        return "normalization", "elements", None
    if not axes:
        return "elementwise", "elements", None
    same_shape = all(o[3] == first for o in outputs)
    last_only = all(a == [r - 1] for a, r in axes)
    if same_shape:
        return ("rowwise", "rows", None) if last_only else ("normalization", "elements", None)
    single = {tuple(a) for a, r in axes}
    if len(single) == 1 and len(next(iter(single))) == 1 and all(r == len(first) for _, r in axes):
        axis = next(iter(single))[0]
        return "reduction", "rows" if axis == len(first) - 1 else "elements", axis
    return "normalization", "elements", None


# ---- shapes as expressions -------------------------------------------------------------------------

def linear_fit(samples, dims):
    """An expression sum(a_i * dim_i) + c with integer a_i >= 0 that gives every sample, or None.
    `samples` is [(values of the dims, y)]; the coefficients come from the first samples that
    change one dim alone."""
    base_values, base_y = samples[0]
    coefficients = {}
    for d in dims:
        for values, y in samples[1:]:
            changed = [k for k in dims if values[k] != base_values[k]]
            if changed == [d]:
                step = values[d] - base_values[d]
                if (y - base_y) % step:
                    return None
                coefficients[d] = (y - base_y) // step
                break
    c = base_y - sum(a * base_values[d] for d, a in coefficients.items())
    for values, y in samples:
        if sum(a * values[d] for d, a in coefficients.items()) + c != y:
            return None
    if any(a < 0 for a in coefficients.values()):
        return None
    terms = [d if a == 1 else "%d * %s" % (a, d) for d, a in coefficients.items() if a]
    return join_terms(terms, c)


def join_terms(terms, c):
    text = " + ".join(terms)
    if not text:
        return c
    if c > 0:
        text += " + %d" % c
    elif c < 0:
        text += " - %d" % -c
    return text


def affine_division_fit(samples, dim):
    """An expression m * ((a * dim + c) / s) + b (floor division, 1 <= a, m, s <= 8, 0 <= c < s) that
    gives every sample, or None: a convolution's or a pooling's output size (m: a transposed
    convolution after a pooling)."""
    (v0, y0) = samples[0][0][dim], samples[0][1]
    # a pooling's stride is its kernel's size by default: up to 64; a coefficient above 1 comes with small strides
    for s in range(2, 65):
        small = s <= 8
        for m in range(1, 9 if small else 2):
            for a in range(1, 9 if small else 2):
                for c in range(s):
                    b = y0 - m * ((a * v0 + c) // s)
                    if all(m * ((a * values[dim] + c) // s) + b == y for values, y in samples):
                        return affine_text(dim, a, c, s, m, b)
    return None


def affine_text(dim, a, c, s, m, b):
    inner = join_terms([dim if a == 1 else "%d * %s" % (a, dim)], c)
    text = "(%s) / %d" % (inner, s) if c else "%s / %d" % (inner, s)
    if m != 1:
        text = "%d * (%s)" % (m, text)
    return join_terms([text], b)


def product_fit(samples, dims):
    """An expression k * d1 * d2 ... (k a positive integer) over the dims it depends on, or None."""
    base_values, base_y = samples[0]
    used = [d for d in dims if any(values[d] != base_values[d] and y != base_y and
                                   [k for k in dims if values[k] != base_values[k]] == [d] for values, y in samples)]
    if not used:
        return None
    denominator = numel([base_values[d] for d in used])
    if base_y % denominator:
        return None
    k = base_y // denominator
    if k < 1 or any(k * numel([values[d] for d in used]) != y for values, y in samples):
        return None
    return " * ".join(([] if k == 1 else [str(k)]) + used)


def fit_expression(samples, dims):
    """The simplest expression over `dims` that gives y at every sample: an integer, a dim, a
    linear form, a dim's affine form with floor division, or a product of dims."""
    ys = {y for _, y in samples}
    if len(ys) == 1:
        return ys.pop()
    for d in dims:
        if all(values[d] == y for values, y in samples):
            return d
    for fit in (lambda: linear_fit(samples, dims), lambda: product_fit(samples, dims)):
        found = fit()
        if found is not None:
            return found
    depends = [d for d in dims if any(v[d] != samples[0][0][d] for v, _ in samples)]
    for d in depends:
        found = affine_division_fit([s for s in samples if all(s[0][k] == samples[0][0][k] for k in dims if k != d)], d)
        if found is not None and all(evaluate(found, values) == y for values, y in samples):
            return found
    return None


def evaluate(expression, values):
    """An expression written by fit_expression at `values` (floor division as the spec's language)."""
    if isinstance(expression, int):
        return expression
    return eval(expression.replace("/", "//"), {"__builtins__": {}}, dict(values))


# ---- the analysis -----------------------------------------------------------------------------------

class Analysis:
    def __init__(self, source, path):
        self.source, self.path = source, path
        self.runner = Runner(source, path)
        self.ladders = {}
        self.notes = []

    def analyse(self):
        self.globals = module_globals(self.source, self.path)
        self.ints = {k: v for k, v in self.globals.items() if isinstance(v, int)}
        self.bench_values = dict(self.ints)
        base = self.runner.first({})
        if base is None:
            raise Refused("it does not run on the meta device (%s)" % self.runner.meta_error)
        if self.runner.device == "cpu":
            self.notes.append("runs on the CPU: %s" % self.runner.meta_error)
        self.base = base
        self.check_judgeable(base)
        self.dims = self.find_dims()
        while True:
            self.unscaled = self.unscaled_tensors()
            self.stages = self.stage_shapes()
            try:
                self.shapes = self.shape_expressions()
                break
            except Unfitted as e:
                if not e.dims:
                    raise
                # Kept at the module's own values, those dims become [fixed]: the axis is then a number.
                self.notes.append("%s kept at the module's own value%s: %s" % (
                    ", ".join(e.dims), "s" if len(e.dims) > 1 else "", e))
                self.dims = [d for d in self.dims if d not in e.dims]
        self.kind, self.grid, self.reduce_axis = classify(base)

    def check_judgeable(self, run):
        rng = rng_in_forward(run)
        if rng:
            raise Refused("forward draws random numbers (aten.%s: dropout with p > 0 in training mode, or torch.rand "
                          "in forward): its output is not a function of its inputs, as KernelBench calls it" % rng)
        for role, name, kind, shape in run.tensors:
            if kind not in ("float", "int64"):
                raise Refused("%s %s is a %s tensor: a user type's tensors are float or int64" % (role, name, kind))
        if not any(t[0] == "output" for t in run.tensors):
            raise Refused("forward returns no tensor")
        for i, value in run.constants.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise Refused("get_inputs() returns a %s at position %d: the inputs of a user type are tensors "
                              "(or numbers that stay constant)" % (type(value).__name__, i))
        for i, (low, high) in run.int_ranges.items():
            if high is None:
                raise Refused("int64 input %d is drawn with torch.randint without an upper bound we can read" % i)
        for role, name, kind, _ in run.tensors:
            if role == "input" and kind == "int64" and not any(
                    name == n for i, n in enumerate(self.input_names()) if i in run.int_ranges):
                raise Refused("int64 input %s is not drawn by torch.randint: its range is unknown" % name)

    def input_names(self):
        return [n for r, n, _, _ in self.base.tensors if r == "input"]

    # -- dims

    def find_dims(self):
        """The integer globals whose change (doubled) changes the shape of an input, parameter or
        buffer, keeps the same tensors, and is not a layer's hyperparameter by its name; each must
        also run at a smaller value."""
        dims = []
        for name, value in self.ints.items():
            if value < 1 or HYPERPARAMETER_NAME.search(name) or not kernel_may_take(name):
                continue
            run = self.runner.run({name: value * 2})
            if run is None or run.signature() != self.base.signature():
                continue
            changed = [i for i, (a, b) in enumerate(zip(run.shapes(), self.base.shapes()))
                       if a != b and self.base.tensors[i][0] != "output"]
            if changed and self.smaller_values(name):
                dims.append(name)
        return dims

    def unscaled_weights(self):
        return {i for i, t in enumerate(self.base.tensors) if t[0] in ("parameter", "buffer")}

    def unscaled_tensors(self):
        """Positions of the tensors no dim changes (a model's weights of literal sizes): no stage
        shape can make them smaller, so the budget of a stage's tensors leaves them out."""
        changed = set()
        for d in self.dims:
            run = self.runner.run({d: self.ints[d] * 2})
            changed.update(i for i, (a, b) in enumerate(zip(run.shapes(), self.base.shapes())) if a != b)
        return {i for i in range(len(self.base.tensors)) if i not in changed}

    def smaller_values(self, name):
        """Values below the module's own at which the problem still runs, the others unchanged."""
        value = self.ints[name]
        found = []
        for v in sorted({value // 2, (value // 2) | 1, max(1, value - 1)}, reverse=True):
            if 1 <= v < value:
                run = self.runner.run({name: v})
                if run is not None and run.signature() == self.base.signature():
                    found.append(v)
        return found

    def samples_for(self, overrides_list):
        """(dim values, Run) of every overrides that runs."""
        out = []
        for overrides in overrides_list:
            run = self.runner.run(overrides)
            if run is not None and run.signature() == self.base.signature():
                values = dict(self.bench_values)
                values.update(overrides)
                out.append((values, run))
        return out

    # -- stage shapes

    def dim_roles(self):
        """batch (in an input, never a last axis, in no weight), row (a last axis), feature."""
        roles = {}
        for d in self.dims:
            bigger = self.runner.run({d: self.ints[d] * 2})
            changed = [(t[0], i, len(t[3])) for t, a, b in zip(self.base.tensors, bigger.shapes(), self.base.shapes())
                       for i, (x, y) in enumerate(zip(a, b)) if x != y]
            if any(i == rank - 1 for _, i, rank in changed):
                roles[d] = "row"
            elif any(r == "input" for r, _, _ in changed) and not any(r in ("parameter", "buffer") for r, _, _ in changed):
                roles[d] = "batch"
            else:
                roles[d] = "feature"
        return roles

    def ladder(self, d):
        """The module's own value of `d` halved again and again, as far as the problem runs with it
        (the others at their own values), largest first: sizes that keep the divisibility the
        module's own had (channels a multiple of the groups) and stay above a kernel's size."""
        if d not in self.ladders:
            values = [self.ints[d]]
            while values[-1] > 1:
                v = values[-1] // 2
                run = self.runner.run({d: v})
                if run is None or run.signature() != self.base.signature():
                    break
                values.append(v)
            self.ladders[d] = values
        return self.ladders[d]

    def candidate(self, roles, batch, feature, row, budget):
        """A stage shape: each dim at its role's value (never above its own nor below what runs),
        then dims halved until its tensors fit `budget`, checked by running it; None when none runs."""
        target = {d: {"batch": batch, "feature": feature, "row": row}[roles[d]] for d in self.dims}
        plain = {d: max(min(self.ints[d], target[d]), self.ladder(d)[-1]) for d in self.dims}
        snapped = {d: min([v for v in self.ladder(d) if v >= target[d]] or [self.ladder(d)[-1]]) for d in self.dims}
        for attempt in (plain, snapped):
            shape = self.fit_budget(attempt, budget)
            if shape is not None:
                return shape
        return None

    def fits(self, values):
        run = self.runner.run(values)
        return run is not None and run.signature() == self.base.signature(), run

    def fit_budget(self, values, budget):
        """`values` with its largest dims halved (an odd one stays odd) until every tensor fits
        `budget`, each step one that still runs; None when `values` does not run or cannot fit."""
        values = dict(values)
        ok, run = self.fits(values)
        if not ok:
            return None
        while run.largest(self.unscaled) > budget:
            for at in sorted(self.dims, key=lambda d: (-values[d], -self.dims.index(d))):
                if values[at] <= 1:
                    continue
                trial = dict(values)
                trial[at] = values[at] // 2 | (values[at] % 2) if values[at] > 2 else 1
                ok, trial_run = self.fits(trial)
                if ok:
                    values, run = trial, trial_run
                    break
            else:
                return None
        return [values[d] for d in self.dims]

    def unchangeable(self):
        """Why no global is a dim, for the refusal: each integer global tried and what stopped it."""
        if not self.ints:
            return "the module sets no integer global"
        return ", ".join("%s = %d" % (k, v) for k, v in self.ints.items()) + ", each changed alone, fail to run or change no tensor"

    def stage_shapes(self):
        if not self.dims and self.base.largest(self.unscaled_weights()) <= MAX_STAGE_ELEMENTS:
            return {"bench": [], "smoke": [], "sweep": [[]], "stability": [], "determinism": [], "edge": [[]]}
        if not self.dims:
            raise Refused("none of its sizes can change (%s) and its tensors reach %d elements: its stages would all "
                          "run at its timed size" % (self.unchangeable(), self.base.largest(self.unscaled_weights())))
        roles = self.dim_roles()
        self.roles = roles
        bench = [self.ints[d] for d in self.dims]
        smoke = self.candidate(roles, 4, 64, 1000, MAX_STAGE_ELEMENTS // 64) or \
            self.candidate(roles, 1, 1, 1, MAX_STAGE_ELEMENTS // 64) or self.candidate(roles, 4, 64, 1000, MAX_STAGE_ELEMENTS)
        sweep, edge = [], []
        for pattern in ((64, 256, 4096), (33, 33, 1531), (128, 128, 2048), (7, 3, 65537), (1531, 7, 33)):
            self.add(sweep, self.candidate(roles, *pattern, MAX_STAGE_ELEMENTS))
        for pattern in ((1, 1, 1), (1, 3, 65537), (3, 7, 7)):
            self.add(edge, self.candidate(roles, *pattern, MAX_STAGE_ELEMENTS))
        if not sweep or smoke is None:
            raise Refused("no shape below the module's own runs with its tensors under %d elements (the dims %s)"
                          % (MAX_STAGE_ELEMENTS, ", ".join(self.dims)))
        if not edge:
            edge = [sweep[-1]]
        return {"bench": bench, "smoke": smoke, "sweep": sweep, "stability": sweep[0], "determinism": sweep[0],
                "edge": edge}

    @staticmethod
    def add(shapes, shape):
        if shape is not None and shape not in shapes:
            shapes.append(shape)

    # -- expressions

    def shape_overrides(self):
        """Every shape the expressions must hold at: the module's own, each dim changed alone, and the stages."""
        out = [{}]
        for d in self.dims:
            out += [{d: v} for v in [self.ints[d] * 2] + self.smaller_values(d)]
        s = self.stages
        for shape in [s["smoke"]] + s["sweep"] + s["edge"]:
            out.append(dict(zip(self.dims, shape)))
        return out

    def shape_expressions(self):
        """Each tensor's shape as expressions over the dims, and each int64 input's [low, high)."""
        samples = self.samples_for(self.shape_overrides())
        self.samples = samples
        shapes = []
        for i, (role, name, _, shape) in enumerate(self.base.tensors):
            entries = []
            for axis in range(len(shape)):
                points = [({d: v[d] for d in self.dims}, run.tensors[i][3][axis]) for v, run in samples]
                found = fit_expression(points, self.dims)
                if found is None:
                    base = points[0]
                    involved = [d for d in self.dims if any(
                        v[d] != base[0][d] and y != base[1] and all(v[k] == base[0][k] for k in self.dims if k != d)
                        for v, y in points)]
                    raise Unfitted("axis %d of %s %s has a size we cannot write as an expression of %s (seen: %s)"
                                   % (axis, role, name, ", ".join(self.dims),
                                      ", ".join(str(y) for _, y in points[:6])), involved)
                entries.append(found)
            shapes.append(entries)
        self.int_bounds = {}
        for position, (low, high) in self.base.int_ranges.items():
            bounds = []
            for which, value in (("low", low), ("high", high)):
                points = [({d: v[d] for d in self.dims}, run.int_ranges.get(position, (None, None))[which == "high"])
                          for v, run in samples]
                if any(not isinstance(y, int) for _, y in points):
                    raise Refused("the range of int64 input %d changes in a way we cannot follow" % position)
                bounds.append(fit_expression(points, self.dims))
            self.int_bounds[position] = bounds
        return shapes

    def constant_inputs(self):
        """get_inputs()' numbers, which must be the same at every shape: {forward's name: value}."""
        names = forward_names(module_at(self.source, self.path, {})["Model"], len(self.base.constants) +
                              len(self.input_names()))
        out = {}
        for position, value in self.base.constants.items():
            for _, run in self.samples:
                if run.constants.get(position) != value:
                    raise Refused("get_inputs() returns a number at position %d that changes with the sizes: the "
                                  "inputs of a user type are tensors" % position)
            out[names[position]] = value
        return out


def follows_dims(name, dims, source):
    """Whether the module computes global `name` from a dim, directly or through other globals."""
    derived = derived_globals(source)
    seen, todo = set(), [name]
    while todo:
        for used in derived.get(todo.pop(), []):
            if used in dims:
                return True
            if used not in seen:
                seen.add(used)
                todo.append(used)
    return False


def summary_of(source):
    """The first line of Model's docstring, or empty."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            doc = ast.get_docstring(node) or ""
            lines = [l.strip() for l in doc.splitlines() if l.strip()]
            return lines[0][:200] if lines else ""
    return ""


def flops_expression(analysis):
    """2 * M * N * K of the forward's GEMMs as a product of dims where one fits every shape, else None."""
    if analysis.kind not in ("gemm_epilogue", "matmul"):
        return None
    points = []
    for values, run in analysis.samples:
        total = 0
        ops = analysis.base.ops if values == analysis.bench_values else analysis.runner.recorded_ops(
            {d: values[d] for d in analysis.dims if values[d] != analysis.bench_values[d]})
        for name, args in ops or []:
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            if name in ("mm", "addmm", "bmm", "baddbmm") and len(tensors) >= 2:
                a, b = tensors[-2], tensors[-1]
                total += 2 * numel(a.shape) * b.shape[-1]
        points.append(({d: values[d] for d in analysis.dims}, total))
    if not points or points[0][1] == 0:
        return None
    found = product_fit(points, analysis.dims)
    return found if found is not None and all(evaluate(found, v) == y for v, y in points) else None


def memory_at_bench(analysis):
    """Bytes a judged launch holds on the GPU at the module's own sizes in fp32: the worker's pool
    (every tensor once) and the reference process's peak, estimated as its rounded copies of the
    inputs, parameters and buffers, the module's own parameters and buffers, its outputs, and the
    two largest tensors an op of the forward returned (the live intermediates at its peak)."""
    sizes = {"input": 0, "parameter": 0, "buffer": 0, "output": 0}
    for role, _, kind, shape in analysis.base.tensors:
        sizes[role] += numel(shape) * (8 if kind == "int64" else 4)
    pool = sum(sizes.values())
    weights = sizes["parameter"] + sizes["buffer"]
    reference = sizes["input"] + 2 * weights + sizes["output"] + sum(analysis.base.largest_results)
    return {"pool_bytes": pool, "reference_bytes": reference, "total_bytes": pool + reference}


def report(analysis):
    a = analysis
    used_in_shapes = set()
    for entries in a.shapes:
        for e in entries:
            if isinstance(e, str):
                used_in_shapes.update(re.findall(r"[A-Za-z_]\w*", e))
    # A global computed from a dim is computed again at every shape: the spec does not pin it.
    fixed = {k: v for k, v in a.globals.items() if k not in a.dims and not follows_dims(k, a.dims, a.source)}
    tensors = {"input": [], "parameter": [], "buffer": [], "output": []}
    names = a.input_names()
    positions = [i for i in range(len(names) + len(a.base.constants)) if i not in a.base.constants]
    for (role, name, kind, _), shape in zip(a.base.tensors, a.shapes):
        entry = {"name": name, "shape": shape, "type": kind}
        if role == "input" and kind == "int64":
            position = positions[names.index(name)]
            entry["low"], entry["high"] = a.int_bounds[position]
        tensors[role].append(entry)
    out = {
        "file": a.path, "accepted": True, "kind": a.kind, "grid": a.grid, "summary": summary_of(a.source),
        "dims": a.dims, "fixed": fixed, "stages": a.stages, "derived": derived_globals(a.source),
        "inputs": tensors["input"], "parameters": tensors["parameter"], "buffers": tensors["buffer"],
        "outputs": tensors["output"], "reduce_axis": a.reduce_axis,
        "constant_inputs": a.constant_inputs(), "flops": flops_expression(a),
        "memory": memory_at_bench(a), "notes": a.notes,
    }
    out["builtin"], out["builtin_why_not"] = offline_reading(match_builtin, a)
    # Read even where a type matched: the registry may not take the match (a matmul layout it lacks).
    out["elementwise"], out["elementwise_why_not"] = offline_reading(elementwise_chain, a)
    return out


def offline_reading(reader, analysis):
    """What a reader of the problem for the offline path found, or None and why: a reader that
    fails leaves the problem a user type for the LLM, it never refuses it."""
    try:
        return reader(analysis)
    except Exception as e:
        return None, "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])


def analyse_source(source, path):
    try:
        ast.parse(source, filename=path)
    except SyntaxError as e:
        return {"file": path, "accepted": False, "kind": "refused",
                "refused": "not valid Python: %s (line %s)" % (e.msg, e.lineno)}
    analysis = Analysis(source, path)
    try:
        analysis.analyse()
        return report(analysis)
    except Refused as e:
        return {"file": path, "accepted": False, "kind": "refused", "refused": str(e)}
    except Exception as e:  # the module itself failed: its reason is the refusal
        return {"file": path, "accepted": False, "kind": "refused",
                "refused": "it fails to run: %s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:300])}


def analyse_file(path):
    """The verdict on one file: its analysis, or a refusal that says why it could not be read."""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, UnicodeDecodeError) as e:
        return {"file": path, "accepted": False, "kind": "refused", "refused": "cannot read it: %s" % e}
    # The problem's own prints go to stderr: stdout carries the verdicts alone.
    stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        return analyse_source(source, path)
    finally:
        sys.stdout = stdout


def main(argv):
    global torch
    if len(argv) < 2:
        sys.stderr.write("usage: python3 analyse_problem.py FILE.py...\n")
        return 2
    try:
        import torch as t
    except ImportError:
        sys.stderr.write("the analysis of a KernelBench problem runs it with PyTorch: this Python (%s) has no torch; "
                         "install it (pip install torch) or give --python PATH\n" % sys.executable)
        return 2
    torch = t
    # One thread: the runs are small or on meta, and a busy machine's cores are better left alone.
    torch.set_num_threads(1)
    for path in argv[1:]:
        print(json.dumps(analyse_file(path)), flush=True)
    return 0


# autokernel prepends the offline readers to this file when it runs it (problem_analysis.cpp); a
# copy imported from the repository (the tests) reads them from beside it, into the same globals.
if "match_builtin" not in globals():
    import os as _os
    for _reader in ("builtin_match.py", "elementwise_chain.py"):
        with open(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), _reader), encoding="utf-8") as _f:
            exec(compile(_f.read(), _reader, "exec"), globals())

if __name__ == "__main__":
    sys.exit(main(sys.argv))
