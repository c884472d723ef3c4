"""tcgd from Python: named points and phases, run metadata.

The functions talk to libtcgd.so's C API (agent/include/tcgd/tcgd.h) in the
current process. Without the agent loaded (no LD_PRELOAD=libtcgd.so, or
TCGD_LIBRARY not set) they do nothing and return False, so code that marks
points runs unchanged everywhere.

    import tcgd
    tcgd.point("after-warmup")
    with tcgd.phase("capture"):
        ...
"""
import contextlib
import ctypes
import os

__all__ = ["point", "phase", "set_metadata", "enabled", "version", "agent_loaded"]

OK, DISABLED, DROPPED, INVALID = 0, 1, 2, 3


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
