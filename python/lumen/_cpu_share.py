"""Sharing the CPU with the program (README, "Sharing the CPU with your program").

OpenMP's idle threads (libgomp) spin for milliseconds after each parallel region unless told
otherwise, and inside a busy program those spins take the cores its own work needs. libgomp
reads its environment once, when it is loaded, so the wait policy is set here, in os.environ,
before lumen's extension (and with it libgomp) is loaded, and taken out again afterwards so
that child processes inherit the user's environment. Where another module (cv2, torch) loaded
libgomp first, it is too late: libgomp's default stands and cpu_wait_policy() says so.
"""

import ctypes
import os

#: GOMP_SPINCOUNT lumen asks for: a few microseconds (src/core/internal.h, LUMEN_OMP_SPINCOUNT).
SPINCOUNT = "100"

#: The soname lumen's extension links (a wheel's vendored libgomp-<hash>.so is another copy,
#: with its own settings, that does not run lumen's threads).
LIBGOMP = "libgomp.so.1"


def _libgomp_loaded():
    """Whether libgomp is in this process already (and so has read its environment)."""
    try:
        ctypes.CDLL(LIBGOMP, mode=os.RTLD_NOLOAD)
        return True
    except (OSError, AttributeError):  # not loaded, or no RTLD_NOLOAD on this platform
        return False


def _user_policy():
    parts = [f"{k}={os.environ[k]}" for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
             if os.environ.get(k)]
    return " ".join(parts)


def before_extension():
    """Sets GOMP_SPINCOUNT unless the user chose a wait policy or libgomp is already loaded.
    Returns (the policy text, whether it was set here)."""
    user = _user_policy()
    if user:
        return f"{user} (the environment)", False
    if _libgomp_loaded():
        return ("libgomp's default (spins about 3 ms after each region): OpenMP was loaded "
                "before lumen; import lumen first or set OMP_WAIT_POLICY=passive"), False
    os.environ["GOMP_SPINCOUNT"] = SPINCOUNT
    return f"GOMP_SPINCOUNT={SPINCOUNT} (lumen's default)", True


def after_extension(was_set):
    """Takes lumen's setting out of the environment again (libgomp has read it)."""
    if was_set and os.environ.get("GOMP_SPINCOUNT") == SPINCOUNT:
        del os.environ["GOMP_SPINCOUNT"]
