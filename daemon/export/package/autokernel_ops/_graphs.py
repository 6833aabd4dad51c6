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
a CUDA stream capture included (masking_utils.is_tracing), at two points where eagerly it looks into
a tensor: whether the causal mask can be skipped given a padding mask, and whether the position ids
pack several sequences into a row (find_packed_sequence_indices, which a model without a cache and
without an attention mask always asks). SDPA given a mask takes its non-causal path, several times
slower than is_causal=True. So while capture() warms up and captures (and only then):
  - a call of _ignore_causal_mask_sdpa without a padding mask is decided by the lengths alone, as
    transformers decides it eagerly (it then needs no look into any tensor);
  - find_packed_sequence_indices answers during the capture what it answered on the last eager
    warm-up step, call for call: the same inputs, so the same answer. A replay reuses it: a step
    whose inputs include position ids that pack sequences on some call but not on the warm-up's
    must be captured with causal_sdpa=False.
A call with a padding mask is left to transformers (its mask is built, as before).
"""
import contextlib
import inspect
import sys

import torch


class CaptureError(RuntimeError):
    """The model's step cannot be captured as a CUDA graph; the message says why and what to do."""


_IGNORE_PARAMS = ("padding_mask", "q_length", "kv_length", "q_offset", "kv_offset", "local_attention_size")
# The same decision in transformers releases that dropped q_offset (and name the query's length so).
_IGNORE_PARAMS_NO_Q_OFFSET = ("padding_mask", "query_length", "kv_length", "kv_offset", "local_attention_size")
_PACKED_PARAMS = ("position_ids",)


def eager_causal_decision(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size=None):
    """transformers' eager decision to skip the causal mask (and so call SDPA with is_causal=True)
    for a call without a padding mask: a local window the keys reach needs the mask; otherwise one
    query, as many queries as keys, or a prefill from an empty cache needs none."""
    if local_attention_size is not None and kv_length >= local_attention_size:
        return False
    return q_length == 1 or kv_length == q_length or q_offset == 0


def _params(fn):
    try:
        return tuple(inspect.signature(fn).parameters) if callable(fn) else ()
    except (TypeError, ValueError):
        return ()


class MaskDecisions:
    """transformers' mask decisions under capture, as they are made eagerly (see the module's text).
    record() before the last eager warm-up step, replay() before the capture; install() replaces the
    two functions of transformers.masking_utils it was written for (those it finds with the
    arguments it expects) and says whether it replaced any; restore() puts them back."""

    def __init__(self, modules=None):
        self.masking = (sys.modules if modules is None else modules).get("transformers.masking_utils")
        self.saved = {}
        self.recording, self.answers, self.replaying = False, [], []

    def record(self):
        self.recording, self.answers = True, []

    def replay(self):
        self.recording, self.replaying = False, list(self.answers)

    def install(self):
        m = self.masking
        ignore = getattr(m, "_ignore_causal_mask_sdpa", None)
        packed = getattr(m, "find_packed_sequence_indices", None)
        capturing, compiling = torch.cuda.is_current_stream_capturing, torch.compiler.is_compiling

        def ignore_causal_mask_sdpa(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size=None):
            if padding_mask is None and capturing() and not compiling():
                return eager_causal_decision(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size)
            return ignore(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size)

        def ignore_causal_mask_sdpa_no_q_offset(padding_mask, query_length, kv_length, kv_offset, local_attention_size=None):
            # Those releases skip the mask for one query or as many queries as keys only.
            if padding_mask is None and capturing() and not compiling():
                return eager_causal_decision(padding_mask, query_length, kv_length, None, kv_offset, local_attention_size)
            return ignore(padding_mask, query_length, kv_length, kv_offset, local_attention_size)

        def find_packed_sequence_indices(position_ids):
            if compiling():
                return packed(position_ids)
            if capturing():
                # The warm-up's answer for this call; none recorded: transformers' own (the mask).
                if self.replaying and self.replaying.pop(0) is None:
                    return None
                return packed(position_ids)
            found = packed(position_ids)
            if self.recording:
                self.answers.append(found)
            return found
        for name, original, params, replacement in (
                ("_ignore_causal_mask_sdpa", ignore, _IGNORE_PARAMS, ignore_causal_mask_sdpa),
                ("_ignore_causal_mask_sdpa", ignore, _IGNORE_PARAMS_NO_Q_OFFSET, ignore_causal_mask_sdpa_no_q_offset),
                ("find_packed_sequence_indices", packed, _PACKED_PARAMS, find_packed_sequence_indices)):
            if _params(original) == params:
                self.saved[name] = original
                setattr(m, name, replacement)
        return bool(self.saved)

    def restore(self):
        for name, original in self.saved.items():
            setattr(self.masking, name, original)
        self.saved = {}


@contextlib.contextmanager
def mask_decisions(modules=None):
    """MaskDecisions installed for the block (the MaskDecisions, its `saved` empty where nothing was
    installed: transformers not loaded, or functions of other arguments)."""
    decisions = MaskDecisions(modules)
    if decisions.masking is not None:
        decisions.install()
    try:
        yield decisions
    finally:
        decisions.restore()


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
        warmup = max(self.warmup, 1)  # the mask decisions are recorded on an eager step
        try:
            with torch.inference_mode(), contextlib.ExitStack() as stack:
                decisions = stack.enter_context(mask_decisions()) if self.causal_sdpa else None
                self.causal_sdpa_installed = bool(decisions and decisions.saved)
                with torch.cuda.stream(side):
                    for i in range(warmup):  # the replacements' first-call checks happen here, eagerly
                        if decisions is not None and i == warmup - 1:
                            decisions.record()
                        self.model(*static)
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
                if decisions is not None:
                    decisions.replay()
                graph = torch.cuda.CUDAGraph()
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
    be in the graph. causal_sdpa=False leaves transformers' masks as it builds them under capture
    (for a step whose inputs carry position ids that may pack sequences).
    Raises CaptureError where the step cannot be captured, saying why."""
    step = CapturedStep(model, warmup, causal_sdpa)
    step.capture(tuple(example_inputs))
    return step
