"""tcgd from Python: named points and phases, run metadata, explicit tensor probes.

The functions talk to libtcgd.so's C API (agent/include/tcgd/tcgd.h) in the
current process. Without the agent loaded (no LD_PRELOAD=libtcgd.so, or
TCGD_LIBRARY not set) they do nothing and return False, so code that marks
points runs unchanged everywhere.

    import tcgd
    tcgd.point("after-warmup")
    with tcgd.phase("capture"):
        ...
    hidden = tcgd.probe(torch.relu(x), "after_relu")   # the same tensor back
    tcgd.watch_grad(weight, "weight.grad")              # gradients, in backward order

Explicit probes are observed as TCGD_TENSOR's rules say (docs/tensor.md,
"Explicit probes"): TCGD_TENSOR='record:probes=only' records every probed
tensor's values in eager execution and in every replay of a CUDA graph that
captured the call.
"""
import contextlib
import ctypes
import os

__all__ = ["point", "phase", "set_metadata", "enabled", "version", "agent_loaded", "probe", "watch_grad",
           "ProbeError"]

OK, DISABLED, DROPPED, INVALID = 0, 1, 2, 3
NOT_SELECTED, UNKNOWN_MEMORY, NOT_PROBED = 4, 5, 6
MAX_DIMS = 16


def _load():
    # The agent preloaded into this process exports the C API globally.
    lib = ctypes.CDLL(None)
    if getattr(lib, "tcgd_point", None) is None:
        path = os.environ.get("TCGD_LIBRARY")
        if not path:
            return None
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            return None
    for name in ("tcgd_point", "tcgd_phase_begin", "tcgd_phase_end"):
        getattr(lib, name).argtypes = [ctypes.c_char_p]
        getattr(lib, name).restype = ctypes.c_int
    lib.tcgd_set_metadata.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.tcgd_set_metadata.restype = ctypes.c_int
    lib.tcgd_enabled.restype = ctypes.c_int
    lib.tcgd_version.restype = ctypes.c_char_p
    probe_fn = getattr(lib, "tcgd_probe", None)
    if probe_fn is not None:
        probe_fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int, ctypes.c_int,
                             ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p]
        probe_fn.restype = ctypes.c_int
    return lib


_lib = _load()


def agent_loaded():
    """True when libtcgd.so is in this process."""
    return _lib is not None


def _encode(text, what):
    if not isinstance(text, str):
        raise TypeError(f"tcgd: {what} must be a str, not {type(text).__name__}")
    return text.encode("utf-8")


def point(name):
    """Records a named point. Returns True when it was recorded."""
    data = _encode(name, "point name")
    return _lib is not None and _lib.tcgd_point(data) == OK


@contextlib.contextmanager
def phase(name):
    """Marks "<name>/begin" on entry and "<name>/end" on exit (also on error)."""
    data = _encode(name, "phase name")
    if _lib is not None:
        _lib.tcgd_phase_begin(data)
    try:
        yield
    finally:
        if _lib is not None:
            _lib.tcgd_phase_end(data)


def set_metadata(key, value):
    """Adds key=value to the run's metadata. Returns True when recorded."""
    k, v = _encode(key, "metadata key"), _encode(str(value), "metadata value")
    return _lib is not None and _lib.tcgd_set_metadata(k, v) == OK


def enabled():
    """True when the agent records in this process (starting it if needed)."""
    return _lib is not None and _lib.tcgd_enabled() == 1


def version():
    """The agent's version string, or None without the agent."""
    return _lib.tcgd_version().decode() if _lib is not None else None


# ---- explicit tensor probes ----------------------------------------------------

class ProbeError(ValueError):
    """A tensor tcgd.probe cannot observe as given (a CPU tensor, a strided
    tensor without non_contiguous="copy", an unsupported dtype)."""


# torch dtype name -> the bundle's dtype code (agent/include/tcgd/tcgd.h,
# TCGD_DTYPE_*). float8 formats without a code of their own are observed as
# bytes (hash only); complex and other dtypes are refused.
_DTYPES = {
    "float32": 1, "float16": 2, "bfloat16": 3, "float64": 4, "int8": 5, "uint8": 6, "int16": 7,
    "int32": 8, "int64": 9, "bool": 10, "float8_e4m3fn": 11, "float8_e5m2": 12, "uint16": 13,
    "uint32": 14, "uint64": 15,
    "float8_e4m3fnuz": 0, "float8_e5m2fnuz": 0, "float8_e8m0fnu": 0,
}
_warned = set()


def _warn_once(key, text):
    if key in _warned:
        return
    _warned.add(key)
    import sys
    print(f"tcgd: {text}", file=sys.stderr)


def _dtype_code(tensor):
    name = str(tensor.dtype).replace("torch.", "")
    if name not in _DTYPES:
        raise ProbeError(f"tcgd.probe: unsupported dtype {tensor.dtype} (supported: "
                         + ", ".join(k for k in _DTYPES) + ")")
    return _DTYPES[name]


def probe(tensor, name, *, non_contiguous="error", stream=None):
    """Observes `tensor` under `name` at this point of the program and
    returns `tensor` itself, unchanged: probe(x * 2, "after_scale") can sit
    inside the dataflow, in eager code and inside torch.cuda.graph capture
    (where every replay observes it again).

    Without the agent (no LD_PRELOAD=libtcgd.so) it does nothing at all. With
    it, the observation is keyed by (name, invocation), the invocation
    counting this name's probes from 0, and carries the tensor's dtype, shape
    and strides; TCGD_TENSOR's rules select it (kernel= matches the name,
    probes=only selects explicit probes alone). The work is queued on
    `stream` (default: the current CUDA stream); nothing synchronizes.

    non_contiguous: "error" (default) refuses a strided tensor with
    ProbeError; "copy" observes a contiguous copy (made on the same stream).
    A zero-element tensor has nothing to observe and is passed through."""
    if _lib is None or getattr(_lib, "tcgd_probe", None) is None:
        return tensor
    data = _encode(name, "probe name")
    if non_contiguous not in ("error", "copy"):
        raise ValueError(f'tcgd.probe: non_contiguous must be "error" or "copy", not {non_contiguous!r}')
    if not getattr(tensor, "is_cuda", False):
        raise ProbeError(f"tcgd.probe({name!r}): a CUDA tensor is needed, not one on {getattr(tensor, 'device', type(tensor).__name__)}")
    code = _dtype_code(tensor)
    if tensor.numel() == 0:
        return tensor
    if tensor.dim() > MAX_DIMS:
        raise ProbeError(f"tcgd.probe({name!r}): {tensor.dim()} dimensions (at most {MAX_DIMS})")
    observed = tensor
    if not tensor.is_contiguous():
        if non_contiguous == "error":
            raise ProbeError(f"tcgd.probe({name!r}): the tensor is not contiguous (shape {tuple(tensor.shape)}, "
                             f"strides {tuple(tensor.stride())}); pass non_contiguous=\"copy\" to observe a copy")
        observed = tensor.contiguous()
    import torch
    if stream is None:
        stream = torch.cuda.current_stream(observed.device)
    handle = stream.cuda_stream if hasattr(stream, "cuda_stream") else int(stream)
    ndim = observed.dim()
    shape = (ctypes.c_int64 * max(ndim, 1))(*observed.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*observed.stride())
    nbytes = observed.numel() * observed.element_size()
    rc = _lib.tcgd_probe(data, observed.data_ptr(), nbytes, code, ndim, shape, strides, handle)
    if rc == UNKNOWN_MEMORY:
        _warn_once(("memory", name), f"probe {name!r}: its memory is in no allocation tcgd knows; not observed")
    elif rc == INVALID:
        raise ProbeError(f"tcgd.probe({name!r}): the agent refused the tensor's description "
                         f"(shape {tuple(observed.shape)}, dtype {observed.dtype})")
    elif rc == NOT_SELECTED:
        _warn_once("selected", "explicit probes record nothing: TCGD_TENSOR is unset or none of its rules "
                   "selects them (TCGD_TENSOR='record:probes=only' records every probe)")
    if observed is not tensor and torch.cuda.is_current_stream_capturing():
        # The graph reads the copy at every replay: it must outlive the graph.
        _kept.append(observed)
    return tensor


# Contiguous copies probed during a capture (their memory is the graph's to
# read on every replay); released by release_copies() once the graphs are gone.
_kept = []


def release_copies():
    """Drops the contiguous copies that probes made during captures (call it
    after the graphs that captured them were destroyed)."""
    _kept.clear()


def watch_grad(tensor, name, *, strict=False, non_contiguous="error"):
    """Probes the gradient of `tensor` under `name` each time autograd
    computes it (an ordinary tensor hook: the invocations follow backward
    order). Returns the hook's handle (handle.remove() stops it), or None for
    a tensor that does not require grad (strict=True raises instead)."""
    if not getattr(tensor, "requires_grad", False):
        if strict:
            raise RuntimeError(f"tcgd.watch_grad({name!r}): the tensor does not require grad")
        return None

    def hook(grad):
        probe(grad, name, non_contiguous=non_contiguous)
        return grad

    return tensor.register_hook(hook)
