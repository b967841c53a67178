"""The CUDA major version of every NVIDIA wheel installed, so that a mix of CUDA 12 and 13 is caught.

One environment must hold the libraries of one CUDA major version. With CUDA 12 and CUDA 13 wheels
side by side, cuda-pathfinder loads whichever NVRTC it finds first: CuPy and Numba then compile with
one release and link or load with the other (nvJitLink refuses PTX of a newer release), and every
Numba kernel fails on a GPU. The project installs CUDA 12 everywhere (setup.cfg); a GPU backend and
`scripts/gpu_check.py` call `check_one_major()` first and stop with one line naming the wheels.

A wheel's major version is read from its name where it carries one (cupy-cuda12x, nvidia-*-cu12)
and from its version where the version is CUDA's own (cuda-toolkit, cuda-bindings, cuda-python, and
the unsuffixed nvidia-cuda-*, nvidia-nvjitlink, nvidia-nvvm and nvidia-cublas wheels of CUDA 13).
Other wheels (numbered by their library's own release, like nvidia-cufft 12.x of CUDA 13) are not
judged.
"""

from __future__ import annotations

import importlib.metadata
import re

#: unsuffixed NVIDIA wheels whose version number is the CUDA release they belong to
_VERSIONED_BY_CUDA = re.compile(r"cuda-toolkit|cuda-bindings|cuda-python|nvidia-cuda-.+|nvidia-nvjitlink|"
                                r"nvidia-nvvm|nvidia-cublas")

#: what to install instead of a mix
FIX = ("install into a fresh virtual environment with pip install -e '.[mpi,dev,gpu]' "
       "(all CUDA 12), or pip uninstall the wheels of the other major version")


class MixedCudaVersions(RuntimeError):
    """NVIDIA wheels of more than one CUDA major version are installed."""


def cuda_major(name: str, version: str) -> int | None:
    """The CUDA major version a distribution belongs to, or None where it says nothing about it."""
    name = re.sub(r"[-_.]+", "-", name).lower()
    cupy = re.fullmatch(r"cupy-cuda(\d+)x", name)
    if cupy:
        return int(cupy[1])
    suffix = re.fullmatch(r"nvidia-.+-cu(\d+)", name)
    if suffix:
        return int(suffix[1])
    if _VERSIONED_BY_CUDA.fullmatch(name):
        major = re.match(r"\d+", version)
        return int(major[0]) if major else None
    return None


def installed_majors(distributions=None) -> dict[int, list[str]]:
    """{CUDA major version: ['name version', ...]} over the installed distributions (or the
    (name, version) pairs given)."""
    if distributions is None:
        distributions = ((d.metadata["Name"], d.version) for d in importlib.metadata.distributions())
    majors: dict[int, set] = {}
    for name, version in distributions:
        if not name:
            continue
        major = cuda_major(name, version)
        if major is not None:
            majors.setdefault(major, set()).add(f"{name} {version}")
    return {major: sorted(names) for major, names in sorted(majors.items())}


def check_one_major(distributions=None) -> int | None:
    """The one CUDA major version installed (None when no NVIDIA wheel is); MixedCudaVersions when
    there are several, naming the wheels of each."""
    majors = installed_majors(distributions)
    if len(majors) > 1:
        listed = "; ".join(f"CUDA {major}: {', '.join(names)}" for major, names in majors.items())
        raise MixedCudaVersions(f"NVIDIA wheels of {len(majors)} CUDA major versions are installed ({listed}); "
                                f"CuPy and Numba would compile with one and load with the other: {FIX}")
    return next(iter(majors), None)
