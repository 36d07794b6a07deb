#!/usr/bin/python3
"""Writes the fuzzers' seed corpora into tests/fuzz/corpus/<harness>/ (docs/fuzzing.md).

Decoders: small valid files of each layout the reader supports, written by Debian's OpenCV and
NumPy (not by lumen, so the seeds are what other programs write), plus hostile ones built by
hand: truncated files, headers that promise huge images (a PNG IHDR of 2147483647 x 1 with a
valid CRC and no data), trailing garbage. Op harnesses: byte strings that select each op,
dtype, border and method (their input layout is documented at the top of fuzz_ops.c and
fuzz_conv.c). Files are named by content, so re-running adds nothing that is already there.

Usage: /usr/bin/python3 tests/fuzz/make_corpus.py [corpus-dir]
"""
import hashlib
import os
import struct
import sys
import zlib

os.environ.setdefault("OPENCV_IO_ENABLE_OPENEXR", "1")  # before cv2 is imported
import cv2  # noqa: E402
import numpy as np  # noqa: E402

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
rng = np.random.default_rng(12)


def put(harness, data, name):
    d = os.path.join(ROOT, harness)
    os.makedirs(d, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    with open(os.path.join(d, f"{name}-{digest}"), "wb") as f:
        f.write(data)


def encode(ext, img, params=()):
    ok, buf = cv2.imencode(ext, img, list(params))
    assert ok, ext
    return buf.tobytes()


def images(dtype, channels=(1, 3, 4), h=7, w=5):
    hi = np.iinfo(dtype).max if np.issubdtype(dtype, np.integer) else 1.0
    for c in channels:
        shape = (h, w) if c == 1 else (h, w, c)
        yield c, (rng.random(shape) * hi).astype(dtype)


def hostile(harness, valid):
    """Truncations of a valid file: the header only, half, all but the last byte."""
    put(harness, valid[: min(len(valid), 16)], "truncated-header")
    put(harness, valid[: len(valid) // 2], "truncated-half")
    put(harness, valid[:-1], "truncated-last-byte")
    put(harness, valid + b"garbage" * 3, "trailing-garbage")


def png_chunk(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(
        ">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)


def png_corpus():
    for dtype in (np.uint8, np.uint16):
        for c, img in images(dtype, (1, 3, 4)):
            put("fuzz_png", encode(".png", img), f"{np.dtype(dtype).name}-c{c}")
    palette = encode(".png", (rng.random((6, 6)) * 4).astype(np.uint8) * 60)
    put("fuzz_png", palette, "gray-few-levels")
    hostile("fuzz_png", encode(".png", next(images(np.uint8, (3,)))[1]))
    # issue 12: a 68-byte PNG whose header claims 2147483647 x 1 pixels (valid CRC, IDAT of a
    # few bytes): must be refused before 2 GB are allocated
    sig = b"\x89PNG\r\n\x1a\n"
    for w, h, name in ((2147483647, 1, "huge-2147483647x1"), (30000, 30000, "bomb-30000x30000"),
                       (0, 1, "zero-width")):
        ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
        idat = zlib.compress(b"\x00" * 16)
        put("fuzz_png", sig + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat) +
            png_chunk(b"IEND", b""), name)


def jpeg_corpus():
    for c, img in images(np.uint8, (1, 3), h=16, w=16):
        put("fuzz_jpeg", encode(".jpg", img, (cv2.IMWRITE_JPEG_QUALITY, 90)), f"u8-c{c}")
    put("fuzz_jpeg", encode(".jpg", next(images(np.uint8, (3,), 9, 11))[1],
                            (cv2.IMWRITE_JPEG_PROGRESSIVE, 1)), "progressive")
    hostile("fuzz_jpeg", encode(".jpg", next(images(np.uint8, (3,), 8, 8))[1]))
    # SOF0 claiming 65535 x 65535 (JPEG's largest) with no scan data
    soi, eoi = b"\xff\xd8", b"\xff\xd9"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, 65535, 65535, 1) + b"\x01\x11\x00"
    put("fuzz_jpeg", soi + sof + eoi, "huge-65535x65535")


def tiff_corpus():
    for dtype in (np.uint8, np.uint16, np.float32):
        for c, img in images(dtype, (1, 3, 4)):
            put("fuzz_tiff", encode(".tif", img), f"{np.dtype(dtype).name}-c{c}")
    hostile("fuzz_tiff", encode(".tif", next(images(np.uint16, (3,)))[1]))
    # a little-endian TIFF whose one IFD says 2^31 - 1 x 2^31 - 1, 8-bit gray, one strip
    entries = [(256, 4, 1, 0x7FFFFFFF), (257, 4, 1, 0x7FFFFFFF), (258, 3, 1, 8), (259, 3, 1, 1),
               (262, 3, 1, 1), (273, 4, 1, 8), (277, 3, 1, 1), (278, 4, 1, 0x7FFFFFFF),
               (279, 4, 1, 16)]
    ifd = struct.pack("<H", len(entries)) + b"".join(
        struct.pack("<HHII", t, ty, n, v) for t, ty, n, v in entries) + b"\0\0\0\0"
    put("fuzz_tiff", b"II*\0" + struct.pack("<I", 8 + 16) + b"\0" * 16 + ifd, "huge-ifd")


def npy_bytes(arr, fortran=False, header_override=None):
    descr = np.lib.format.dtype_to_descr(arr.dtype)
    shape = header_override if header_override is not None else arr.shape
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    header = header.encode() + b" " * (63 - (len(header) + 10) % 64) + b"\n"
    data = np.asfortranarray(arr).tobytes(order="F") if fortran else arr.tobytes()
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def npy_corpus():
    for dtype in (np.uint8, np.uint16, np.float32, np.float64):
        for c, img in images(dtype, (1, 3)):
            put("fuzz_npy", npy_bytes(img), f"{np.dtype(dtype).name}-c{c}")
    put("fuzz_npy", npy_bytes(rng.random((4, 3, 2), dtype=np.float32), fortran=True), "fortran")
    put("fuzz_npy", npy_bytes(rng.random((2, 3, 4, 5), dtype=np.float32)), "tensor-4d")
    put("fuzz_npy", npy_bytes(rng.random(6, dtype=np.float32)), "tensor-1d")
    hostile("fuzz_npy", npy_bytes(next(images(np.uint16, (3,)))[1]))
    put("fuzz_npy", npy_bytes(np.zeros((1, 1), np.uint8), header_override=(2147483647, 1)),
        "huge-shape")
    put("fuzz_npy", npy_bytes(np.zeros((1, 1), np.uint8), header_override=(4096, 4096, 4096)),
        "huge-3d")
    put("fuzz_npy", npy_bytes(np.zeros((1, 1), np.uint8), header_override=(-1, 3)),
        "negative-shape")
    # f16 (<f2), fixed values: no draw from rng, so the files above stay as they were
    put("fuzz_npy", npy_bytes((np.arange(24, dtype=np.float16) / 7).reshape(2, 4, 3)), "float16-c3")


def webp_corpus():
    for c, img in images(np.uint8, (3, 4), h=9, w=8):
        put("fuzz_webp", encode(".webp", img, (cv2.IMWRITE_WEBP_QUALITY, 80)), f"lossy-c{c}")
        put("fuzz_webp", encode(".webp", img, (cv2.IMWRITE_WEBP_QUALITY, 101)), f"lossless-c{c}")
    hostile("fuzz_webp", encode(".webp", next(images(np.uint8, (3,), 8, 8))[1]))


def exr_corpus():
    for c, img in images(np.float32, (1, 3, 4), h=6, w=5):
        put("fuzz_exr", encode(".exr", img), f"float-c{c}")
        put("fuzz_exr", encode(".exr", img, (cv2.IMWRITE_EXR_TYPE, cv2.IMWRITE_EXR_TYPE_HALF)),
            f"half-c{c}")
    hostile("fuzz_exr", encode(".exr", next(images(np.float32, (3,)))[1]))


def ops_corpus():
    # fuzz_ops.c: op, hostile (7), src dtype, dst dtype, layouts, n, c, h, w, border, value (2),
    # context, method, convolve, kw, kh, ax, ay, sigma x, sigma y, halo (3: on) and its four
    # margins, ... (zeros after the end)
    for op in range(5):
        for st, dt in ((0, 0), (1, 2), (2, 2), (0, 2), (2, 1)):
            for border in range(5):
                put("fuzz_ops", bytes([op, 0, st, dt, (op * 5 + border) % 16, 1, 2, 12, 9,
                                       border, 40, 1, border % 3, (op + border) % 4, border & 1,
                                       4 + op, 2 + border, 3, 1, 40, 20]),
                    f"op{op}-{st}{dt}-b{border}")
        put("fuzz_ops", bytes([op, 7, 2, 2, 0, 0, 1, 5, 5, 5]), f"op{op}-hostile")
        # a halo (3 of 4), margins top, bottom, left, right; then the overlap byte
        for border in (0, 3):
            put("fuzz_ops", bytes([op, 0, 2, 2, 0, 0, 1, 12, 9, border, 40, 1, border % 3, 0, 1,
                                   5, 4, 1, 2, 40, 20, 3, 2, 1, 0, 3]),
                f"op{op}-halo-b{border}")
    # fuzz_conv.c: transposed, hostile (3), context, layouts, n, c, h, w, k, r, s, strides,
    # pads, dilations, groups, output pads, bias
    for tr in (0, 1):
        for g in (0, 1, 2):
            put("fuzz_conv", bytes([tr, 0, g % 3, g * 5, 1, 2, 7, 6, 3, 2, 2, g % 3, 1, 1, 0,
                                    g % 2, 1, g, 1, 1, 1]), f"conv{tr}-g{g}")
        put("fuzz_conv", bytes([tr, 3, 0, 0, 0, 0, 3, 3, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                1, 4]), f"conv{tr}-hostile")


def crop_corpus():
    # fuzz_crop.c: hostile (0 of 8), dtypes (src, mask, dst), layouts (src, mask, dst), n, c, h,
    # w, mask form, threshold, margins, allow_smaller, aspect, min sizes (a choice, then the
    # size), k, outside, border, value, empty, threads, then foreground pixels
    for border in range(5):
        for form in range(4):
            put("fuzz_crop", bytes([1, border % 3, form % 3, (border + form) % 3, form, border % 4,
                                    (form + 1) % 4, form % 2, 2, 9, 11, form, border % 7, 2,
                                    form, form & 1, (border + form) % 6, 0, 5, 1, 2, border % 2,
                                    border, 1, form % 2, 1, 4, 1, 3, 5, 2, 7, 8, 1, 1]),
                f"crop-b{border}-f{form}")
    put("fuzz_crop", bytes([0, 2, 2, 0, 1, 2, 3, 1, 3, 11, 11, 2, 4, 1, 1, 0, 4, 0, 1, 4, 4]),
        "crop-hostile")


if __name__ == "__main__":
    for fn in (png_corpus, jpeg_corpus, tiff_corpus, npy_corpus, webp_corpus, exr_corpus,
               ops_corpus, crop_corpus):
        fn()
    for d in sorted(os.listdir(ROOT)):
        print(f"{d}: {len(os.listdir(os.path.join(ROOT, d)))} files")
