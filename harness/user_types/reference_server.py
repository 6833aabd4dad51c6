"""The reference process of a user type: a PyTorch program the worker starts beside itself on its
own GPU. It draws each launch's inputs with the problem's get_inputs() under a fresh seed, writes
them into a pool of the worker's device memory (CUDA IPC), and after the worker ran the candidate
computes the reference on its own copies and compares, all in this process: the expected values
and the seeds never enter the worker, whose memory a candidate kernel can read.

Protocol: one JSON object per line on stdin (a request, "op" naming it) and on stdout (its reply,
"ok" always; "error" when not ok). stderr is a log. The worker runs it as `python3 -I -c <text>`.
The functions above the torch section need no torch, so that a unittest can drive them."""
import ast
import json
import math
import os
import secrets
import sys
import traceback

torch = None  # imported in main(): the pure logic below is tested where there is no torch

# KernelBench's checker (src/kernelbench/eval.py at 423217d, get_tolerance_for_precision): atol =
# rtol per dtype, after torchbench. Its older rule, 1e-2 for every dtype, is gone.
KERNELBENCH_TOLERANCES = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2}
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


class Failure(Exception):
    """A request that cannot be done; its text (what failed, what to do) is the reply's error."""


# ---- pure logic -------------------------------------------------------------------------------

def c_name(torch_name):
    """The spec's name for a parameter or buffer: torch's dotted name with dots as underscores."""
    return torch_name.replace(".", "_")


def spec_name_of(torch_name, spec_name):
    """Whether the spec's name is torch's (dots as underscores), or that with the suffix _<n> the
    importer adds where an input or a C++ word already has the name (an input h0 beside an RNN's
    own h0 attribute: h0_1)."""
    base = c_name(torch_name)
    return spec_name == base or (spec_name.startswith(base + "_") and spec_name[len(base) + 1:].isdigit())


def dim_values(dims, shape):
    """{dim name: value} for a shape given as one positive integer per dim, in the dims' order."""
    if not isinstance(shape, list) or len(shape) != len(dims):
        raise Failure("the shape %s does not give one value per dim %s" % (json.dumps(shape), json.dumps(dims)))
    for name, value in zip(dims, shape):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise Failure("dim %s = %s is not a positive integer" % (name, json.dumps(value)))
    return dict(zip(dims, shape))


def size_globals(dims, shape, fixed):
    """The module globals to set before building the model at `shape`: the dims, then the fixed
    globals as the spec gives them (an axis, a constant)."""
    values = dict(fixed or {})
    values.update(dim_values(dims, shape))
    return values


def assigned_names(target):
    """The plain names an assignment target binds (a, or a, b in a tuple target)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in assigned_names(t)]
    return []


def with_overrides(tree, overrides):
    """The module's AST with `name = value` inserted after every module-level assignment of a name
    in `overrides`: a global computed from it afterwards (bias_shape = (out_features,)) follows.
    daemon/kernelbench/analyse_problem.py runs a problem the same way when it imports it."""
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
    return ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))


def module_at(source, filename, overrides):
    """The reference's globals after executing its source with `overrides` assigned anew."""
    namespace = {"__name__": "reference_module", "__file__": filename}
    exec(compile(with_overrides(ast.parse(source, filename=filename), overrides), filename, "exec"), namespace)
    return namespace


def shape_names(dims, shape, fixed):
    """The names a spec's shape expressions may use at `shape`: the dims, and the integer [fixed]
    globals (an axis, a kernel's size) as the spec gives them."""
    names = {k: v for k, v in (fixed or {}).items() if isinstance(v, int) and not isinstance(v, bool)}
    names.update(dim_values(dims, shape))
    return names


INT64_LIMIT = 1 << 63


def expression_value(text, names):
    """An integer expression of the spec (kernels_cuda/spec_expression's language): integers, names,
    + - * / % (floor division and modulo), unary minus, parentheses, ceil_div(a, b), min(a, b),
    max(a, b); division by zero and values past int64 are errors."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise Failure("the shape expression %r does not parse" % text)

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            v = node.value
        elif isinstance(node, ast.Name):
            if node.id not in names:
                raise Failure("the shape expression %r names no dim nor integer [fixed] global: %r (those: %s)"
                              % (text, node.id, ", ".join(names)))
            v = names[node.id]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = value(node.operand)
            v = -v if isinstance(node.op, ast.USub) else v
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)):
            a, b = value(node.left), value(node.right)
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
                raise Failure("the shape expression %r divides by zero here (%s)" % (text, json.dumps(names)))
            v = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Div: lambda: a // b,
                 ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b}[type(node.op)]()
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("ceil_div", "min", "max") and len(node.args) == 2 and not node.keywords:
            a, b = value(node.args[0]), value(node.args[1])
            if node.func.id == "ceil_div":
                if b == 0:
                    raise Failure("the shape expression %r divides by zero here (%s)" % (text, json.dumps(names)))
                v = -((-a) // b)
            else:
                v = min(a, b) if node.func.id == "min" else max(a, b)
        else:
            raise Failure("the shape expression %r holds %s, which the spec's language has not"
                          % (text, ast.dump(node)[:60]))
        if not -INT64_LIMIT <= v < INT64_LIMIT:
            raise Failure("the shape expression %r overflows int64 here (%s)" % (text, json.dumps(names)))
        return v
    return value(tree.body)


def tensor_shape(spec_shape, dims):
    """A spec tensor's shape at one shape: each entry an integer or an expression over `dims` (the
    names shape_names gives); [] is a scalar."""
    out = []
    for entry in spec_shape:
        if isinstance(entry, str):
            out.append(expression_value(entry, dims))
        else:
            out.append(int(entry))
    return out


def bound(value, dims):
    """An int64 input's low or high: an integer or an expression over `dims`."""
    return expression_value(value, dims) if isinstance(value, str) else int(value)


def element_bytes(tensor, dtype):
    return 8 if tensor["type"] == "int64" else DTYPE_BYTES[dtype]


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def check_layout(tensors, layout, dims, dtype, pool_bytes):
    """The worker's placement of the spec's tensors in the pool: one slot per tensor, each of the
    tensor's size at this shape and dtype, inside the pool, none overlapping another."""
    if len(layout) != len(tensors):
        raise Failure("the layout has %d slots for the spec's %d tensors" % (len(layout), len(tensors)))
    taken = []
    for t, slot in zip(tensors, layout):
        want = numel(tensor_shape(t["shape"], dims)) * element_bytes(t, dtype)
        off, size = slot.get("offset"), slot.get("bytes")
        if not isinstance(off, int) or not isinstance(size, int) or off < 0:
            raise Failure("the layout slot of %s is not {offset, bytes} in integers: %s" % (t["name"], json.dumps(slot)))
        if size != want:
            raise Failure("the layout gives %s %d bytes; at this shape in %s it has %d" % (t["name"], size, dtype, want))
        if off + size > pool_bytes:
            raise Failure("the slot of %s ends at byte %d, past the pool's %d bytes" % (t["name"], off + size, pool_bytes))
        if off % 16:
            raise Failure("the slot of %s starts at byte %d, not 16-byte aligned" % (t["name"], off))
        taken.append((off, off + size, t["name"]))
    taken.sort()
    for (a0, a1, a), (b0, b1, b) in zip(taken, taken[1:]):
        if b0 < a1:
            raise Failure("the slots of %s and %s overlap in the pool" % (a, b))


def check_tensors(spec_tensors, actual, dims):
    """Compares the module's real tensors with the spec's. `actual` holds one {"role", "name",
    "type" ("float", "int64" or torch's dtype name), "shape"} per tensor: the inputs in get_inputs
    order (their names are the spec's: positions are all they have), then named_parameters, then
    named_buffers. Returns None when they agree, else the first difference, worded for the user."""
    for role in ("input", "parameter", "buffer"):
        want = [t for t in spec_tensors if t["role"] == role]
        got = [a for a in actual if a["role"] == role]
        if len(want) != len(got):
            names = ", ".join(a["name"] for a in got) or "none"
            return ("the module has %d %ss (%s) where the spec declares %d (%s): the spec's [[tensor]] "
                    "list must name every one, in order" % (len(got), role, names, len(want),
                                                          ", ".join(t["name"] for t in want) or "none"))
        for i, (t, a) in enumerate(zip(want, got)):
            what = "%s %d (%s)" % (role, i, t["name"])
            if role != "input" and not spec_name_of(a["name"], t["name"]):
                return "%s is %s in the module (spec name %s): the order or the name differs" % (
                    what, a["name"], c_name(a["name"]))
            if a["type"] != t["type"]:
                return "%s is %s in the module where the spec says %s (float tensors and int64 only)" % (
                    what, a["type"], t["type"])
            shape = tensor_shape(t["shape"], dims)
            if list(a["shape"]) != shape:
                return "%s has shape %s in the module; the spec's shape %s is %s here" % (
                    what, list(a["shape"]), json.dumps(t["shape"]), shape)
    return None


def unravel(flat, shape):
    """The index [i, j, ...] of the flat position `flat` in a row-major tensor of `shape`."""
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return list(reversed(index)) if shape else []


def number(x):
    """A float for a message: the shortest text that reads back as the same value."""
    return repr(float(x)) if math.isfinite(x) else str(float(x))


def absolute_tolerance(tolerance, follows_magnitude, expected_rms):
    """The atol of a check: the spec's tolerance; where the inputs were made large (the numerical-
    stability stage's scaled-up inputs, the edge-case stage's own), times the output's own magnitude
    (its root mean square, at least 1). A sum of large terms that cancels to a small value keeps the
    rounding of those terms, which the summation order of any correct kernel moves: seen on an H100,
    an fp32 GEMM + ReLU at 64x its inputs, 1.1e-4 off on an output of 0.038 where the reference
    summed in another order. What those inputs are for, overflow, NaN and lost precision, is errors
    far past that."""
    if follows_magnitude and math.isfinite(expected_rms):
        return tolerance * max(1.0, expected_rms)
    return tolerance


def mismatch_message(name, bad, total, index, got, expected, tolerance, atol=None):
    """The message of an output with `bad` of `total` elements out of tolerance (rtol = tolerance,
    atol = `atol`, the tolerance when not given)."""
    atol = tolerance if atol is None else atol
    limit = atol + tolerance * abs(expected) if math.isfinite(expected) else 0.0
    bounds = ("atol = rtol = %s" % number(tolerance) if atol == tolerance
              else "atol = %s (the output's magnitude times %s), rtol = %s" % (number(atol), number(tolerance), number(tolerance)))
    return ("output %s: %d of %d elements differ, worst at %s: got %s expected %s (tolerance %s there, %s)"
            % (name, bad, total, json.dumps(index), number(got), number(expected), number(limit), bounds))


def check_int_range(tensor, lowest, highest, dims):
    """An int64 input's values against the spec's [low, high) (an index the kernel follows must
    stay inside what it indexes). None when inside or when the spec gives no range."""
    if tensor.get("low") is None and tensor.get("high") is None:
        return None
    low = bound(tensor["low"], dims) if tensor.get("low") is not None else None
    high = bound(tensor["high"], dims) if tensor.get("high") is not None else None
    if (low is not None and lowest < low) or (high is not None and highest >= high):
        return ("int64 input %s holds values in [%d, %d] where the spec says [%s, %s)" %
                (tensor["name"], lowest, highest, "" if low is None else low, "" if high is None else high))
    return None


def input_scale(req):
    """prepare's "scale": the factor the float inputs are multiplied by after get_inputs() drew
    them (stage 3 reaches large and small magnitudes that way); 1 when absent."""
    scale = req.get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise Failure("scale = %s: expected a positive finite number" % json.dumps(scale))
    return float(scale)


def edge_ladder(req, dtype):
    """prepare's "inputs": the name of an edge recipe (EDGE_INPUTS) and so its rungs, mildest last,
    for `dtype`; None when absent (the inputs as get_inputs() draws them)."""
    name = req.get("inputs")
    if name is None:
        return None
    if name not in EDGE_INPUTS:
        raise Failure("inputs = %s: expected one of %s" % (json.dumps(name), ", ".join(sorted(EDGE_INPUTS))))
    if dtype not in DTYPE_LIMITS:
        raise Failure("dtype %r is not one of fp32, fp16, bf16" % dtype)
    return EDGE_INPUTS[name](DTYPE_LIMITS[dtype])


def _magnitude_rungs(limits):
    # 2^k with |k| up to a quarter of the dtype's exponent range first: products and short sums of
    # such values stay finite, and the small ones reach the dtype's subnormals in fp16.
    spans = (8, 4, 2) if limits["max"] < 1e6 else (20, 10, 5)
    return [{"what": "magnitudes (get_inputs() times 2^k, k drawn in [-%d, %d] per element)" % (e, e), "exponent": e,
             "follows_magnitude": True} for e in spans]


def _tiny_rungs(limits):
    tiny, subnormal = limits["tiny"], limits["tiny"] * limits["eps"]
    return [{"what": "tiny values (one element in 8 set to +-0, +-%s (the smallest subnormal) or +-%s (the smallest "
                     "normal))" % (number(subnormal), number(tiny)),
             "specials": [0.0, -0.0, subnormal, -subnormal, tiny, -tiny]}]


def _huge_rungs(limits):
    # fp16's max/16 overflows nothing a kernel sums in fp32; fp32's and bf16's max/2^24 lets a sum of
    # up to 2^20 of them overflow in no order, where max/16 would overflow in some orders and not in
    # the reference's: a verdict on the summation order, not on the kernel.
    shift = 4 if limits["max"] < 1e6 else 24
    big = limits["max"] / 2 ** shift
    return [{"what": "huge values (one element in 8 set to +-%s (max/2^%d) or +-inf)" % (number(big), shift),
             "specials": [big, -big, math.inf, -math.inf], "follows_magnitude": True},
            {"what": "huge values (one element in 8 set to +-%s (max/2^%d))" % (number(big), shift),
             "specials": [big, -big], "follows_magnitude": True},
            {"what": "huge values (one element in 8 set to +-inf)", "specials": [math.inf, -math.inf],
             "follows_magnitude": True}]


# The edge-case stage's inputs beyond what get_inputs() draws (KernelBench's are mostly torch.rand,
# all >= 0, so a copy passes as ReLU there). Each recipe is a ladder of rungs, boldest first: prepare
# takes the first rung whose reference, rounded to the dtype, is finite everywhere (a log meets no
# negative input, an exp no huge one), and get_inputs() itself when none is. Float inputs only, kept
# within a range the spec declares for them; parameters, buffers and int64 inputs stay as drawn.
# Where a rung makes values large, the check's atol follows the output's magnitude
# (absolute_tolerance): a sum of huge terms keeps their rounding, which any correct order moves.
EDGE_INPUTS = {
    "signed": lambda limits: [{"what": "signed (get_inputs() with a random sign per element)", "signs": True}],
    "zeros": lambda limits: [
        {"what": "zeros (one element in 4 set to +-0, the others with a random sign)", "zeros": 0.25, "signs": True},
        {"what": "zeros (one element in 4 set to +-0)", "zeros": 0.25}],
    "magnitudes": _magnitude_rungs,
    "tiny": _tiny_rungs,
    "huge": _huge_rungs,
}

# Largest finite value, smallest normal and machine epsilon of each dtype (torch.finfo's).
DTYPE_LIMITS = {"fp32": {"max": 3.4028234663852886e38, "tiny": 2.0 ** -126, "eps": 2.0 ** -23},
                "fp16": {"max": 65504.0, "tiny": 2.0 ** -14, "eps": 2.0 ** -10},
                "bf16": {"max": 3.3895313892515355e38, "tiny": 2.0 ** -126, "eps": 2.0 ** -7}}


def overflow_threshold(dtype):
    """The magnitude from which a value rounds to infinity in `dtype` (round to nearest even): its
    largest finite value plus half a unit in its last place (65520 in fp16)."""
    limits = DTYPE_LIMITS[dtype]
    _, exponent = math.frexp(limits["max"])
    return limits["max"] + math.ldexp(limits["eps"] / 2, exponent - 1)


def is_out_of_memory(e):
    """An exception that says the GPU (or the host) ran out of memory: torch's OutOfMemoryError,
    Python's MemoryError, or a CUDA, cuBLAS or cuDNN allocation failure in its text. The harness's
    limit, never the candidate's fault."""
    if isinstance(e, MemoryError) or any(c.__name__ == "OutOfMemoryError" for c in type(e).__mro__):
        return True
    text = str(e)
    return any(s in text for s in ("out of memory", "CUDA_ERROR_OUT_OF_MEMORY", "CUBLAS_STATUS_ALLOC_FAILED",
                                   "CUDNN_STATUS_ALLOC_FAILED"))


def constant_output_message(name, tally, tolerance):
    """The message of an output that holds one value where the reference holds several: all zeros
    (or any constant) can be within an absolute tolerance of an output whose values are all small,
    which is how KernelBench's allclose passes it. None when the output varies or the reference
    does not (by more than the tolerance relative to its magnitude)."""
    if tally.elements < 2 or tally.got_nan or tally.got_low is None or tally.got_low != tally.got_high:
        return None
    if tally.expected_low is None or tally.expected_high - tally.expected_low <= tolerance * tally.expected_absmax:
        return None
    return ("output %s: every one of its %d elements is %s where the reference ranges from %s to %s: a constant "
            "output never passes where the reference is not constant"
            % (name, tally.elements, number(tally.got_low), number(tally.expected_low), number(tally.expected_high)))


class Tally:
    """What the chunks of one output add up to: the elements out of the verdict's tolerance (and
    the worst of them), whether any is out of KernelBench's, the largest absolute error (None once
    one is not finite), and the ranges of the output and of the reference's finite values."""

    def __init__(self):
        self.elements = 0
        self.bad = 0
        self.kernelbench_bad = False
        self.max_abs_error = 0.0
        self.worst = None          # (excess over the tolerance, flat index, got, expected)
        self.got_nan = False
        self.got_low = self.got_high = None
        self.expected_low = self.expected_high = None
        self.expected_absmax = 0.0

    def add(self, elements, bad, kernelbench_bad, max_abs_error, worst, got_range, expected_range):
        """One chunk: `max_abs_error` None when one of its errors is not finite; `worst` as above with
        its index in the whole output, or None; `got_range` (low, high), NaN when the chunk holds a
        NaN; `expected_range` (low, high, largest magnitude) of its finite values, or None."""
        self.elements += elements
        self.bad += bad
        self.kernelbench_bad = self.kernelbench_bad or kernelbench_bad
        if max_abs_error is None or self.max_abs_error is None:
            self.max_abs_error = None
        else:
            self.max_abs_error = max(self.max_abs_error, max_abs_error)
        if worst is not None and (self.worst is None or worst[0] > self.worst[0]):
            self.worst = worst  # strictly larger: the first of equal ones stays, as argmax's
        low, high = got_range
        if math.isnan(low) or math.isnan(high):
            self.got_nan = True
        elif self.got_low is None:
            self.got_low, self.got_high = low, high
        else:
            self.got_low, self.got_high = min(self.got_low, low), max(self.got_high, high)
        if expected_range is not None:
            low, high, absmax = expected_range
            self.expected_low = low if self.expected_low is None else min(self.expected_low, low)
            self.expected_high = high if self.expected_high is None else max(self.expected_high, high)
            self.expected_absmax = max(self.expected_absmax, absmax)

    def judge(self, name, shape, tolerance, atol, verdict):
        """Folds this output into the check's verdict: the first failing output names itself."""
        if self.max_abs_error is None:
            verdict["max_abs_error"] = None
        elif verdict["max_abs_error"] is not None:
            verdict["max_abs_error"] = max(verdict["max_abs_error"], self.max_abs_error)
        constant = constant_output_message(name, self, tolerance)
        if self.kernelbench_bad or constant:
            verdict["kernelbench_pass"] = False
        if not verdict["pass"]:
            return
        if self.bad:
            _, flat, got, expected = self.worst
            verdict["pass"] = False
            verdict["message"] = mismatch_message(name, self.bad, self.elements, unravel(flat, shape), got, expected,
                                                  tolerance, atol)
        elif constant:
            verdict["pass"] = False
            verdict["message"] = constant


def chunk_bounds(count, chunk):
    """(start, end) of each chunk of `chunk` elements over `count` elements, in order."""
    return [(start, min(count, start + chunk)) for start in range(0, count, chunk)]


def element_passes(got, reference, expected, tolerance, atol, overflow):
    """The verdict's rule for one element, as compare_chunk applies it to a whole chunk: `expected` is
    the fp32 `reference` rounded to the output's dtype (what PyTorch returns in it). Equal values or
    NaN where NaN is expected pass; finite ones within atol + tolerance * |expected|. Where the
    reference lies within tolerance of the dtype's overflow threshold (`overflow`), either side of
    it is right: an infinity of the reference's sign, or a finite value within tolerance of the
    unrounded reference where the rounded one is infinite."""
    if got == expected or (math.isnan(got) and math.isnan(expected)):
        return True
    if math.isfinite(expected) and math.isfinite(got):
        return abs(got - expected) <= atol + tolerance * abs(expected)
    if not math.isfinite(reference):
        return False
    if math.isinf(got):
        return (got > 0) == (reference > 0) and abs(reference) * (1 + tolerance) + atol >= overflow
    return math.isinf(expected) and math.isfinite(got) and abs(got - reference) <= atol + tolerance * abs(reference)


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


# ---- torch ------------------------------------------------------------------------------------

TORCH_DTYPES = {}
# Where the reference runs: the worker's GPU. A test of prepare and check on the CPU sets "cpu".
DEVICE = "cuda"
DTYPE_NAMES = {}   # torch's dtypes back to ours


def setup_torch():
    global torch
    import torch as t
    torch = t
    TORCH_DTYPES.update(fp32=torch.float32, fp16=torch.float16, bf16=torch.bfloat16)
    DTYPE_NAMES.update({v: k for k, v in TORCH_DTYPES.items()})
    # The reference is exact fp32: TF32 would make it as loose as the kernels it judges.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def type_name(t):
    if t.is_floating_point():
        return "float"
    return "int64" if t.dtype == torch.int64 else str(t.dtype).replace("torch.", "")


# A check walks an output in chunks of this many elements: its float64 temporaries take a few hundred
# MiB whatever the output's size (KernelBench's Softplus is 6.4 GB an fp32 tensor).
CHUNK_ELEMENTS = 1 << 24
# Cached memory past this goes back to the driver after a check or a baseline.
RELEASE_BYTES = 1 << 30


def bytes_equal(a, b):
    """Two flat uint8 tensors of one length hold the same bytes, compared a chunk at a time."""
    chunk = CHUNK_ELEMENTS * 8
    return all(torch.equal(a[i:j], b[i:j]) for i, j in chunk_bounds(a.numel(), chunk))


def synchronize():
    """Waits for the device's work: the kernel's launch before a check reads the pool."""
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def same_storage(a, b):
    """Two tensors that share memory (one a view of the other, or the same tensor)."""
    return isinstance(a, torch.Tensor) and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def all_finite(reference, out_dtype):
    """Every element of the flat `reference`, rounded to `out_dtype`, is finite."""
    return all(bool(torch.isfinite(reference[i:j].to(out_dtype)).all())
               for i, j in chunk_bounds(reference.numel(), CHUNK_ELEMENTS))


def finite_rms(reference):
    """The root mean square of the flat `reference`'s finite elements (0 when none is)."""
    total, count = 0.0, 0
    for i, j in chunk_bounds(reference.numel(), CHUNK_ELEMENTS):
        r = reference[i:j].double()
        finite = torch.isfinite(r)
        total += float(torch.where(finite, r, torch.zeros_like(r)).pow(2).sum())
        count += int(finite.sum())
    return math.sqrt(total / count) if count else 0.0


def compare_output(got, reference, out_dtype, tolerance, atol, kernelbench_tolerance=None, kernelbench_reference=None):
    """The Tally of a flat output against the flat fp32 reference, chunk by chunk; KernelBench's
    rule at its tolerance (the dtype's, when not given) against `kernelbench_reference` (computed
    as its checker computes it, TF32 in convolutions) or, where it is None, the same reference."""
    tally = Tally()
    name = DTYPE_NAMES[out_dtype]
    overflow = overflow_threshold(name)
    if kernelbench_tolerance is None:
        kernelbench_tolerance = KERNELBENCH_TOLERANCES[name]
    for i, j in chunk_bounds(got.numel(), CHUNK_ELEMENTS):
        theirs = None if kernelbench_reference is None else kernelbench_reference[i:j]
        elements, bad, kb_bad, max_abs_error, worst, got_range, expected_range = compare_chunk(
            got[i:j], reference[i:j], out_dtype, tolerance, atol, overflow, kernelbench_tolerance, theirs)
        if worst is not None:
            worst = (worst[0], worst[1] + i, worst[2], worst[3])
        tally.add(elements, bad, kb_bad, max_abs_error, worst, got_range, expected_range)
    return tally


def compare_chunk(got, reference, out_dtype, tolerance, atol, overflow, kernelbench_tolerance, kernelbench_reference=None):
    """One chunk judged by element_passes's rule at the verdict's tolerance and at KernelBench's
    (against `kernelbench_reference` where given): what Tally.add takes, the worst's index within
    the chunk."""
    g = got.double()

    def passes_against(reference, rtol, a):
        r = reference.double()
        e = reference.to(out_dtype).double()  # what PyTorch returns in the output's dtype
        same = (g == e) | (torch.isnan(g) & torch.isnan(e))  # equal infinities, NaN where NaN is expected
        diff = torch.where(same, torch.zeros_like(g), (g - e).abs())
        both_finite = torch.isfinite(g) & torch.isfinite(e)
        r_finite = torch.isfinite(r)
        ok = same | (both_finite & (diff <= a + rtol * e.abs()))
        # Either side of the overflow threshold is right where the reference is within tolerance of it.
        ok |= torch.isinf(g) & r_finite & (torch.sign(g) == torch.sign(r)) & (r.abs() * (1 + rtol) + a >= overflow)
        ok |= torch.isinf(e) & r_finite & torch.isfinite(g) & ((g - r).abs() <= a + rtol * r.abs())
        return ok, diff, e

    ok, diff, e = passes_against(reference, tolerance, atol)
    bad = ~ok
    count = int(bad.sum())
    theirs = reference if kernelbench_reference is None else kernelbench_reference
    kb_bad = bool((~passes_against(theirs, kernelbench_tolerance, kernelbench_tolerance)[0]).any())
    max_abs_error = float(diff.max()) if bool(torch.isfinite(diff).all()) else None
    worst = None
    if count:
        excess = torch.where(bad, diff - tolerance * e.abs(), torch.full_like(diff, -math.inf))
        excess = torch.where(torch.isnan(excess), torch.full_like(excess, math.inf), excess)
        at = int(excess.argmax())
        worst = (float(excess[at]), at, float(g[at]), float(e[at]))
    finite = torch.isfinite(e)
    expected_range = None
    if bool(finite.any()):
        expected_range = (float(torch.where(finite, e, torch.full_like(e, math.inf)).min()),
                          float(torch.where(finite, e, torch.full_like(e, -math.inf)).max()),
                          float(torch.where(finite, e.abs(), torch.zeros_like(e)).max()))
    return g.numel(), count, kb_bad, max_abs_error, worst, (float(g.min()), float(g.max())), expected_range


def compare_int_output(got, reference):
    """The Tally of a flat int64 output (an index: argmax, argmin) against the reference: every
    element equal, under our rule and KernelBench's alike."""
    tally = Tally()
    for i, j in chunk_bounds(got.numel(), CHUNK_ELEMENTS):
        g, r = got[i:j], reference[i:j].to(torch.int64)
        bad = g != r
        count = int(bad.sum())
        diff = (g - r).abs()
        worst = None
        if count:
            at = int(bad.nonzero()[0][0])
            worst = (float(diff[at]), i + at, float(g[at]), float(r[at]))
        tally.add(int(g.numel()), count, count > 0, float(diff.max()) if g.numel() else 0.0, worst,
                  (float(g.min()), float(g.max())), (float(r.min()), float(r.max()), float(r.abs().max())))
    return tally


def tensor_attributes(model):
    """(dotted name, tensor) of the tensors the model or a submodule holds as plain attributes,
    neither parameters nor buffers (an RNN's initial hidden state set in __init__): the kernel
    takes them as buffers, after named_buffers()."""
    out = []
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
                out.append(((prefix + "." if prefix else "") + name, value))
    return out


def uses_cudnn(model):
    """Whether the model has layers cuDNN computes (convolutions, recurrent layers), whose results
    TF32 changes: only there KernelBench's reference differs from ours."""
    return any(isinstance(m, (torch.nn.modules.conv._ConvNd, torch.nn.RNNBase)) for m in model.modules())


class ModuleState:
    """The values the kernel got for the model's buffers and tensor attributes, put back before
    every forward: in training mode a forward changes BatchNorm's running statistics, and an RNN
    may replace its hidden state, so that without this each call would compute another function."""

    def __init__(self, model, buffers):
        self.model = model
        self.saved = [(name, value.float() if value.is_floating_point() else value.clone()) for _, name, value in buffers]

    def restore(self):
        buffers = dict(self.model.named_buffers())
        for name, value in self.saved:
            if name in buffers:
                buffers[name].copy_(value)
                continue
            owner_path, _, attribute = name.rpartition(".")
            owner = self.model.get_submodule(owner_path) if owner_path else self.model
            setattr(owner, attribute, value.clone())


def edge_values(value, rung, low=None, high=None):
    """A float input (any dtype) changed as an edge rung says, in fp32, from torch's generator (seeded
    by build() from the CSPRNG): times 2^k ("exponent": k uniform in [-e, e] per element), a random
    sign per element ("signs"), a share of elements set to +-0 ("zeros"), one element in 8 replaced
    by one of the values "specials" lists; then kept within [low, high] where the spec declares them."""
    x = value.float()
    device = x.device

    def uniform():
        return torch.rand(x.shape, device=device)
    if "exponent" in rung:
        e = rung["exponent"]
        x = x * torch.exp2(torch.randint(-e, e + 1, x.shape, device=device).float())
    if rung.get("signs"):
        x = torch.where(uniform() < 0.5, -x, x)
    if "zeros" in rung:
        zero = torch.where(uniform() < 0.5, torch.zeros_like(x), torch.full_like(x, -0.0))
        x = torch.where(uniform() < rung["zeros"], zero, x)
    if "specials" in rung:
        specials = torch.tensor(rung["specials"], dtype=torch.float32, device=device)
        pick = specials[torch.randint(0, specials.numel(), x.shape, device=device)]
        x = torch.where(uniform() < 0.125, pick, x)
    if low is not None or high is not None:
        x = x.clamp(min=low, max=high)
    return x


class CudaArray:
    """Device memory at `ptr` as torch.as_tensor takes it (no copy, no ownership)."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None}


class Driver:
    """The few libcuda calls torch does not offer: opening another process's allocation."""

    def __init__(self):
        import ctypes
        self.ctypes = ctypes
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.open_fn = getattr(self.lib, "cuIpcOpenMemHandle_v2", None) or self.lib.cuIpcOpenMemHandle

        class Handle(ctypes.Structure):
            _fields_ = [("reserved", ctypes.c_char * 64)]
        self.Handle = Handle
        self.open_fn.argtypes = [ctypes.POINTER(ctypes.c_uint64), Handle, ctypes.c_uint]
        self.lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
        self.lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]

    def check(self, r, what):
        if r != 0:
            name = self.ctypes.c_char_p()
            self.lib.cuGetErrorName(r, self.ctypes.byref(name))
            raise Failure("%s failed: %s (%d)" % (what, (name.value or b"?").decode(), r))

    def open(self, handle_bytes):
        current = self.ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(self.ctypes.byref(current)), "cuCtxGetCurrent")
        if not current.value:
            raise Failure("no CUDA context is current after torch initialised the device")
        ptr = self.ctypes.c_uint64()
        handle = self.Handle()
        self.ctypes.memmove(self.ctypes.addressof(handle), handle_bytes, 64)
        lazy_peer_access = 1
        self.check(self.open_fn(self.ctypes.byref(ptr), handle, lazy_peer_access),
                   "cuIpcOpenMemHandle (is the pool's allocation on this GPU, and from another process?)")
        return ptr.value

    def close(self, ptr):
        self.check(self.lib.cuIpcCloseMemHandle(ptr), "cuIpcCloseMemHandle")


class Server:
    def __init__(self):
        self.module = None
        self.spec = None
        self.driver = None
        self.pool_ptr = None
        self.pool = None      # the worker's pool as a uint8 tensor
        self.prepared = None  # what prepare drew, kept for check

    # -- requests

    def hello(self, req):
        index = torch.cuda.current_device()
        return {"torch": torch.__version__, "device": torch.cuda.get_device_name(index),
                "compute_capability": list(torch.cuda.get_device_capability(index))}

    def load(self, req):
        for key in ("name", "reference_source", "dims", "tensors"):
            if key not in req:
                raise Failure("load needs %r" % key)
        if DEVICE == "cuda":
            torch.cuda.set_device(int(req.get("device", 0)))
            torch.zeros(1, device="cuda")  # initialises the primary context now, not at the first draw
        import types
        module = types.ModuleType("reference_" + str(req["name"]))
        code = compile(req["reference_source"], "<reference of %s>" % req["name"], "exec")
        try:
            exec(code, module.__dict__)
        except Exception as e:
            raise Failure("the reference of %s failed to run: %s: %s" % (req["name"], type(e).__name__, e))
        for attr in ("Model", "get_inputs", "get_init_inputs"):
            if not callable(getattr(module, attr, None)):
                raise Failure("the reference of %s has no %s (KernelBench's format: class Model, "
                              "get_inputs(), get_init_inputs())" % (req["name"], attr))
        self.module, self.spec, self.prepared = module, req, None
        return {}

    def map_pool(self, req):
        if self.module is None:
            raise Failure("map_pool before load")
        handle = bytes.fromhex(req["handle"])
        if len(handle) != 64:
            raise Failure("the pool handle is %d bytes; a CUipcMemHandle has 64" % len(handle))
        if self.driver is None:
            self.driver = Driver()
        if self.pool_ptr is not None:
            self.pool, self.prepared = None, None
            self.driver.close(self.pool_ptr)
            self.pool_ptr = None
        self.pool_ptr = self.driver.open(handle)
        self.pool = torch.as_tensor(CudaArray(self.pool_ptr, int(req["bytes"])), device="cuda")
        return {}

    def build(self, shape, dtype):
        """Model and inputs at `shape` under a fresh seed: (model, inputs, constants, dims). The
        module's source runs again with the dims and [fixed] globals assigned, so that globals
        computed from them follow; the model is left in the mode it is built in (training), as
        KernelBench calls it. `inputs` are get_inputs()' tensors, `constants` its numbers by position."""
        if self.module is None:
            raise Failure("prepare before load")
        if dtype not in TORCH_DTYPES:
            raise Failure("dtype %r is not one of fp32, fp16, bf16" % dtype)
        dims = shape_names(self.spec["dims"], shape, self.spec.get("fixed"))
        overrides = size_globals(self.spec["dims"], shape, self.spec.get("fixed"))
        try:
            namespace = module_at(self.spec["reference_source"], "<reference of %s>" % self.spec["name"], overrides)
        except Exception as e:
            raise Failure("the reference of %s failed to run at shape %s: %s: %s"
                          % (self.spec["name"], json.dumps(shape), type(e).__name__, e))
        seed = secrets.randbits(63)  # the OS's CSPRNG; never the clock, never sent
        torch.manual_seed(seed)
        import random
        random.seed(secrets.randbits(63))
        with torch.device(DEVICE):
            model = namespace["Model"](*namespace["get_init_inputs"]())
            drawn = list(namespace["get_inputs"]())
        inputs, constants = [], {}
        for i, x in enumerate(drawn):
            if isinstance(x, torch.Tensor):
                inputs.append(x.to(DEVICE))
            elif isinstance(x, (int, float)):
                constants[i] = x  # a number get_inputs() passes to forward: no argument of the kernel
            else:
                raise Failure("get_inputs() returned a %s at position %d: the inputs of a user type are tensors "
                              "(or numbers)" % (type(x).__name__, i))
        return model, inputs, constants, dims

    def module_tensors(self, model, inputs):
        """(role, torch name, tensor) for every tensor the kernel takes, in the spec's order: the
        inputs, named_parameters(), named_buffers(), then tensors held as plain attributes (an
        RNN's initial hidden state), which the kernel takes as buffers."""
        spec_inputs = [t["name"] for t in self.spec["tensors"] if t["role"] == "input"]
        out = [("input", spec_inputs[i] if i < len(spec_inputs) else "input %d" % i, x)
               for i, x in enumerate(inputs)]
        out += [("parameter", n, p) for n, p in model.named_parameters()]
        out += [("buffer", n, b) for n, b in model.named_buffers()]
        out += [("buffer", n, b) for n, b in tensor_attributes(model)]
        return out

    def prepare(self, req):
        if self.pool is None:
            raise Failure("prepare before map_pool")
        self.prepared = None  # the last launch's copies go before new ones are drawn: one set at a time
        dtype = req["dtype"]
        scale = input_scale(req)
        ladder = edge_ladder(req, dtype)
        model, inputs, constants, dims = self.build(req["shape"], dtype)
        found = self.module_tensors(model, inputs)
        del inputs
        described = [{"role": r, "name": n, "type": type_name(t), "shape": list(t.shape)} for r, n, t in found]
        mismatch = check_tensors(self.spec["tensors"], described, dims)
        if mismatch:
            raise Failure("the reference of %s at shape %s does not match its spec: %s"
                          % (self.spec["name"], json.dumps(req["shape"]), mismatch))
        for t, (role, name, x) in zip(self.spec["tensors"], found):
            if role == "input" and t["type"] == "int64" and x.numel():
                mismatch = check_int_range(t, int(x.min()), int(x.max()), dims)
                if mismatch:
                    raise Failure("the reference of %s at shape %s: %s"
                                  % (self.spec["name"], json.dumps(req["shape"]), mismatch))
        check_layout(self.spec["tensors"], req["layout"], dims, dtype, self.pool.numel())
        with torch.no_grad():
            values = [self.rounded(role, t, dtype, scale) for role, _, t in found]
            for (role, _, t), value in zip(found, values):
                if role != "input":
                    t.copy_(value.float() if t.is_floating_point() else value)  # the rounded values
            state = ModuleState(model, [(role, name, value) for (role, name, _), value in zip(found, values)
                                        if role == "buffer"])
            rung = None
            if ladder is not None:
                rung, values = self.edge_inputs(model, found, values, ladder, dtype, constants, state)
            # No byte of an earlier launch survives in the pool, and 0xFF is NaN in every float dtype:
            # an output element the candidate leaves unwritten fails.
            self.pool.fill_(0xFF)
            kept = []
            for (role, name, _), value, slot in zip(found, values, req["layout"]):
                self.region(slot).copy_(value.reshape(-1).view(torch.uint8))
                kept.append((role, name, value))
        del found, values
        synchronize()
        follows_magnitude = scale > 1 or bool(rung and rung.get("follows_magnitude"))
        self.prepared = {"model": model, "kept": kept, "dims": dims, "dtype": dtype, "layout": req["layout"],
                         "follows_magnitude": follows_magnitude, "constants": constants, "state": state}
        if ladder is None:
            return {}
        return {"inputs": rung["what"] if rung else "get_inputs() as drawn (no rung of the %s recipe gives a finite "
                                                    "reference)" % req["inputs"]}

    @staticmethod
    def rounded(role, t, dtype, scale):
        """A tensor of the module as the kernel gets it: an input scaled by `scale`, floats rounded to
        `dtype`, contiguous and ours alone."""
        value = t.detach()
        if role == "input" and scale != 1 and value.is_floating_point():
            value = value * scale  # before the rounding to dtype: the kernel and the reference see the same
        value = value.to(TORCH_DTYPES[dtype]) if value.is_floating_point() else value
        return value.clone(memory_format=torch.contiguous_format)

    def edge_inputs(self, model, found, values, ladder, dtype, constants, state):
        """The first rung of an edge recipe whose reference, rounded to `dtype`, is finite: (rung, the
        values with its float inputs), or (None, `values`) when none is. Parameters, buffers and
        int64 inputs stay as drawn. The draws come from the generator build() seeded from the CSPRNG."""
        for rung in ladder:
            trial = [edge_values(v, rung, spec.get("low"), spec.get("high")).to(v.dtype)
                     if role == "input" and v.is_floating_point() else v
                     for spec, (role, _, _), v in zip(self.spec["tensors"], found, values)]
            # Copies: a forward that works in place must not change the values the kernel will get.
            outputs = self.forward(model, [v.clone() for (role, _, _), v in zip(found, trial) if role == "input"],
                                   constants, state)
            finite = all(all_finite(o.detach().reshape(-1), TORCH_DTYPES[dtype]) for o in outputs)
            del outputs
            if finite:
                return rung, trial
        return None, values

    @staticmethod
    def forward(model, inputs, constants, state, kernelbench_tf32=False):
        """The module's outputs, as a list, for inputs in the dtype under test (floats upcast to fp32:
        the reference is full precision whatever the kernel's dtype), get_inputs()' numbers put back
        at their places. The buffers are put back first (a forward in training mode changes
        BatchNorm's running statistics): every call computes the same function. TF32 stays off
        unless `kernelbench_tf32`, which computes as KernelBench's checker does: PyTorch's defaults,
        TF32 in cuDNN's convolutions, none in matmuls."""
        inputs = [v.float() if v.is_floating_point() and v.dtype != torch.float32 else v for v in inputs]
        arguments = list(inputs)
        for position in sorted(constants):
            arguments.insert(position, constants[position])
        state.restore()
        try:
            torch.backends.cudnn.allow_tf32 = kernelbench_tf32
            with torch.no_grad():
                result = model(*arguments)
        finally:
            torch.backends.cudnn.allow_tf32 = False
        return list(result) if isinstance(result, (tuple, list)) else [result]

    def region(self, slot):
        return self.pool[slot["offset"]:slot["offset"] + slot["bytes"]]

    def check(self, req):
        p = self.prepared
        if p is None:
            raise Failure("check before a successful prepare")
        try:
            return self.judge(p)
        finally:
            self.release()

    def judge(self, p):
        synchronize()
        for (role, name, value), slot in zip(p["kept"], p["layout"]):
            if not bytes_equal(self.region(slot), value.reshape(-1).view(torch.uint8)):
                return {"pass": False, "kernelbench_pass": False, "max_abs_error": None,
                        "message": "the kernel wrote into its %s %s: inputs, parameters and buffers are "
                                   "read-only" % (role, name)}
        # The kept fp32 and int64 inputs go to forward as they are, with no copy of the size of the
        # input; a forward that works in place changes them, and they are put back from the pool,
        # which holds their bytes unchanged (checked above).
        kept_inputs = [(value, slot) for (role, _, value), slot in zip(p["kept"], p["layout"]) if role == "input"]
        expected = self.forward(p["model"], [v for v, _ in kept_inputs], p["constants"], p["state"])
        expected = self.put_back_inputs(kept_inputs, expected)
        kernelbench_expected = None
        if uses_cudnn(p["model"]):
            kernelbench_expected = self.put_back_inputs(kept_inputs, self.forward(
                p["model"], [v for v, _ in kept_inputs], p["constants"], p["state"], kernelbench_tf32=True))
        outputs = [t for t in self.spec["tensors"] if t["role"] == "output"]
        if len(expected) != len(outputs):
            raise Failure("forward returned %d outputs where the spec declares %d" % (len(expected), len(outputs)))
        tolerance = float(self.spec.get("tolerance", {}).get(p["dtype"], 0))
        if tolerance <= 0:
            raise Failure("load gave no tolerance for %s" % p["dtype"])
        kernelbench_tolerance = KERNELBENCH_TOLERANCES[p["dtype"]]
        verdict = {"pass": True, "kernelbench_pass": True, "message": "", "max_abs_error": 0.0}
        slots = p["layout"][len(p["kept"]):]
        for i, (t, slot) in enumerate(zip(outputs, slots)):
            shape = tensor_shape(t["shape"], p["dims"])
            if list(expected[i].shape) != shape:
                raise Failure("output %s has shape %s in the module; the spec's is %s here"
                              % (t["name"], list(expected[i].shape), shape))
            reference = expected[i].detach().reshape(-1)
            expected[i] = None  # the reference's output goes as soon as it is judged
            theirs = None
            if kernelbench_expected is not None:
                theirs = kernelbench_expected[i].detach().reshape(-1)
                kernelbench_expected[i] = None
            if t.get("type") == "int64":   # an index (argmax): exact, under both rules
                tally = compare_int_output(self.region(slot).view(torch.int64), reference)
                tally.judge(t["name"], shape, 0.0, 0.0, verdict)
                continue
            out_dtype = TORCH_DTYPES[p["dtype"]]
            got = self.region(slot).view(out_dtype)
            rms = finite_rms(reference) if p["follows_magnitude"] else 0.0
            atol = absolute_tolerance(tolerance, p["follows_magnitude"], rms)
            tally = compare_output(got, reference, out_dtype, tolerance, atol, kernelbench_tolerance, theirs)
            del reference, theirs
            tally.judge(t["name"], shape, tolerance, atol, verdict)
        return verdict

    def put_back_inputs(self, kept_inputs, expected):
        """The kept fp32 and int64 inputs put back from the pool where a forward that works in
        place changed them (the pool holds their bytes unchanged, checked before); an output that
        is such an input itself (relu_(x)) is kept aside first."""
        p = self.prepared
        for value, slot in kept_inputs:
            if value.dtype in (torch.float32, torch.int64) and not bytes_equal(self.region(slot),
                                                                                 value.reshape(-1).view(torch.uint8)):
                expected = [o.clone() if same_storage(o, value) else o for o in expected]
                value.reshape(-1).view(torch.uint8).copy_(self.region(slot))
        return expected

    def free(self, req):
        """Drops the last launch's copies and gives every cached block back: the worker is done with
        this type for now, and another type's process or pool may need the memory."""
        self.recover()
        return {}

    def recover(self):
        """After running out of memory: drops the last launch's copies and every cached block."""
        self.prepared = None
        if DEVICE == "cuda":
            torch.cuda.empty_cache()

    @staticmethod
    def release():
        """Gives the memory torch's allocator keeps cached back to the driver when it is more than a
        little: the worker's pool and the next type's reference need it, and a check of a large
        output leaves gigabytes of temporaries cached."""
        if DEVICE == "cuda" and torch.cuda.memory_reserved() - torch.cuda.memory_allocated() > RELEASE_BYTES:
            torch.cuda.empty_cache()

    def baseline(self, req):
        self.prepared = None  # the last launch's copies: the baseline draws its own
        try:
            return self.time_module(req)
        finally:
            self.release()

    def time_module(self, req):
        repetitions = max(1, int(req.get("repetitions", 20)))
        model, tensors, constants, _ = self.build(req["shape"], req["dtype"])
        dtype = TORCH_DTYPES[req["dtype"]]
        model = model.to(dtype)
        inputs = [x.to(dtype) if x.is_floating_point() else x for x in tensors]
        for position in sorted(constants):
            inputs.insert(position, constants[position])
        # Timed as a user runs it and as KernelBench times it: PyTorch's defaults (TF32 in cuDNN).
        torch.backends.cudnn.allow_tf32 = True
        try:
            return self.time_eager_and_compiled(req, model, inputs, repetitions)
        finally:
            torch.backends.cudnn.allow_tf32 = False

    def time_eager_and_compiled(self, req, model, inputs, repetitions):
        flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        reply = {"eager_us": self.time(model, inputs, flush, repetitions)}
        if req.get("compile", True) is False:  # torch.compile autotunes for minutes: a caller may skip it
            reply["compile_us"] = None
            return reply
        try:
            compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
            reply["compile_us"] = self.time(compiled, inputs, flush, repetitions)
        except Exception as e:
            traceback.print_exc()
            reply["compile_us"] = None
            reply["compile_error"] = "torch.compile failed%s: %s: %s" % (
                " (out of GPU memory: the harness's limit, not the candidate's)" if is_out_of_memory(e) else "",
                type(e).__name__, str(e)[:2000])
        return reply

    @staticmethod
    def time(model, inputs, flush, repetitions):
        """The median of `repetitions` runs in µs, the L2 flushed before each, after warm-up runs."""
        times = []
        with torch.no_grad():
            for _ in range(3):
                model(*inputs)
            for _ in range(repetitions):
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                model(*inputs)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1000.0)
        return median(times)


def failure_reply(op, e):
    """The reply to a request that raised `e`: a Failure's text, or the exception's with the
    traceback logged. Out of GPU memory is the harness's limit, never the candidate's fault: the
    reply says so and carries "harness": true."""
    if is_out_of_memory(e):
        traceback.print_exc()
        return {"ok": False, "harness": True,
                "error": "%s: the reference process ran out of memory (the harness's limit, not the "
                         "candidate's): %s: %s" % (op, type(e).__name__, str(e)[:2000])}
    if isinstance(e, Failure):
        return {"ok": False, "error": "%s: %s" % (op, e)}
    traceback.print_exc()
    return {"ok": False, "error": "%s: %s: %s (the traceback is in the reference process's log)"
                                  % (op, type(e).__name__, e)}


def reply_line(obj):
    return json.dumps(obj, allow_nan=False) + "\n"


# The requests a server answers, each by its method of that name.
OPS = ("hello", "load", "map_pool", "prepare", "check", "baseline", "free")


def serve(server, requests, out):
    for line in requests:
        if not line.strip():
            continue
        op = "?"
        try:
            try:
                req = json.loads(line)
            except ValueError as e:
                raise Failure("the request is not JSON (%s)" % e)
            if not isinstance(req, dict):
                raise Failure("the request is not a JSON object")
            op = req.get("op", "?")
            if op == "quit":
                out.write(reply_line({"ok": True}))
                out.flush()
                return
            handler = getattr(server, op, None) if op in OPS else None
            if handler is None:
                raise Failure("unknown op %r (%s, quit)" % (op, ", ".join(OPS)))
            reply = dict(handler(req), ok=True)
        except Exception as e:
            reply = failure_reply(op, e)
        if reply.get("harness"):
            recover = getattr(server, "recover", None)
            if recover:  # outside the except block: the traceback's frames, and their tensors, are gone
                recover()
        try:
            text = reply_line(reply)
        except ValueError:  # a non-finite number slipped in: say so rather than send invalid JSON
            text = reply_line({"ok": False, "error": "%s: the reply held a non-finite number" % op})
        out.write(text)
        out.flush()


def main():
    # The protocol owns the original stdout; whatever else prints (the reference's own print, a
    # library) goes to stderr, where it cannot pass for a reply.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    setup_torch()
    serve(Server(), sys.stdin, out)


if __name__ == "__main__":
    main()
