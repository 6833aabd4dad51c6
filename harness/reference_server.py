"""The reference process of a user type: a PyTorch program the worker starts beside itself on its
own GPU. It draws each launch's inputs with the problem's get_inputs() under a fresh seed, writes
them into a pool of the worker's device memory (CUDA IPC), and after the worker ran the candidate
computes the reference on its own copies and compares, all in this process: the expected values
and the seeds never enter the worker, whose memory a candidate kernel can read.

Protocol: one JSON object per line on stdin (a request, "op" naming it) and on stdout (its reply,
"ok" always; "error" when not ok). stderr is a log. The worker runs it as `python3 -I -c <text>`.
The functions above the torch section need no torch, so that a unittest can drive them."""
import json
import math
import os
import secrets
import sys
import traceback

torch = None  # imported in main(): the pure logic below is tested where there is no torch

KERNELBENCH_TOLERANCE = 1e-2
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


class Failure(Exception):
    """A request that cannot be done; its text (what failed, what to do) is the reply's error."""


# ---- pure logic -------------------------------------------------------------------------------

def c_name(torch_name):
    """The spec's name for a parameter or buffer: torch's dotted name with dots as underscores."""
    return torch_name.replace(".", "_")


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


def tensor_shape(spec_shape, dims):
    """A spec tensor's shape at one shape: each entry a dim's name or an integer literal."""
    out = []
    for entry in spec_shape:
        if isinstance(entry, str):
            if entry not in dims:
                raise Failure("the shape entry %r names no dim (dims: %s)" % (entry, ", ".join(dims)))
            out.append(dims[entry])
        else:
            out.append(int(entry))
    return out


def bound(value, dims):
    """An int64 input's low or high: an integer or a dim's name."""
    return dims[value] if isinstance(value, str) else int(value)


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
            if role != "input" and c_name(a["name"]) != t["name"]:
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


def absolute_tolerance(tolerance, scale, expected_rms):
    """The atol of a check: the spec's tolerance; for inputs scaled up (the numerical-stability
    stage), times the output's own magnitude (its root mean square, at least 1). A sum of large terms
    that cancels to a small value keeps the rounding of those terms, which the summation order of any
    correct kernel moves: seen on an H100, an fp32 GEMM + ReLU at 64x its inputs, 1.1e-4 off on an
    output of 0.038 where the reference summed in another order. What the stage is for, overflow,
    NaN and lost precision, is errors far past that."""
    if scale > 1 and math.isfinite(expected_rms):
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


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


# ---- torch ------------------------------------------------------------------------------------

TORCH_DTYPES = {}


def setup_torch():
    global torch
    import torch as t
    torch = t
    TORCH_DTYPES.update(fp32=torch.float32, fp16=torch.float16, bf16=torch.bfloat16)
    # The reference is exact fp32: TF32 would make it as loose as the kernels it judges.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def type_name(t):
    if t.is_floating_point():
        return "float"
    return "int64" if t.dtype == torch.int64 else str(t.dtype).replace("torch.", "")


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
        """Model and inputs at `shape` under a fresh seed: (model, inputs, dims)."""
        if self.module is None:
            raise Failure("prepare before load")
        if dtype not in TORCH_DTYPES:
            raise Failure("dtype %r is not one of fp32, fp16, bf16" % dtype)
        dims = dim_values(self.spec["dims"], shape)
        self.module.__dict__.update(size_globals(self.spec["dims"], shape, self.spec.get("fixed")))
        seed = secrets.randbits(63)  # the OS's CSPRNG; never the clock, never sent
        torch.manual_seed(seed)
        import random
        random.seed(secrets.randbits(63))
        with torch.device("cuda"):
            model = self.module.Model(*self.module.get_init_inputs()).eval()
            inputs = list(self.module.get_inputs())
        for i, x in enumerate(inputs):
            if not isinstance(x, torch.Tensor):
                raise Failure("get_inputs() returned a %s at position %d: the inputs of a user type are tensors"
                              % (type(x).__name__, i))
        return model, [x.cuda() for x in inputs], dims

    def module_tensors(self, model, inputs):
        """(role, torch name, tensor) for every tensor the kernel takes, in the spec's order."""
        spec_inputs = [t["name"] for t in self.spec["tensors"] if t["role"] == "input"]
        out = [("input", spec_inputs[i] if i < len(spec_inputs) else "input %d" % i, x)
               for i, x in enumerate(inputs)]
        out += [("parameter", n, p) for n, p in model.named_parameters()]
        out += [("buffer", n, b) for n, b in model.named_buffers()]
        return out

    def prepare(self, req):
        if self.pool is None:
            raise Failure("prepare before map_pool")
        dtype = req["dtype"]
        scale = input_scale(req)
        model, inputs, dims = self.build(req["shape"], dtype)
        found = self.module_tensors(model, inputs)
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
        self.prepared = None
        # No byte of an earlier launch survives in the pool, and 0xFF is NaN in every float dtype:
        # an output element the candidate leaves unwritten fails.
        self.pool.fill_(0xFF)
        kept = []
        with torch.no_grad():
            for (role, name, t), slot in zip(found, req["layout"]):
                value = t.detach()
                if role == "input" and scale != 1 and value.is_floating_point():
                    value = value * scale  # before the rounding to dtype: the kernel and the reference see the same
                value = value.to(TORCH_DTYPES[dtype]) if value.is_floating_point() else value
                value = value.clone(memory_format=torch.contiguous_format)  # ours alone
                self.region(slot).copy_(value.reshape(-1).view(torch.uint8))
                kept.append((role, name, value))
                if role != "input":
                    t.copy_(value.float() if t.is_floating_point() else value)  # the rounded values
        torch.cuda.synchronize()
        self.prepared = {"model": model, "kept": kept, "dims": dims, "dtype": dtype, "layout": req["layout"],
                         "scale": scale}
        return {}

    def region(self, slot):
        return self.pool[slot["offset"]:slot["offset"] + slot["bytes"]]

    def check(self, req):
        p = self.prepared
        if p is None:
            raise Failure("check before a successful prepare")
        torch.cuda.synchronize()
        tensors = self.spec["tensors"]
        for (role, name, value), slot in zip(p["kept"], p["layout"]):
            if not torch.equal(self.region(slot), value.reshape(-1).view(torch.uint8)):
                return {"pass": False, "kernelbench_pass": False, "max_abs_error": None,
                        "message": "the kernel wrote into its %s %s: inputs, parameters and buffers are "
                                   "read-only" % (role, name)}
        # Copies: a forward that works in place must not change what a later check compares with.
        inputs = [v.to(torch.float32, copy=True) if v.is_floating_point() else v.clone()
                  for role, _, v in p["kept"] if role == "input"]
        with torch.no_grad():
            result = p["model"](*inputs)
        expected = list(result) if isinstance(result, (tuple, list)) else [result]
        outputs = [t for t in tensors if t["role"] == "output"]
        if len(expected) != len(outputs):
            raise Failure("forward returned %d outputs where the spec declares %d" % (len(expected), len(outputs)))
        tolerance = float(self.spec.get("tolerance", {}).get(p["dtype"], 0))
        if tolerance <= 0:
            raise Failure("load gave no tolerance for %s" % p["dtype"])
        verdict = {"pass": True, "kernelbench_pass": True, "message": "", "max_abs_error": 0.0}
        slots = p["layout"][len(p["kept"]):]
        for t, exp, slot in zip(outputs, expected, slots):
            shape = tensor_shape(t["shape"], p["dims"])
            if list(exp.shape) != shape:
                raise Failure("output %s has shape %s in the module; the spec's is %s here"
                              % (t["name"], list(exp.shape), shape))
            got = self.region(slot).view(TORCH_DTYPES[p["dtype"]]).reshape(shape)
            finite = exp.detach().double()[torch.isfinite(exp)]
            rms = float(finite.pow(2).mean().sqrt()) if finite.numel() else 0.0
            self.compare(t["name"], got, exp, tolerance, verdict, absolute_tolerance(tolerance, p["scale"], rms))
        return verdict

    def compare(self, name, got, exp, tolerance, verdict, atol):
        got, exp = got.double(), exp.detach().double()
        diff = (got - exp).abs()
        finite_diff = torch.where(torch.isfinite(diff), diff, torch.zeros_like(diff))
        if not bool(torch.isfinite(diff).all()):
            verdict["max_abs_error"] = None
        elif verdict["max_abs_error"] is not None:
            verdict["max_abs_error"] = max(verdict["max_abs_error"], float(finite_diff.max()) if diff.numel() else 0.0)
        same = (got == exp) | (torch.isnan(got) & torch.isnan(exp))  # equal infinities, NaN where NaN is expected
        kb_bad = ~((diff <= KERNELBENCH_TOLERANCE + KERNELBENCH_TOLERANCE * exp.abs()) | same)
        if bool(kb_bad.any()):
            verdict["kernelbench_pass"] = False
        bad = ~((diff <= atol + tolerance * exp.abs()) | same)
        count = int(bad.sum())
        if count == 0 or not verdict["pass"]:
            return
        excess = torch.where(bad, diff - tolerance * exp.abs(), torch.full_like(diff, -math.inf))
        excess = torch.where(torch.isnan(excess), torch.full_like(excess, math.inf), excess)
        worst = int(excess.reshape(-1).argmax())
        verdict["pass"] = False
        verdict["message"] = mismatch_message(name, count, got.numel(), unravel(worst, list(got.shape)),
                                              float(got.reshape(-1)[worst]), float(exp.reshape(-1)[worst]), tolerance,
                                              atol)

    def baseline(self, req):
        repetitions = max(1, int(req.get("repetitions", 20)))
        model, inputs, _ = self.build(req["shape"], req["dtype"])
        dtype = TORCH_DTYPES[req["dtype"]]
        model = model.to(dtype)
        inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
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
            reply["compile_error"] = "torch.compile failed: %s: %s" % (type(e).__name__, str(e)[:2000])
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


def reply_line(obj):
    return json.dumps(obj, allow_nan=False) + "\n"


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
            handler = {"hello": server.hello, "load": server.load, "map_pool": server.map_pool,
                       "prepare": server.prepare, "check": server.check, "baseline": server.baseline}.get(op)
            if handler is None:
                raise Failure("unknown op %r (hello, load, map_pool, prepare, check, baseline, quit)" % op)
            reply = dict(handler(req), ok=True)
        except Failure as e:
            reply = {"ok": False, "error": "%s: %s" % (op, e)}
        except Exception as e:
            traceback.print_exc()
            reply = {"ok": False, "error": "%s: %s: %s (the traceback is in the reference process's log)"
                                           % (op, type(e).__name__, e)}
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
