"""lumen: fast image convolution and filtering, with OpenCV's semantics.

    import numpy as np, lumen
    img = np.random.rand(2000, 3000, 3).astype(np.float32)
    soft = lumen.gaussian_blur(img, 3.0)                 # cv2.GaussianBlur's kernel
    edge = lumen.filter2d(img, [[0, -1, 0], [-1, 5, -1], [0, -1, 0]], border="reflect101")
    lumen.box_blur(img, (5, 3), out=img)                  # in place

Images are NumPy arrays (or DLPack tensors: PyTorch, CuPy, JAX) of uint8, uint16 or float32,
shaped H x W, H x W x C or N x H x W x C, in any strides; they are used without copying and the
GIL is released while lumen computes. Borders: "reflect" (default, = cv2.BORDER_REFLECT),
"reflect101", "replicate", "constant", "wrap", their aliases, or cv2.BORDER_* integers.
Full reference: docs/python.md.
"""

# The OpenMP wait policy must be in the environment before the extension loads libgomp.
from . import _cpu_share

_CPU_WAIT, _spin_set = _cpu_share.before_extension()
from . import _lumen  # noqa: E402
from ._lumen import (  # noqa: E402,F401  (the C extension is the API)
    ArgumentError,
    Context,
    Error,
    FileError,
    UnsupportedError,
    __version__,
    device_info,
    devices,
    gaussian_kernel,
    gaussian_ksize,
    last_run,
    read_image,
    write_image,
)

_cpu_share.after_extension(_spin_set)
del _spin_set

from ._conv import FORMS as _FORMS, Conv2dWeights  # noqa: E402,F401  (docs/conv2d.md)
from ._crop import FORMS as _CROP_FORMS, mask_bbox  # noqa: E402,F401  (docs/crop.md)
from ._method import choose_method  # noqa: E402,F401  (the method an op would run, not running it)
from . import film  # noqa: E402,F401  (lumen.film: the film effects, docs/film.md)


def cpu_wait_policy():
    """How lumen's idle OpenMP threads wait, as text: "GOMP_SPINCOUNT=100 (lumen's default)"
    (a spin of a few microseconds, then sleep), "OMP_WAIT_POLICY=... (the environment)", or
    libgomp's default (a spin of milliseconds) when another module (cv2, torch) loaded OpenMP
    before lumen was imported. README, "Sharing the CPU with your program"."""
    return _CPU_WAIT


#: Border names accepted besides lumen's own, and what they mean (docs/python.md).
BORDER_ALIASES = {
    "symmetric": "reflect", "grid-mirror": "reflect",
    "reflect_101": "reflect101", "reflect-101": "reflect101", "mirror": "reflect101",
    "nearest": "replicate", "edge": "replicate",
    "grid-constant": "constant",
    "grid-wrap": "wrap", "circular": "wrap",
}

# The ops, one per op descriptor (include/lumen_ops.h): the C functions themselves, whose
# signatures and docstrings the extension made from the descriptors; conv2d and
# conv_transpose2d also take torch's unbatched and empty-batch forms (_conv.py).
_FORMS = {**_FORMS, **_CROP_FORMS}
_OPS = [d["name"] for d in _lumen._op_descriptors()]
for _name in _OPS:
    _fn = getattr(_lumen, _name)
    globals()[_name] = _FORMS[_name](_fn) if _name in _FORMS else _fn
del _name, _fn

__all__ = [
    "ArgumentError", "Context", "Conv2dWeights", "Error", "FileError", "UnsupportedError",
    "BORDER_ALIASES", "choose_method", "cpu_wait_policy", "device_info", "devices",
    "gaussian_kernel", "gaussian_ksize", "last_run", "mask_bbox",
    "read_image", "write_image",
] + _OPS
