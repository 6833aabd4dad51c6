"""autokernel profile --modules: names every nn.Module forward, and the rotary helpers a model
defines as functions, with an NVTX range, so that `autokernel profile` can add a module's kernels
up to one candidate. Loaded through PYTHONPATH as sitecustomize: the program's code is unchanged.

A range reads  ak.module:<Class> sizes=[[...], ...] dtype=fp16 [linear=name:in x out,...]
                  class=<module>:<qualname> params=N buffers=N leaf=0|1 init=yes|no|differs|args|untried
                  [kwargs=<json>] train=0|1 args=N
            or ak.function:apply_rotary_pos_emb sizes=[[...], ...] dtype=fp16 layout=1
The fields after the class say what a reference of the module needs (`autokernel plan --user-types`).
The format is parsed by daemon/profile/module_attribution.cpp; change both together."""
import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import io
import json
import os
import sys
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
# Functions that are a kernel type of their own although no module wraps them.
_FUNCTIONS = ("apply_rotary_pos_emb",)
_DTYPES = {"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32"}


def _label(torch, kind, name, args, extra=""):
    sizes, dtype = [], ""
    for a in args:
        if isinstance(a, torch.Tensor):
            sizes.append(str(list(a.shape)))
            dtype = dtype or _DTYPES.get(str(a.dtype), "")
    return f"ak.{kind}:{name} sizes=[{', '.join(sizes)}] dtype={dtype}{extra}"


def _rotary_layout(torch, args):
    """' layout=N': how q lies in memory, in the codes of the rotary_embedding contract (0 contiguous,
    1 a projection's transposed view, 2 anything else, such as a slice of a fused qkv row)."""
    q = args[0] if args and isinstance(args[0], torch.Tensor) and args[0].dim() == 4 else None
    if q is None:
        return ""
    return f" layout={0 if q.is_contiguous() else 1 if q.transpose(1, 2).is_contiguous() else 2}"


def _linear_children(torch, module):
    """' linear=gate_proj:2048x5632,...' for the direct nn.Linear children: a SwiGLU MLP's shape; and,
    beside them, ' act=SiLUActivation', the class of an act_fn child (activation_fn in Phi-3's MLP):
    what a gated MLP gates with."""
    cached = module.__dict__.get("_ak_linear")
    if cached is None:
        children = list(module.named_children())
        parts = [f"{n}:{c.in_features}x{c.out_features}" for n, c in children if isinstance(c, torch.nn.Linear)]
        cached = f" linear={','.join(parts)}" if parts else ""
        named = dict(children)
        act = named.get("act_fn", named.get("activation_fn"))
        if parts and act is not None:
            cached += f" act={_word(type(act).__name__)}"
        module.__dict__["_ak_linear"] = cached
    return cached


def _word(text):
    """A field's value without blanks: the range is split on them."""
    return "".join(c if c.isprintable() and not c.isspace() else "?" for c in str(text)) or "?"


def _public_state(module):
    return {k: v for k, v in vars(module).items() if not k.startswith("_") and k != "training"}


def _same_value(a, b):
    if a is b:
        return True
    try:
        return type(a) is type(b) and isinstance(a, (bool, int, float, str, tuple, type(None))) and bool(a == b)
    except Exception:  # a tuple holding tensors compares elementwise
        return False


def _rng_kept(torch):
    """Saves the program's random state around a constructor and puts it back: a constructor that
    draws (an initialiser) must not change what the program draws next."""
    fork = getattr(getattr(torch, "random", None), "fork_rng", None)
    if fork is None:
        return contextlib.nullcontext()
    cuda = getattr(torch, "cuda", None)
    devices = []
    if cuda is not None and getattr(cuda, "is_initialized", lambda: False)():
        devices = [cuda.current_device()]
    return fork(devices=devices)


@contextlib.contextmanager
def _unseen(torch):
    """A constructor tried by the hook: the random state kept, its output and warnings swallowed,
    so that trying it never changes the program (what it raises, the caller catches)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(_rng_kept(torch))
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        yield stack


def _no_argument_state(torch, cls):
    """The public attributes of `cls()`, or None when it cannot be built with no arguments."""
    try:
        with _unseen(torch):
            return _public_state(cls())
    except (Exception, SystemExit):
        return None


def _literal(value):
    """A constructor argument a reference can write as JSON: numbers, strings, booleans, None and
    tuples of them (a kernel size), nothing that holds a tensor or an object."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, (tuple, list)) and len(value) <= 8 and all(_literal(v) for v in value)


def _init_kwargs(module):
    """The keyword arguments that should rebuild `module`: each parameter of its class's __init__
    that the instance keeps under the same name (`bias`: whether it has one), or None when a
    required one is not kept or not a literal. Only torch.nn's own classes are asked: their
    attributes are their arguments, and their constructors have no side effects."""
    cls = type(module)
    if not cls.__module__.startswith("torch.nn."):
        return None
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    kept = vars(module)
    kwargs = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in ("device", "dtype"):
            continue
        if p.name == "bias" and "bias" in getattr(module, "_parameters", {}):
            kwargs["bias"] = module._parameters["bias"] is not None
        elif p.name in kept and _literal(kept[p.name]):
            kwargs[p.name] = kept[p.name]
        elif p.default is p.empty:
            return None
    return kwargs


def _rebuilt_by(torch, module, kwargs):
    """Whether `type(module)(**kwargs)`, built on the meta device (no memory, no random draws of the
    program's), has this instance's public attributes: the check that the arguments are right."""
    try:
        with _unseen(torch) as stack:
            device = getattr(torch, "device", None)
            if callable(device):
                stack.enter_context(device("meta"))
            rebuilt = type(module)(**kwargs)
            built, mine = _public_state(rebuilt), _public_state(module)
            same_tensors = _tensor_layout(rebuilt) == _tensor_layout(module)
    except (Exception, SystemExit):
        return False
    return same_tensors and built.keys() == mine.keys() and all(_same_value(built[k], mine[k]) for k in mine)


def _tensor_layout(module):
    """Its parameters' and buffers' names and shapes: a bias=False layer is not its default. Of a
    dtype, only whether it is floating point: the program may have cast its layers to fp16."""
    return ([(n, tuple(t.shape)) for n, t in module.named_parameters()],
            [(n, tuple(t.shape), t.is_floating_point()) for n, t in module.named_buffers()])


def _kwargs_field(torch, module):
    """' kwargs={...}' when torch.nn's class is rebuilt by the arguments its instance keeps; ''."""
    kwargs = _init_kwargs(module)
    if kwargs is None or not _rebuilt_by(torch, module, kwargs):
        return ""
    text = json.dumps(kwargs, separators=(",", ":"), sort_keys=True)
    if len(text) > 400 or any(c.isspace() or not c.isprintable() for c in text):
        return ""  # the range is split on blanks: an argument holding one cannot travel in it
    return " kwargs=" + text


def _busy(torch):
    """A CUDA graph being captured or a graph being compiled: no constructor may run now."""
    for probe in (lambda: torch.cuda.is_current_stream_capturing(), lambda: torch.compiler.is_compiling()):
        try:
            if probe():
                return True
        except Exception:
            pass
    return False


def _reference_fields(torch, module, classes, state):
    """' class=mod:Qual params=N buffers=N leaf=1 init=yes': what a reference of this module needs,
    once per instance. No-argument construction is tried once per class, and only for leaves
    without parameters or buffers (the only modules a reference can be made of), so a model's own
    classes are never built again; init=differs when such an instance's public attributes are not
    this one's (GELU(approximate="tanh") is not GELU()). A leaf of torch.nn that no-argument
    construction does not rebuild (a convolution, a norm with weights, that GELU) is tried once more
    with the arguments it keeps, on the meta device: init=args and kwargs={...} when they rebuild it.
    train= is its mode: a reference runs it in the same one."""
    cached = module.__dict__.get("_ak_reference")
    if cached is not None:
        return cached
    cls = type(module)
    params = sum(1 for _ in module.parameters())
    buffers = sum(1 for _ in module.buffers())
    leaf = next(iter(module.children()), None) is None
    init = "untried"
    if leaf and params == 0 and buffers == 0:
        if cls not in classes and not state["constructing"] and not _busy(torch):
            state["constructing"] = True
            try:
                classes[cls] = _no_argument_state(torch, cls)
            finally:
                state["constructing"] = False
        if cls in classes:
            default = classes[cls]
            mine = _public_state(module)
            init = ("no" if default is None else
                    "yes" if default.keys() == mine.keys() and all(_same_value(default[k], mine[k]) for k in mine) else
                    "differs")
    kwargs = ""
    rebuildable = leaf and init in ("untried", "no", "differs")
    busy = rebuildable and _busy(torch)
    if rebuildable and not busy:
        # A layer with weights (a convolution, a norm), or one built with arguments of its own:
        # rebuilt from what it keeps, where torch.nn's class allows it.
        kwargs = _kwargs_field(torch, module)
        if kwargs:
            init = "args"
    fields = (f" class={_word(cls.__module__)}:{_word(cls.__qualname__)} params={params} buffers={buffers}"
              f" leaf={int(leaf)} init={init}{kwargs} train={int(bool(getattr(module, 'training', False)))}")
    if not busy and (init != "untried" or not leaf or params or buffers):  # a graph capture: ask again later
        module.__dict__["_ak_reference"] = fields
    return fields


def _wrap_functions(torch, seen):
    """Wraps apply_rotary_pos_emb in __main__ and in transformers' model modules, once each."""
    for modname, mod in list(sys.modules.items()):
        if mod is None or modname in seen:
            continue
        if modname != "__main__" and not modname.startswith("transformers.models."):
            continue
        seen.add(modname)
        for fname in _FUNCTIONS:
            fn = getattr(mod, fname, None)
            if not callable(fn) or getattr(fn, "_ak_wrapped", False):
                continue

            def wrapped(*args, _fn=fn, _name=fname, **kwargs):
                torch.cuda.nvtx.range_push(_label(torch, "function", _name, args, _rotary_layout(torch, args)))
                try:
                    return _fn(*args, **kwargs)
                finally:
                    torch.cuda.nvtx.range_pop()

            wrapped._ak_wrapped = True
            setattr(mod, fname, wrapped)


def _install(torch):
    from torch.nn.modules import module as nn_module

    seen = set()
    classes = {}  # class -> the public attributes of a no-argument instance, None when there is none
    state = {"modules": -1, "constructing": False}

    def pre(module, args):
        if len(sys.modules) != state["modules"]:  # a model module may have been imported since
            state["modules"] = len(sys.modules)
            _wrap_functions(torch, seen)
        try:
            reference = _reference_fields(torch, module, classes, state)
        except Exception:  # a module whose parameters cannot be listed: its range says nothing more
            reference = ""
        torch.cuda.nvtx.range_push(_label(torch, "module", type(module).__name__, args,
                                          _linear_children(torch, module) + reference + f" args={len(args)}"))

    def post(module, args, output):
        torch.cuda.nvtx.range_pop()

    nn_module.register_module_forward_pre_hook(pre)
    try:  # always_call pops the range when a forward raises (PyTorch 2.1 and later)
        nn_module.register_module_forward_hook(post, always_call=True)
    except TypeError:
        nn_module.register_module_forward_hook(post)
    print("autokernel profile: NVTX ranges around every nn.Module forward", file=sys.stderr)


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Installs the hooks once torch has been imported by the program, and not before: a program
    that never imports torch pays nothing."""

    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            try:
                _install(module)
            except Exception as e:  # the profile goes on, by kernel only, and says why
                print(f"autokernel profile: no module ranges: {e}", file=sys.stderr)

        spec.loader.exec_module = exec_module
        return spec


def _chain_next_sitecustomize():
    """A sitecustomize of the user's own, further down the path, still runs."""
    rest = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


sys.meta_path.insert(0, _AfterTorchImport())
_chain_next_sitecustomize()
