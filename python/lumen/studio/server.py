"""The studio's HTTP server and its state (docs/studio.md).

One process holds one image in memory, as float32 in linear light (8- and 16-bit files are
sRGB-decoded once when they are opened, as `lumen film` does; float files are taken as linear),
and one ``lumen.Context`` per device, made on first use and reused. A render request runs
``lumen.film.film`` on the full-size image on the chosen device's context; the result (the one
new full-size array a render needs) is kept for the full-size download, and the page gets a PNG
of it scaled down to at most --display-size pixels on its long side (box-averaged in linear
light, then sRGB-encoded). Requests are served on threads; renders and image loads take one
lock, and the page itself debounces its sliders and keeps at most one render in flight.

Routes (all JSON errors are ``{"error": message}`` with status 400, or 500 for a bug):

    GET  /                  the page (static/index.html); /static/NAME its CSS and JS
    GET  /api/state         stocks, devices, the default device, the image's description
    GET  /api/source.png    the image as opened (display size)
    GET  /api/result.png    the last render at full size (8-bit sRGB PNG)
    POST /api/upload?name=F the request body is an image file named F (the extension picks the
                            format, as lumen.read_image does)
    POST /api/open          {"path": "..."}: an image file on the server's disk
    POST /api/scene         the generated test scene again
    POST /api/render        {"stock", "halation", "bloom", "grain", "seed", "device"} -> PNG,
                            with the render's facts as JSON in the X-Lumen-Render header
"""

import argparse
import hashlib
import itertools
import json
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import webbrowser
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

import lumen
from lumen import film as _film

STATIC_DIR = Path(__file__).resolve().with_name("static")
STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
DEFAULT_PORT = 8765
DEFAULT_DISPLAY_SIZE = 1600
DEFAULT_MAX_UPLOAD_MB = 1024
SCENE_NAME = "test scene (generated)"


class StudioError(Exception):
    """A request the studio refuses; the message is shown in the page."""


# ---- colour ------------------------------------------------------------------------------------


def _srgb_decode(v):
    """sRGB-encoded values in [0, 1] -> linear light (IEC 61966-2-1), float64."""
    v = np.asarray(v, np.float64)
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)


_DECODE_LUTS = {
    np.dtype(np.uint8): _srgb_decode(np.arange(256) / 255.0).astype(np.float32),
    np.dtype(np.uint16): _srgb_decode(np.arange(65536) / 65535.0).astype(np.float32),
}


def to_srgb_u8(x):
    """Linear light (any float array) -> 8-bit sRGB, clipped to [0, 1] first."""
    y = np.clip(x, 0.0, 1.0)
    y = np.where(y <= 0.0031308, y * 12.92, 1.055 * np.power(y, 1 / 2.4) - 0.055)
    return (y * 255.0 + 0.5).astype(np.uint8)


def shrink(x, factor):
    """Box-average H x W (x C) by an integer factor (rows and columns past a multiple are
    dropped). Adds factor^2 strided views into the small result: no full-size temporary."""
    if factor <= 1:
        return x
    h, w = x.shape[0] // factor, x.shape[1] // factor
    acc = np.zeros((h, w) + x.shape[2:], np.float32)
    for i in range(factor):
        for j in range(factor):
            acc += x[i:h * factor:factor, j:w * factor:factor]
    acc *= np.float32(1.0 / (factor * factor))
    return acc


def as_linear_f32(img):
    """An image as lumen.read_image returns it -> (H x W or H x W x 3 float32 linear, note).

    u8/u16 are taken as sRGB and decoded (a table look-up, one pass); f32 is taken as linear.
    A trailing alpha channel is dropped; one channel becomes H x W."""
    a = np.asarray(img)
    if a.ndim == 3:
        c = a.shape[2]
        if c in (1, 2):
            a = a[..., 0]
        elif c in (3, 4):
            a = a[..., :3]
        else:
            raise StudioError(f"the image has {c} channels; the studio takes 1 to 4 "
                              "(gray, gray + alpha, RGB, RGBA)")
    elif a.ndim != 2:
        raise StudioError(f"expected an H x W or H x W x C image, got shape {a.shape}")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise StudioError(f"the image is empty ({a.shape[1]} x {a.shape[0]})")
    lut = _DECODE_LUTS.get(a.dtype)
    if lut is not None:
        return lut[a], f"{a.dtype.name}, sRGB decoded to linear"
    if a.dtype in (np.float32, np.float64):
        return np.ascontiguousarray(a, np.float32), f"{a.dtype.name}, taken as linear"
    raise StudioError(f"unsupported pixel type {a.dtype}")


# ---- the test scene -----------------------------------------------------------------------------


def make_test_scene(width=1200, height=800):
    """A night scene in linear light (H x W x 3 float32 in [0, 1]) whose bright lights make
    halation and bloom easy to see: a dark blue gradient, mid-tone colour patches, a grey ramp,
    white and warm lamps, a red neon ring and a lit window. Deterministic."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    u, v = xx / width, yy / height
    img = np.empty((height, width, 3), np.float32)
    img[..., 0] = 0.010 + 0.02 * v
    img[..., 1] = 0.015 + 0.03 * v
    img[..., 2] = 0.040 + 0.06 * (1 - v) + 0.02 * u

    def box(x0, y0, x1, y1, rgb):
        img[int(y0 * height):int(y1 * height), int(x0 * width):int(x1 * width)] = rgb

    # mid-tone patches (Macbeth-like) along the bottom, a grey ramp below them
    patches = [(0.40, 0.20, 0.15), (0.10, 0.25, 0.45), (0.15, 0.35, 0.10), (0.50, 0.40, 0.05),
               (0.30, 0.12, 0.35), (0.05, 0.35, 0.35), (0.18, 0.18, 0.18), (0.60, 0.60, 0.60)]
    for k, rgb in enumerate(patches):
        box(0.04 + k * 0.115, 0.70, 0.14 + k * 0.115, 0.82, rgb)
    ramp_y0, ramp_y1 = int(0.86 * height), int(0.94 * height)
    img[ramp_y0:ramp_y1, :, :] = np.linspace(0.0, 1.0, width, dtype=np.float32)[None, :, None]

    def disc(cx, cy, r, rgb):
        m = (xx - cx * width) ** 2 + (yy - cy * height) ** 2 <= (r * height) ** 2
        img[m] = rgb

    disc(0.15, 0.20, 0.035, (1.0, 1.0, 1.0))        # white street lamps
    disc(0.32, 0.16, 0.020, (1.0, 1.0, 1.0))
    disc(0.47, 0.22, 0.012, (1.0, 1.0, 1.0))
    disc(0.80, 0.18, 0.045, (1.0, 0.75, 0.35))      # a warm lamp
    ring = np.hypot(xx - 0.62 * width, yy - 0.45 * height)
    img[np.abs(ring - 0.12 * height) <= 0.008 * height] = (1.0, 0.12, 0.10)   # red neon ring
    box(0.10, 0.40, 0.30, 0.58, (0.95, 0.90, 0.70))  # a lit window
    box(0.195, 0.40, 0.205, 0.58, (0.02, 0.02, 0.02))  # its frame
    box(0.10, 0.485, 0.30, 0.495, (0.02, 0.02, 0.02))
    box(0.40, 0.62, 0.95, 0.625, (1.0, 1.0, 1.0))    # a lit edge
    return img


# ---- the state ----------------------------------------------------------------------------------


def _number(params, key, default, lo, hi):
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise StudioError(f"{key}: expected a number, got {value!r}")
    try:
        value = float(value)
    except ValueError:
        raise StudioError(f"{key}: expected a number, got {value!r}") from None
    if not math.isfinite(value) or not lo <= value <= hi:
        raise StudioError(f"{key}: {value} is out of range [{lo}, {hi}]")
    return value


def device_list():
    """lumen.devices() with each device's spec ("cpu", "vulkan:0", ...) and a label for the
    page ("vulkan:0 llvmpipe (LLVM 15.0.6, 256 bits) (software)")."""
    return [{"spec": d["spec"], "name": d["name"], "kind": d["kind"], "backend": d["backend"],
             "index": d["index"], "label": f"{d['spec']} {d['name']} ({d['kind']})"}
            for d in lumen.devices()]


class Studio:
    """The image, the contexts and the last result; thread-safe (one lock)."""

    def __init__(self, threads=None, display_size=DEFAULT_DISPLAY_SIZE):
        self.threads = threads
        self.display_size = int(display_size)
        self.lock = threading.Lock()
        self.contexts = {}
        self.devices = device_list()
        self.default_device = self._default_device()
        self.stocks = _film.stocks()
        self.tmpdir = tempfile.mkdtemp(prefix="lumen-studio-")
        self._scratch = itertools.count()
        self._images = itertools.count(1)
        self.image = None
        self.result = None
        self.load_array(make_test_scene(), SCENE_NAME, "float32, linear")

    def _default_device(self):
        """The device a plain lumen.Context() picks ($LUMEN_DEVICE, else "auto")."""
        try:
            spec = lumen.Context(**self._threads()).device
        except lumen.Error:
            return "cpu"
        specs = [d["spec"] for d in self.devices]
        return spec if spec in specs else "cpu"

    def _threads(self):
        return {} if self.threads is None else {"threads": self.threads}

    def close(self):
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    # -- images

    def load_array(self, linear, name, note):
        """Makes `linear` (float32, linear light) the current image."""
        h, w = linear.shape[:2]
        factor = max(1, math.ceil(max(h, w) / self.display_size))
        source_png = self.encode_png(to_srgb_u8(shrink(linear, factor)))
        with self.lock:
            self.image = linear
            self.result = None
            self.factor = factor
            self.source_png = source_png
            self.image_info = {
                "id": next(self._images), "name": name, "note": note, "width": w, "height": h,
                "channels": 1 if linear.ndim == 2 else linear.shape[2],
                "display_width": w // factor, "display_height": h // factor,
            }
        return self.image_info

    def load_file(self, path, name=None):
        """Reads an image file with lumen.read_image (the extension picks the format)."""
        try:
            img = lumen.read_image(str(path))
        except (lumen.Error, OSError, ValueError, TypeError) as e:
            raise StudioError(str(e)) from None
        linear, note = as_linear_f32(img)
        del img
        return self.load_array(linear, name or Path(path).name, note)

    def scratch(self, suffix):
        return os.path.join(self.tmpdir, f"{next(self._scratch)}{suffix}")

    def encode_png(self, u8):
        """8-bit H x W (x C) -> PNG bytes, through lumen.write_image and a scratch file."""
        path = self.scratch(".png")
        try:
            lumen.write_image(path, np.ascontiguousarray(u8))
            with open(path, "rb") as f:
                return f.read()
        finally:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    # -- rendering

    def context(self, spec):
        """The context for a device spec, made on first use (lumen's message if there is none)."""
        ctx = self.contexts.get(spec)
        if ctx is None:
            try:
                ctx = lumen.Context(device=spec, **self._threads())
            except (lumen.Error, ValueError, TypeError) as e:
                raise StudioError(str(e)) from None
            self.contexts[spec] = ctx
        return ctx

    def render(self, params):
        """Runs lumen.film.film on the full image; returns (display PNG bytes, facts)."""
        stock = params.get("stock", self.stocks[0]["name"] if self.stocks else "")
        if not isinstance(stock, str):
            raise StudioError(f"stock: expected a name, got {stock!r}")
        strengths = {k: _number(params, k, 1.0, 0.0, 2.0) for k in ("halation", "bloom", "grain")}
        seed = _number(params, "seed", 0, 0, 2.0 ** 63)
        if seed != int(seed):
            raise StudioError(f"seed: expected a whole number, got {seed}")
        device = params.get("device") or self.default_device
        if not isinstance(device, str):
            raise StudioError(f"device: expected a spec such as 'cpu', got {device!r}")
        t_all = time.perf_counter()
        with self.lock:
            ctx = self.context(device)
            img = self.image
            self.result = None   # the previous result goes before the next one is made
            t0 = time.perf_counter()
            try:
                out = _film.film(img, stock, seed=int(seed), context=ctx, **strengths)
            except (lumen.Error, ValueError, TypeError, MemoryError) as e:
                raise StudioError(str(e)) from None
            ms = (time.perf_counter() - t0) * 1e3
            run = lumen.last_run() or {}
            self.result = out
            factor = self.factor
            image_id = self.image_info["id"]
        shown = to_srgb_u8(shrink(out, factor))
        png = self.encode_png(shown)
        h, w = img.shape[:2]
        mp = h * w / 1e6
        facts = {
            "ms": round(ms, 2), "ms_per_mp": round(ms / mp, 3), "megapixels": round(mp, 3),
            "width": w, "height": h, "device": run.get("device") or ctx.device,
            "context_device": ctx.device, "method": run.get("method", ""),
            "algo": run.get("algo", ""), "isa": run.get("isa", ""), "threads": run.get("threads"),
            "total_ms": round((time.perf_counter() - t_all) * 1e3, 2),
            "digest": hashlib.sha1(shown.tobytes()).hexdigest()[:16], "image_id": image_id,
            "stock": stock, "seed": int(seed), **strengths,
        }
        return png, facts

    def result_png(self):
        with self.lock:
            out = self.result
        if out is None:
            raise StudioError("nothing rendered yet for this image")
        return self.encode_png(to_srgb_u8(out))

    def state(self):
        return {
            "version": lumen.__version__, "stocks": self.stocks, "devices": self.devices,
            "device": self.default_device, "image": self.image_info,
            "display_size": self.display_size,
        }


# ---- HTTP ---------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    server_version = "lumen-studio"
    protocol_version = "HTTP/1.1"

    # The server object carries .studio, .max_upload and .quiet.
    def log_message(self, fmt, *args):
        if not self.server.quiet:
            sys.stderr.write("lumen studio: %s\n" % (fmt % args))

    def _send(self, status, body, ctype, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj, status=HTTPStatus.OK):
        self._send(status, json.dumps(obj).encode(), "application/json")

    def _error(self, message, status=HTTPStatus.BAD_REQUEST):
        self._json({"error": message}, status)

    def _body(self, limit):
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            raise StudioError("the request has no Content-Length")
        length = int(length)
        if length > limit:
            self.close_connection = True
            raise StudioError(f"the request is {length} bytes; the limit is {limit} "
                              "(--max-upload-mb)")
        return length

    def _read_json(self):
        length = self._body(1 << 20)
        try:
            obj = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as e:
            raise StudioError(f"bad JSON: {e}") from None
        if not isinstance(obj, dict):
            raise StudioError("expected a JSON object")
        return obj

    def _route(self):
        url = urllib.parse.urlsplit(self.path)
        return url.path, urllib.parse.parse_qs(url.query)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path, _ = self._route()
        studio = self.server.studio
        try:
            if path in ("/", "/index.html"):
                return self._static("index.html")
            if path.startswith("/static/"):
                return self._static(path[len("/static/"):])
            if path == "/api/state":
                return self._json(studio.state())
            if path == "/api/source.png":
                return self._send(HTTPStatus.OK, studio.source_png, "image/png")
            if path == "/api/result.png":
                return self._send(HTTPStatus.OK, studio.result_png(), "image/png",
                                  {"Content-Disposition": 'attachment; filename="lumen-film.png"'})
            self._error(f"not found: {path}", HTTPStatus.NOT_FOUND)
        except StudioError as e:
            self._error(str(e))
        except Exception as e:  # a bug: say so in the page rather than drop the connection
            self._error(f"{type(e).__name__}: {e}", HTTPStatus.INTERNAL_SERVER_ERROR)

    def _static(self, name):
        if not re.fullmatch(r"[A-Za-z0-9_-]+\.[a-z]+", name) or \
                Path(name).suffix not in STATIC_TYPES or not (STATIC_DIR / name).is_file():
            return self._error(f"not found: {name}", HTTPStatus.NOT_FOUND)
        body = (STATIC_DIR / name).read_bytes()
        self._send(HTTPStatus.OK, body, STATIC_TYPES[Path(name).suffix])

    def do_POST(self):
        path, query = self._route()
        studio = self.server.studio
        try:
            if path == "/api/render":
                png, facts = studio.render(self._read_json())
                return self._send(HTTPStatus.OK, png, "image/png",
                                  {"X-Lumen-Render": json.dumps(facts)})
            if path == "/api/upload":
                return self._json({"image": self._upload(query.get("name", [""])[0])})
            if path == "/api/open":
                p = self._read_json().get("path")
                if not isinstance(p, str) or not p.strip():
                    raise StudioError("path: give the path of an image file on the server")
                return self._json({"image": studio.load_file(Path(p.strip()).expanduser())})
            if path == "/api/scene":
                self._body(1 << 20)
                self.rfile.read(int(self.headers["Content-Length"]))
                return self._json({"image": studio.load_array(make_test_scene(), SCENE_NAME,
                                                              "float32, linear")})
            self._error(f"not found: {path}", HTTPStatus.NOT_FOUND)
        except StudioError as e:
            self._error(str(e))
        except Exception as e:
            self._error(f"{type(e).__name__}: {e}", HTTPStatus.INTERNAL_SERVER_ERROR)

    def _upload(self, name):
        """Streams the body into a scratch file with the upload's extension, then reads it."""
        suffix = Path(name).suffix.lower()
        length = self._body(self.server.max_upload)
        if not re.fullmatch(r"\.[a-z0-9]{1,5}", suffix):
            self.rfile.read(length)
            raise StudioError(f"'{name}': the file name needs an extension that names its "
                              "format (.png, .jpg, .tif, .webp, .exr, .npy)")
        studio = self.server.studio
        path = studio.scratch(suffix)
        try:
            with open(path, "wb") as f:
                left = length
                while left:
                    chunk = self.rfile.read(min(left, 1 << 20))
                    if not chunk:
                        raise StudioError("the upload was cut short")
                    f.write(chunk)
                    left -= len(chunk)
            return studio.load_file(path, name=Path(name).name)
        except StudioError as e:   # name the upload, not the scratch file
            raise StudioError(str(e).replace(path, name)) from None
        finally:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


class StudioServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, studio, max_upload=DEFAULT_MAX_UPLOAD_MB << 20, quiet=False):
        super().__init__(address, Handler)
        self.studio = studio
        self.max_upload = max_upload
        self.quiet = quiet


# ---- command line -------------------------------------------------------------------------------

DESCRIPTION = """\
lumen studio: a local web page to try lumen's film effects (halation, bloom, grain and the
stocks' tone) on an image, on any device lumen found.

The page shows the image before and after, a stock picker, sliders for the halation, bloom and
grain strengths (0 turns an effect off, 1 is the stock's own, up to 2), a grain seed, and a
device selector listing lumen.devices() (cpu, cuda:N, vulkan:N; "software" devices such as
lavapipe are listed too). Under the pictures: the time of the last render in ms and ms per
megapixel, and the device and method lumen.last_run() reports. Errors (a file lumen cannot
read, a device that is not there) are shown in the page with lumen's message.

Images: upload one from the browser, type a path on this machine's disk, or give IMAGE here
(.png, .jpg, .tif, .webp, .exr, .npy; what lumen.read_image reads). Without one the page starts
on a generated night scene with bright lights, where halation and bloom show. 8- and 16-bit
images are taken as sRGB and decoded to linear light once when opened (as `lumen film` does);
float images (.exr, .npy, float TIFF) are taken as linear.

Renders always run on the full-size image (the time shown is for that); the page shows the
result scaled down to --display-size pixels on its long side, and "Download full size" gives
the full-size result as an 8-bit PNG. The page waits for a slider to rest before it asks for a
render, and never has more than one render in flight.

The server reads any image file this account can read when the page asks it to: keep the
default --host 127.0.0.1 unless you trust everyone who can reach the port."""


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m lumen.studio", description=DESCRIPTION,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("image", nargs="?", metavar="IMAGE",
                    help="the image to open first (default: the generated test scene)")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT,
                    help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free one, printed at start)")
    ap.add_argument("--host", default="127.0.0.1",
                    help="address to listen on (default 127.0.0.1: this machine only)")
    ap.add_argument("--open", action="store_true",
                    help="open the page in the default web browser")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads per lumen context (default: lumen's, lumen_default_threads)")
    ap.add_argument("--display-size", type=int, default=DEFAULT_DISPLAY_SIZE, metavar="PX",
                    help=f"long side of the pictures in the page (default {DEFAULT_DISPLAY_SIZE}); "
                         "renders are always full size")
    ap.add_argument("--max-upload-mb", type=int, default=DEFAULT_MAX_UPLOAD_MB, metavar="MB",
                    help=f"largest upload accepted (default {DEFAULT_MAX_UPLOAD_MB} MB)")
    ap.add_argument("--quiet", action="store_true", help="do not log requests")
    args = ap.parse_args(argv)
    if args.display_size < 16:
        ap.error("--display-size must be at least 16")
    if args.threads is not None and args.threads < 0:
        ap.error("--threads must be >= 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    studio = Studio(threads=args.threads, display_size=args.display_size)
    try:
        if args.image:
            try:
                studio.load_file(args.image)
            except StudioError as e:
                print(f"lumen studio: {e}", file=sys.stderr)
                return 2
        try:
            server = StudioServer((args.host, args.port), studio, args.max_upload_mb << 20,
                                  args.quiet)
        except OSError as e:
            print(f"lumen studio: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
            return 2
        host, port = server.server_address[:2]
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        url = f"http://{'[' + shown + ']' if ':' in shown else shown}:{port}/"
        if host not in ("127.0.0.1", "::1", "localhost"):
            print(f"lumen studio: warning: listening on {host}; anyone who can reach it can "
                  "make this server read image files this account can read", file=sys.stderr)
        devices = ", ".join(d["spec"] for d in studio.devices)
        print(f"lumen studio {lumen.__version__}: {url}  (devices: {devices}; Ctrl+C stops)",
              flush=True)
        if args.open:
            threading.Timer(0.3, webbrowser.open, (url,)).start()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
    finally:
        studio.close()
    return 0
