"""The patched step as CUDA graphs, opt-in: capture(model, example_inputs) returns a callable that
runs model(*inputs) by replaying a graph, so that no step waits for Python to issue its kernels.

In torch's conventions (torch.cuda.graphs, make_graphed_callables): the graph reads its inputs from
static buffers, so a call copies its inputs into them and replays; its outputs are static too, the
same tensors at every replay (clone what must outlive the next call). A call whose inputs differ in
shape, dtype or device from every captured one captures a graph of its own (all graphs share one
memory pool); non-tensor arguments are part of that key and are baked into the graph. Forward only,
without gradients (the ops have no backward): capture and replays run under torch.inference_mode().

The ops capture (docs/export.md, CUDA graphs): their modules load at import, a class or helper
replacement checks itself on an eager call, and the warm-up before each capture makes those calls.

Attention keeps its causal kernel. transformers builds a full boolean mask whenever it is traced,
a CUDA stream capture included (masking_utils.is_tracing): it cannot look into a padding mask there
without a host sync. SDPA given a mask then takes its non-causal path, several times slower than
is_causal=True. Where the model is given no attention mask, that decision needs no look into any
tensor: the mask is purely causal exactly when transformers would skip it eagerly, which depends
on the lengths alone. So while capturing, transformers' _ignore_causal_mask_sdpa decides a call
without a padding mask by those lengths, as it does eagerly; a call with a padding mask is left to
transformers (its mask is built, as before)."""
import contextlib
import inspect
import sys

import torch


class CaptureError(RuntimeError):
    """The model's step cannot be captured as a CUDA graph; the message says why and what to do."""


_IGNORE_PARAMS = ("padding_mask", "q_length", "kv_length", "q_offset", "kv_offset", "local_attention_size")


def eager_causal_decision(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size=None):
    """transformers' eager decision to skip the causal mask (and so call SDPA with is_causal=True)
    for a call without a padding mask: a local window the keys reach needs the mask; otherwise one
    query, as many queries as keys, or a prefill from an empty cache needs none."""
    if local_attention_size is not None and kv_length >= local_attention_size:
        return False
    return q_length == 1 or kv_length == q_length or q_offset == 0


@contextlib.contextmanager
def causal_sdpa_under_capture(modules=None):
    """Within the block, transformers' masking_utils._ignore_causal_mask_sdpa decides a call made
    during a CUDA stream capture without a padding mask as it would eagerly (eager_causal_decision);
    every other call is its own. Yields whether it was installed: False where transformers is not
    loaded or its function takes other arguments than the ones this was written for."""
    modules = sys.modules if modules is None else modules
    masking = modules.get("transformers.masking_utils")
    original = getattr(masking, "_ignore_causal_mask_sdpa", None)
    try:
        params = tuple(inspect.signature(original).parameters) if callable(original) else ()
    except (TypeError, ValueError):
        params = ()
    if params != _IGNORE_PARAMS:
        yield False
        return
    capturing, compiling = torch.cuda.is_current_stream_capturing, torch.compiler.is_compiling

    def ignore_causal_mask_sdpa(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size=None):
        if padding_mask is None and capturing() and not compiling():
            return eager_causal_decision(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size)
        return original(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size)

    masking._ignore_causal_mask_sdpa = ignore_causal_mask_sdpa
    try:
        yield True
    finally:
        masking._ignore_causal_mask_sdpa = original


def signature_of(inputs):
    """What a graph is captured for: each tensor's shape, dtype and device, and any other argument
    itself (it is baked into the graph)."""
    return tuple((tuple(x.shape), x.dtype, x.device) if isinstance(x, torch.Tensor) else ("value", x) for x in inputs)


def _why(e):
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


class _Graph:
    def __init__(self, graph, static_inputs, output):
        self.graph, self.static_inputs, self.output = graph, static_inputs, output


class CapturedStep:
    """model(*inputs) replayed as CUDA graphs, one per input signature (see the module's text)."""

    def __init__(self, model, warmup=3, causal_sdpa=True):
        self.model, self.warmup, self.causal_sdpa = model, warmup, causal_sdpa
        self.graphs = {}
        self.pool = None
        self.causal_sdpa_installed = False

    def _check(self, inputs):
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        if not tensors:
            raise CaptureError("autokernel_ops.capture: the inputs hold no tensor: a CUDA graph replays work on tensors")
        off = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and not x.is_cuda]
        if off:
            raise CaptureError(f"autokernel_ops.capture: inputs {off} are not on a CUDA device: move them (and the model) "
                               "to the GPU before capturing")

    def capture(self, inputs):
        """Captures a graph for inputs' signature (after `warmup` eager steps on a side stream)."""
        self._check(inputs)
        static = tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in inputs)
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        try:
            with torch.inference_mode():
                with torch.cuda.stream(side):
                    for _ in range(self.warmup):  # the replacements' first-call checks happen here, eagerly
                        self.model(*static)
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with contextlib.ExitStack() as stack:
                    if self.causal_sdpa:
                        self.causal_sdpa_installed = stack.enter_context(causal_sdpa_under_capture())
                    with torch.cuda.graph(graph, pool=self.pool):
                        output = self.model(*static)
        except CaptureError:
            raise
        except Exception as e:  # said with what to do: the model stays usable eagerly
            torch.cuda.synchronize()
            raise CaptureError(
                f"autokernel_ops.capture: the model's step cannot be captured as a CUDA graph ({_why(e)}). A step "
                "that synchronises with the host (.item(), .cpu(), printing a tensor, a shape that depends on values), "
                "makes CPU tensors, or changes its own Python state between calls cannot be replayed: run it eagerly "
                "(autokernel_ops.patched() alone), or capture the part of it that can be") from e
        entry = _Graph(graph, static, output)
        self.graphs[signature_of(inputs)] = entry
        return entry

    def __call__(self, *inputs):
        entry = self.graphs.get(signature_of(inputs))
        if entry is None:
            entry = self.capture(inputs)
        with torch.inference_mode():
            for mine, given in zip(entry.static_inputs, inputs):
                if isinstance(mine, torch.Tensor) and mine.data_ptr() != given.data_ptr():
                    mine.copy_(given)
        entry.graph.replay()
        return entry.output


def capture(model, example_inputs, warmup=3, causal_sdpa=True):
    """model(*example_inputs) captured as a CUDA graph now; returns a CapturedStep, called as the
    model is (step(*inputs)), which copies its inputs into the graph's buffers and replays, and
    captures again for inputs of another shape. Patch first (autokernel_ops.patch()) for the ops to
    be in the graph. causal_sdpa=False leaves transformers' masks as it builds them under capture.
    Raises CaptureError where the step cannot be captured, saying why."""
    step = CapturedStep(model, warmup, causal_sdpa)
    step.capture(tuple(example_inputs))
    return step
