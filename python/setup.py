"""Builds lumen's Python package with the project's CMake (the extension links the C library).

    /usr/bin/python3 -m pip install --no-build-isolation ./python

pip builds in place (pip >= 21.3), so the repository root is this file's parent folder.
LUMEN_CMAKE_BUILD_DIR=<dir> reuses an existing CMake build tree (e.g. `build`) instead of
configuring a fresh one in the setuptools build folder.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Runs CMake for the target `lumen_python` and copies the module where setuptools wants it."""

    def build_extension(self, ext):
        if not (ROOT / "CMakeLists.txt").exists():
            sys.exit(f"lumen: {ROOT} is not the lumen repository; install with "
                     "`pip install --no-build-isolation ./python` from a checkout")
        build = Path(os.environ.get("LUMEN_CMAKE_BUILD_DIR") or Path(self.build_temp) / "cmake")
        build = build if build.is_absolute() else ROOT / build
        if not (build / "CMakeCache.txt").exists():
            subprocess.check_call([
                "cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                "-DLUMEN_TESTS=OFF", f"-DPython3_EXECUTABLE={sys.executable}",
            ] + (["-G", "Ninja"] if shutil.which("ninja") else []))
        subprocess.check_call(["cmake", "--build", str(build), "--target", "lumen_python",
                               "-j", str(os.cpu_count() or 1)])
        built = build / "python" / "lumen" / Path(self.get_ext_filename("_lumen")).name
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)
        self.copy_backend_modules(build, target.parent)

    def copy_backend_modules(self, build, package_dir):
        """Backend modules (liblumen_cuda.so, when nvcc was found) go next to the extension,
        where lumen looks for them at run time; the build tree's copy is not there after pip."""
        if subprocess.call(["cmake", "--build", str(build), "--target", "lumen_cuda"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) != 0:
            print("lumen: no CUDA backend module built (no nvcc); CPU only")
        for module in sorted((build / "lumen-modules").glob("liblumen_*.so")):
            shutil.copyfile(module, package_dir / module.name)
            print(f"lumen: backend module {module.name}")


setup(
    name="lumen",
    version="0.1.0",
    description="Fast image convolution and filtering (OpenCV semantics) for NumPy and DLPack",
    packages=["lumen", "lumen.compat", "lumen.studio"],
    package_dir={"": "."},
    # PEP 561: the stubs generated from the op descriptors, and the marker that says so; the
    # studio's page (python3 -m lumen.studio).
    package_data={"lumen": ["py.typed", "*.pyi"], "lumen.studio": ["static/*"]},
    ext_modules=[CMakeExtension("lumen._lumen")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)
