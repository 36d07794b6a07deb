"""The forms of masks that lumen.crop and lumen.mask_bbox take beyond the C binding's images.

The binding reads uint8, uint16 and float32 images. Masks are often bool (NumPy's or torch's)
and often have no channel axis while the image has one; this layer views a bool mask as uint8
(no copy: True is 1) and gives a mask the image's axes where it lacks the channel axis (an
(N, H, W) mask of an N x H x W x C batch, an (H, W) mask of a C x H x W image). docs/crop.md.
"""

import functools
import sys

import numpy as np

from . import _lumen


def _as_uint8(mask):
    """A bool array or tensor as uint8, without a copy; anything else as it is."""
    dtype = getattr(mask, "dtype", None)
    if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
        return mask.view(np.uint8)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(mask, torch.Tensor) and dtype == torch.bool:
        return mask.view(torch.uint8)
    return mask


# Where the channel axis goes, per layout of the image, for a mask that lacks it.
_CHANNEL_AXIS = {"hwc": 2, "chw": 0, "nhwc": 3, "nchw": 1}


def _fit(mask, src, layout):
    """mask with the channel axis of src's layout added where it has one axis less (and, for
    a 2-D mask of a batch, the batch axis): the shapes the binding matches."""
    mask = _as_uint8(mask)
    nd, snd = getattr(mask, "ndim", None), getattr(src, "ndim", None)
    if nd is None or snd is None or nd >= snd:
        return mask
    lay = layout if isinstance(layout, str) else {3: "hwc", 4: "nhwc"}.get(snd)
    if nd == snd - 1 and lay in _CHANNEL_AXIS:
        axis = _CHANNEL_AXIS[lay]
        return mask[(slice(None),) * axis + (None,)]
    if nd == 2 and snd == 4 and lay in ("nhwc", "nchw"):
        return mask[None, :, :, None] if lay == "nhwc" else mask[None, None]
    return mask


def _crop_form(fn):
    @functools.wraps(fn)
    def crop(src, mask=None, **kwargs):
        if mask is not None:
            mask = _fit(mask, src, kwargs.get("layout"))
        return fn(src, mask, **kwargs)

    return crop


def mask_bbox(mask, threshold=0.0, *, layout=None, context=None):
    """The box (x0, y0, x1, y1), half-open, of the pixels where any channel of mask is >
    threshold: an int64 array of shape (4,) for one image, (N, 4) for a batch (an N x H x W x C
    array, or layout='nhwc'/'nchw'); (0, 0, 0, 0) where an image has none (MONAI's empty box).
    Masks: bool, uint8, uint16, float32 (compared in float32), float64, any strides, DLPack
    tensors. docs/crop.md."""
    return _lumen.mask_bbox(_as_uint8(mask), threshold, layout=layout, context=context)


#: lumen/__init__.py wraps the ops named here by descriptor name.
FORMS = {"crop": _crop_form}
