"""Drop-in replacements for other libraries' modules, implemented with lumen.

``lumen.compat.phos`` stands in for the ``phos_gpu`` module of Phos-style film-emulation tools:
``from lumen.compat import phos as phos_gpu``.
"""
