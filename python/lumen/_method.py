"""lumen.choose_method: the method an op would run, asked of the C library without running it."""

import numpy as np

from . import _lumen

#: The ops whose method can be asked for (include/lumen.h, "Method queries").
OPS = ("filter2d", "sep_filter2d", "gaussian_blur", "box_blur")


def _stand_in(src):
    """A zero-strided array of src's shape that lumen reads as src (no memory, no pixels read):
    float64 as float32, since lumen filters float64 in float32."""
    try:
        dt = np.dtype(src.dtype)
    except TypeError:  # torch's dtypes: "torch.float16" -> float16
        dt = np.dtype(str(src.dtype).rsplit(".", 1)[-1])
    if dt == np.float64:
        dt = np.dtype(np.float32)
    shape = tuple(int(n) for n in src.shape)
    return np.lib.stride_tricks.as_strided(np.zeros(1, dt), shape, (0,) * len(shape),
                                           writeable=False)


def choose_method(op, src, *args, **kwargs):
    """The method ``lumen.<op>(src, *args, **kwargs)`` would run: "direct", "separable", "fft"
    or "recursive", what ``lumen.last_run()["method"]`` says after that call. It is chosen as the
    call chooses it (the same argument checks, the rank-1 test of the kernel, the cost model for
    ``context=``'s machine and thread count) but nothing runs and src's pixels are never read:
    src may be anything with ``.shape`` and ``.dtype`` (a dask or Zarr array, an image not in
    memory). op: "filter2d", "sep_filter2d", "gaussian_blur" or "box_blur", or the function.

        lumen.choose_method("filter2d", big, kernel)         # -> 'fft'
        lumen.filter2d(big, kernel, method=lumen.choose_method("filter2d", big, kernel))
    """
    name = getattr(op, "__name__", op)
    if name not in OPS:
        raise _lumen.ArgumentError(f"op: {op!r} has no method to choose (one of {OPS})")
    if "out" in kwargs:
        raise TypeError("choose_method() takes no out=: nothing is written")
    return _lumen._choose_method(name, _stand_in(src), *args, **kwargs)
