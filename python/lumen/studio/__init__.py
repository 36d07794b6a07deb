"""lumen studio: a local web page to try lumen's film effects on an image (docs/studio.md).

    python3 -m lumen.studio [--port N] [--host 127.0.0.1] [--open] [IMAGE]

serves a page on http://127.0.0.1:8765/ with before and after pictures, a stock picker, sliders
for halation, bloom and grain, a seed and a device selector (``lumen.devices()``): the
equivalent of Phos's sidebar GPU switch. Everything is the Python standard library plus lumen
and NumPy; the page's HTML, CSS and JavaScript are in ``static/`` (no outside assets).
"""

from .server import Studio, main, make_test_scene

__all__ = ["Studio", "main", "make_test_scene"]
