"""conv2d and conv_transpose2d in every form torch.nn.functional takes.

The C extension takes batched (N, C, H, W) tensors with N >= 1. torch also takes an unbatched
(C, H, W) input, giving a (K, P, Q) result, and an empty batch (0, C, H, W), giving an empty
(0, K, P, Q) result after the same argument checks; this layer adds those two forms.
"""

import functools

import numpy as np

from . import _lumen


def _empty_batch(fn, x, weight, bias, out, params):
    """The (0, K, P, Q) result of an empty batch: the arguments are checked by running one
    all-zero image (a broadcast view, no memory), whose result gives K, P and Q."""
    one = np.broadcast_to(np.float32(0), (1,) + tuple(x.shape[1:]))
    shape = (0,) + tuple(fn(one, weight, bias, **params).shape[1:])
    if out is None:
        return np.empty(shape, np.float32)
    if tuple(getattr(out, "shape", ())) != shape:
        raise _lumen.ArgumentError(
            f"out: shape {tuple(getattr(out, 'shape', ()))} differs from the expected {shape}")
    return out


class Conv2dWeights:
    """conv2d weights transformed once for one input shape and one set of parameters
    (lumen_conv2d_weights_pack, docs/conv2d.md): ``lumen.conv2d(x, packed, bias)`` then skips
    the per-call weight transform and gives the unpacked result bit for bit. x must have shape
    ``x_shape``; stride, padding, dilation and groups default to the packed ones and, when
    given, must equal them. The weight array is kept (not copied): do not change it while the
    packed weights are in use (they would not follow). Device contexts run on the weight
    itself."""

    __slots__ = ("weight", "x_shape", "stride", "padding", "dilation", "groups", "algo",
                 "nbytes", "_capsule")

    def __init__(self, weight, x_shape, *, stride=1, padding=0, dilation=1, groups=1,
                 context=None):
        self.weight = weight
        self.x_shape = tuple(int(v) for v in x_shape)
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self._capsule, self.algo, self.nbytes = _lumen._conv2d_pack(
            self.x_shape, weight, stride=stride, padding=padding, dilation=dilation,
            groups=groups, context=context)

    @property
    def shape(self):
        """The weight's shape (K, C/groups, R, S)."""
        return tuple(self.weight.shape)

    def __repr__(self):
        return (f"Conv2dWeights(shape={self.shape}, x_shape={self.x_shape}, "
                f"algo={self.algo!r}, nbytes={self.nbytes})")


def _all_forms(fn):
    @functools.wraps(fn)
    def call(x, weight, bias=None, *, out=None, **params):
        if isinstance(weight, Conv2dWeights):
            weight = weight._capsule
        nd = getattr(x, "ndim", None)
        if nd == 3:  # unbatched (C, H, W): a batch of one, as torch does
            r = fn(x[None], weight, bias, out=None if out is None else out[None], **params)
            return out if out is not None else r[0]
        if nd == 4 and x.shape[0] == 0:
            return _empty_batch(fn, x, weight, bias, out, params)
        return fn(x, weight, bias, out=out, **params)

    return call


#: The ops that take every form torch does; lumen/__init__.py wraps them by descriptor name.
FORMS = {"conv2d": _all_forms, "conv_transpose2d": _all_forms}
