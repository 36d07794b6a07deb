"""lumen.mask_bbox and lumen.crop (docs/crop.md) against a NumPy model of MONAI's CropForeground
(generate_spatial_bounding_box, compute_divisible_spatial_size, crop_pad: MONAI 1.5's code read
for the facts, not imported: MONAI is not a Debian package), for the parts MONAI has (margin,
allow_smaller, k_divisible, its pad); lumen's own rules (aspect, min_size, outside='clip',
every border mode) against the rule of docs/crop.md written out here, with the pad from
cv2.copyMakeBorder (conftest.pad). Masks in every form the binding takes: bool, uint8,
uint16, float32, float64, strided and flipped views, batches, layouts, torch tensors."""

import numpy as np
import pytest

import lumen
from conftest import BORDERS, pad

# ---- the model of MONAI's CropForeground ------------------------------------------------------


def monai_bbox(img_chw, threshold=0.0, margin=0, allow_smaller=False):
    """generate_spatial_bounding_box with select_fn = (x > threshold): [h0, w0], [h1, w1]."""
    data = (img_chw > threshold).any(0)
    margin = (margin, margin) if np.isscalar(margin) else tuple(margin)
    if not data.any():
        return [0, 0], [0, 0]
    start, end = [0, 0], [0, 0]
    for di, ax in enumerate((1, 0)):
        dt = data.any(ax)
        idx = np.where(dt)[0]
        lo, hi = idx[0] - margin[di], idx[-1] + margin[di] + 1
        if allow_smaller:
            lo, hi = max(lo, 0), min(hi, data.shape[di])
        start[di], end[di] = int(lo), int(hi)
    return start, end


def monai_crop(img_chw, threshold=0.0, margin=0, allow_smaller=False, k_divisible=1,
               mode="constant", value=0, source=None):
    """CropForeground.__call__ (CropForegroundd's source_key: the box of `source`, default the
    image): the box, made divisible by k around its start (start - floor((size - orig) / 2)),
    then cropped and padded (np.pad, as MONAI pads numpy arrays)."""
    src = img_chw if source is None else source
    start, end = monai_bbox(src, threshold, margin, allow_smaller)
    start, end = np.asarray(start), np.asarray(end)
    orig = end - start
    k = (k_divisible, k_divisible) if np.isscalar(k_divisible) else k_divisible
    size = np.array([int(np.ceil(d / kd) * kd) if kd > 0 else d for d, kd in zip(orig, k)])
    start = start - np.floor_divide(size - orig, 2)
    end = start + size
    h, w = img_chw.shape[1:]
    s0, s1 = np.maximum(start, 0), np.minimum(end, (h, w))
    cropped = img_chw[:, s0[0]:max(s1[0], s0[0]), s0[1]:max(s1[1], s0[1])]
    before = np.maximum(-start, 0)
    after = np.maximum(end - (h, w), 0)
    widths = [(0, 0), (before[0], after[0]), (before[1], after[1])]
    kw = {"constant_values": value} if mode == "constant" else {}
    return np.pad(cropped, widths, mode=mode, **kw), start, end


def chw(img):
    return img[None] if img.ndim == 2 else np.moveaxis(img, -1, 0)


def hwc(img_chw, like):
    return img_chw[0] if like.ndim == 2 else np.moveaxis(img_chw, 0, -1)


def random_mask(rng, h, w, count, dtype=np.uint8):
    m = np.zeros((h, w), dtype)
    for _ in range(count):
        m[rng.integers(h), rng.integers(w)] = 1
    return m


# ---- mask_bbox ---------------------------------------------------------------------------------


def bbox_model(mask, threshold=0.0):
    """(x0, y0, x1, y1) of mask (H x W or H x W x C) > threshold, as numpy compares."""
    fg = mask > threshold
    if fg.ndim == 3:
        fg = fg.any(-1)
    if not fg.any():
        return [0, 0, 0, 0]
    ys, xs = np.where(fg)
    return [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.uint16, np.float32, np.float64])
@pytest.mark.parametrize("count", [0, 1, 2, 9])
def test_mask_bbox_matches_numpy(dtype, count):
    rng = np.random.default_rng(count * 7 + np.dtype(dtype).itemsize)
    for h, w, c in ((1, 1, 1), (1, 17, 1), (23, 1, 2), (31, 40, 3)):
        m = np.zeros((h, w, c), dtype)
        for _ in range(count):
            m[rng.integers(h), rng.integers(w), rng.integers(c)] = 1
        got = lumen.mask_bbox(m)
        assert got.dtype == np.int64 and got.shape == (4,)
        assert got.tolist() == bbox_model(m)
        # MONAI's start/end are (y0, x0), (y1, x1) of the same box
        start, end = monai_bbox(chw(m))
        if count:
            assert [got[1], got[0]] == start and [got[3], got[2]] == end


def test_mask_bbox_views_and_layouts():
    rng = np.random.default_rng(3)
    base = (rng.random((4, 30, 50, 3)) > 0.999).astype(np.float32)
    base[2] = 0  # an empty image in the batch
    want = [bbox_model(b) for b in base]
    assert lumen.mask_bbox(base).tolist() == want                       # N x H x W x C
    nchw = np.ascontiguousarray(base.transpose(0, 3, 1, 2))
    assert lumen.mask_bbox(nchw, layout="nchw").tolist() == want
    assert lumen.mask_bbox(base[1]).tolist() == want[1]                 # H x W x C
    assert lumen.mask_bbox(base[1, :, :, 0]).tolist() == bbox_model(base[1, :, :, 0])
    # strided and flipped views are read in place
    v = base[:, ::2, ::-3]
    assert lumen.mask_bbox(v).tolist() == [bbox_model(b) for b in v]
    assert lumen.mask_bbox(base[0], threshold=0.5).tolist() == bbox_model(base[0], 0.5)
    assert lumen.mask_bbox(base[0], threshold=1.0).tolist() == [0, 0, 0, 0]


def test_mask_bbox_thresholds_and_nan():
    m = np.array([[0, 5, 0], [0, 0, 200]], np.uint8)
    assert lumen.mask_bbox(m, 4.5).tolist() == [1, 0, 3, 2]
    assert lumen.mask_bbox(m, 5).tolist() == [2, 1, 3, 2]
    assert lumen.mask_bbox(m, -1).tolist() == [0, 0, 3, 2]
    f = np.array([[np.nan, 0.1], [0, 0]], np.float32)
    assert lumen.mask_bbox(f).tolist() == [1, 0, 2, 1]
    # float32 masks compare in float32, as NumPy compares a float32 array with a Python float
    assert lumen.mask_bbox(f, 0.1).tolist() == bbox_model(f, 0.1) == [0, 0, 0, 0]


def test_mask_bbox_torch():
    torch = pytest.importorskip("torch")
    m = torch.zeros((2, 9, 11, 1), dtype=torch.bool)
    m[0, 3, 4, 0] = True
    m[1, 8, 0, 0] = True
    assert lumen.mask_bbox(m).tolist() == [[4, 3, 5, 4], [0, 8, 1, 9]]
    assert lumen.mask_bbox(m.to(torch.float32)).tolist() == [[4, 3, 5, 4], [0, 8, 1, 9]]


def test_mask_bbox_errors():
    with pytest.raises(lumen.ArgumentError, match="threshold"):
        lumen.mask_bbox(np.ones((3, 3), np.uint8), float("nan"))
    with pytest.raises((lumen.ArgumentError, TypeError), match="mask"):
        lumen.mask_bbox(np.ones((3, 3), np.int32))


# ---- crop against MONAI's model ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
@pytest.mark.parametrize("margin", [0, 1, (3, 0), (2, 7)])
@pytest.mark.parametrize("k", [1, 4, (3, 5)])
@pytest.mark.parametrize("allow_smaller", [False, True])
def test_crop_matches_monai(dtype, margin, k, allow_smaller):
    rng = np.random.default_rng([np.dtype(dtype).itemsize, len(str(margin)), len(str(k)),
                                 int(allow_smaller)])
    for h, w, count in ((20, 25, 1), (20, 25, 3), (7, 9, 2), (1, 1, 1)):
        img = (rng.random((h, w, 3)) * 200).astype(dtype)
        mask = random_mask(rng, h, w, count)
        want, start, end = monai_crop(chw(img), 0.0, margin, allow_smaller, k, "constant", 0,
                                      source=chw(mask))
        got = lumen.crop(img, mask, margin=margin, k_divisible=k, allow_smaller=allow_smaller)
        assert got.dtype == img.dtype
        np.testing.assert_array_equal(got, hwc(want, img))
        # MONAI's default: the image is its own mask
        want2, _, _ = monai_crop(chw(img * mask[..., None]), 0.0, margin, allow_smaller, k)
        got2 = lumen.crop(img * mask[..., None], margin=margin, k_divisible=k,
                          allow_smaller=allow_smaller)
        np.testing.assert_array_equal(got2, hwc(want2, img))


@pytest.mark.parametrize("border, mode", [("constant", "constant"), ("replicate", "edge"),
                                          ("reflect", "symmetric"), ("reflect101", "reflect")])
def test_crop_pad_matches_monai_modes(border, mode):
    """MONAI pads numpy arrays with np.pad: its modes are lumen's borders (docs/semantics.md),
    for pads no wider than the crop (numpy 1.24's wide pads are wrong, conftest.pad)."""
    rng = np.random.default_rng(11)
    img = rng.random((30, 40)).astype(np.float32)
    mask = np.zeros((30, 40), bool)
    mask[1, 2] = mask[6, 38] = True
    want, _, _ = monai_crop(chw(img), margin=(4, 5), k_divisible=(4, 6), mode=mode, value=0.25,
                            source=chw(mask))
    got = lumen.crop(img, mask, margin=(4, 5), k_divisible=(4, 6), border=border,
                     border_value=0.25)
    np.testing.assert_array_equal(got, want[0])


def test_crop_wrap_is_the_images_not_the_crops():
    """Where MONAI and lumen part (docs/crop.md): MONAI crops, then pads the cropped piece, so
    its 'wrap' repeats the crop; lumen pads by the image's border rule (its filters'), so its
    wrap repeats the image. They agree where the crop spans the whole axis it wraps."""
    rng = np.random.default_rng(12)
    img = rng.random((30, 40)).astype(np.float32)
    mask = np.zeros((30, 40), bool)
    mask[1, 2] = mask[6, 38] = True
    kw = dict(margin=(4, 5), k_divisible=(4, 6))
    got = lumen.crop(img, mask, border="wrap", **kw)
    monai, start, end = monai_crop(chw(img), mode="wrap", source=chw(mask), **kw)
    x0, y0 = int(start[1]), int(start[0])
    win = (x0, y0, int(end[1]), int(end[0]))
    np.testing.assert_array_equal(got, crop_model(img[..., None], win, "wrap")[..., 0])
    # x spans the whole image (-3 .. 45 of 40 columns): the same; y (-4 .. 12 of 30 rows): not
    top = -y0
    np.testing.assert_array_equal(got[top:], monai[0][top:])
    assert not np.array_equal(got[:top], monai[0][:top])


def test_crop_monai_docstring_example():
    """CropForeground's own example: threshold at one, margin 0."""
    image = np.array([[0, 0, 0, 0, 0], [0, 1, 2, 1, 0], [0, 1, 3, 2, 0], [0, 1, 2, 1, 0],
                      [0, 0, 0, 0, 0]], np.float32)
    np.testing.assert_array_equal(lumen.crop(image, threshold=1), [[2, 1], [3, 2], [2, 1]])


def test_crop_empty_mask():
    """MONAI returns a zero-size image for an empty foreground; lumen's images have no zero
    sizes, so it is an error naming the mask, or with empty='whole' the crop of a full mask."""
    img = np.arange(5 * 6 * 3, dtype=np.uint8).reshape(5, 6, 3)
    empty = np.zeros((5, 6), bool)
    start, end = monai_bbox(chw(empty.astype(np.uint8)))
    assert start == end == [0, 0]
    with pytest.raises(lumen.ArgumentError, match="mask.*empty"):
        lumen.crop(img, empty)
    full = np.ones((5, 6), bool)
    for kw in ({}, {"margin": 2}, {"k_divisible": 4, "border": "reflect"}):
        np.testing.assert_array_equal(lumen.crop(img, empty, empty="whole", **kw),
                                      lumen.crop(img, full, **kw))
    np.testing.assert_array_equal(lumen.crop(img, empty, empty="whole"), img)


# ---- lumen's own rules ------------------------------------------------------------------------


def grow(a, b, size):
    d = size - (b - a)
    if d <= 0:
        return a, b
    a -= d // 2
    return a, a + size


def window_model(box, h, w, margin=(0, 0), allow_smaller=False, aspect=0.0, min_size=(0, 0),
                 k=(1, 1), outside="pad"):
    """docs/crop.md's order: margin, allow_smaller, aspect, min_size, k_divisible, outside."""
    x0, y0, x1, y1 = box
    x0, x1, y0, y1 = x0 - margin[1], x1 + margin[1], y0 - margin[0], y1 + margin[0]
    if allow_smaller:
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if aspect:
        bw, bh = x1 - x0, y1 - y0
        if bw < bh * aspect:
            x0, x1 = grow(x0, x1, int(np.ceil(bh * aspect - 1e-6 * max(bh * aspect, 1))))
        elif bh < bw / aspect:
            y0, y1 = grow(y0, y1, int(np.ceil(bw / aspect - 1e-6 * max(bw / aspect, 1))))
    x0, x1 = grow(x0, x1, min_size[1])
    y0, y1 = grow(y0, y1, min_size[0])
    x0, x1 = grow(x0, x1, -(-(x1 - x0) // k[1]) * k[1])
    y0, y1 = grow(y0, y1, -(-(y1 - y0) // k[0]) * k[0])
    if outside == "clip":
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    return x0, y0, x1, y1


def crop_model(img, win, border="constant", value=0.0):
    """The window of img (H x W x C) with the pad of cv2.copyMakeBorder (conftest.pad)."""
    h, w = img.shape[:2]
    x0, y0, x1, y1 = win
    top, left = max(-y0, 0), max(-x0, 0)
    p = pad(img, top, max(y1 - h, 0), left, max(x1 - w, 0), border, value)
    return p[y0 + top:y1 + top, x0 + left:x1 + left]


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("case", range(8))
def test_crop_rules(border, case):
    rng = np.random.default_rng(case * 31 + len(border))
    h, w = (12, 17) if case % 2 else (5, 4)
    img = (rng.random((h, w, 2)) * 1000).astype(np.uint16)
    mask = random_mask(rng, h, w, 1 + case % 3, np.float32) * 0.75
    kw = dict(margin=(case % 3, (case * 2) % 5), allow_smaller=bool(case & 4),
              aspect=[0.0, 1.0, 16 / 9, 0.5][case % 4], min_size=[(0, 0), (9, 3), (2, 30)][case % 3],
              k=[(1, 1), (4, 4), (3, 8)][(case // 2) % 3],
              outside="clip" if case in (3, 6) else "pad")
    win = window_model(bbox_model(mask, 0.5), h, w, **kw)
    want = crop_model(img, win, border, 7)
    kw["k_divisible"] = kw.pop("k")
    got = lumen.crop(img, mask, threshold=0.5, border=border, border_value=7, **kw)
    np.testing.assert_array_equal(got, want.astype(np.uint16))


@pytest.mark.parametrize("border", BORDERS)
def test_crop_window_wider_than_image(border):
    """Pads wider than the image (where numpy.pad is wrong): the border rule of the filters."""
    img = np.arange(3 * 4, dtype=np.float32).reshape(3, 4)
    mask = np.zeros((3, 4), np.uint8)
    mask[1, 1] = 1
    got = lumen.crop(img, mask, min_size=(11, 13), border=border, border_value=-1)
    want = crop_model(img[..., None], window_model([1, 1, 2, 2], 3, 4, min_size=(11, 13)),
                      border, -1)[..., 0]
    np.testing.assert_array_equal(got, want)


def test_crop_batches_layouts_and_forms():
    rng = np.random.default_rng(5)
    imgs = (rng.random((3, 16, 20, 3)) * 255).astype(np.uint8)
    masks = np.zeros((3, 16, 20), bool)
    masks[0, 2:5, 3:7] = masks[1, 10:13, 15:19] = masks[2, 0:3, 0:4] = True
    got = lumen.crop(imgs, masks, margin=1)                      # (N, H, W) mask of NHWC
    assert got.shape == (3, 5, 6, 3)
    for i in range(3):
        np.testing.assert_array_equal(got[i], lumen.crop(imgs[i], masks[i], margin=1))
    nchw = np.ascontiguousarray(imgs.transpose(0, 3, 1, 2))
    got_nchw = lumen.crop(nchw, masks, margin=1, layout="nchw")
    np.testing.assert_array_equal(got_nchw, got.transpose(0, 3, 1, 2))
    one = lumen.crop(imgs, masks[0], margin=1)                   # one mask for the batch
    np.testing.assert_array_equal(one[2], lumen.crop(imgs[2], masks[0], margin=1))
    chw_img = np.ascontiguousarray(imgs[0].transpose(2, 0, 1))
    np.testing.assert_array_equal(lumen.crop(chw_img, masks[0], layout="chw"),
                                  lumen.crop(imgs[0], masks[0]).transpose(2, 0, 1))
    # dtype= converts as the filters store, out= is written
    f = lumen.crop(imgs[0], masks[0], dtype=np.float32)
    np.testing.assert_array_equal(f, lumen.crop(imgs[0], masks[0]).astype(np.float32))
    out = np.empty((3, 4, 3), np.uint8)
    assert lumen.crop(imgs[0], masks[0], out=out) is out
    np.testing.assert_array_equal(out, imgs[0, 2:5, 3:7])
    # windows of different sizes in one batch: a clear error, fixed by min_size
    masks[2, 0:3, 0:9] = True
    with pytest.raises(lumen.ArgumentError, match="differ in size"):
        lumen.crop(imgs, masks)
    assert lumen.crop(imgs, masks, min_size=(8, 10)).shape == (3, 8, 10, 3)


def test_crop_torch_tensors():
    torch = pytest.importorskip("torch")
    img = torch.arange(6 * 7, dtype=torch.float32).reshape(6, 7)
    m = torch.zeros((6, 7), dtype=torch.bool)
    m[2, 3] = True
    np.testing.assert_array_equal(lumen.crop(img, m, margin=1), img.numpy()[1:4, 2:5])


def test_crop_errors():
    img = np.zeros((6, 7), np.uint8)
    m = np.zeros((6, 7), np.uint8)
    m[1, 1] = 1
    for kw, word in (({"margin": -1}, "margin"), ({"k_divisible": 0}, "k_divisible"),
                     ({"aspect": -1.0}, "aspect"), ({"min_size": -3}, "min_size"),
                     ({"outside": "cut"}, "outside"), ({"empty": "none"}, "empty"),
                     ({"threshold": float("nan")}, "threshold")):
        with pytest.raises(lumen.ArgumentError, match=word):
            lumen.crop(img, m, **kw)
    with pytest.raises(lumen.ArgumentError, match="mask"):
        lumen.crop(img, np.zeros((6, 8), np.uint8))
    with pytest.raises(lumen.ArgumentError, match="out"):
        lumen.crop(img, m, out=np.zeros((6, 7), np.uint8))


def test_every_device_gives_the_cpus_answer():
    """The crop ops run on host views on the CPU whatever the context's device (docs/crop.md):
    a context on any device present gives the same pixels and boxes, and says it ran on the CPU."""
    rng = np.random.default_rng(21)
    img = (rng.random((2, 20, 30, 3)) * 255).astype(np.uint8)
    m = np.zeros((2, 20, 30), bool)
    m[0, 3:5, 4:9] = m[1, 12:14, 20:25] = True
    want = lumen.crop(img, m, margin=5, border="reflect")
    for d in lumen.devices():
        ctx = lumen.Context(device=d["spec"])
        np.testing.assert_array_equal(lumen.crop(img, m, margin=5, border="reflect", context=ctx),
                                      want)
        assert lumen.last_run()["device"] == "cpu" and lumen.last_run()["algo"] == "crop"
        # a 3-D mask is H x W x C, as every image: a batch of masks is (N, H, W, 1)
        assert lumen.mask_bbox(m[..., None], context=ctx).tolist() == [[4, 3, 9, 5],
                                                                      [20, 12, 25, 14]]
