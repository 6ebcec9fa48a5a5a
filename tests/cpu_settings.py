"""Check that a CPU setting for the notebook re-runs is really in force.

``make test`` re-executes every chapter with some of NumPy's SIMD code paths
switched off (``NPY_DISABLE_CPU_FEATURES``) and another OpenBLAS kernel
(``OPENBLAS_CORETYPE``), as a student's laptop might have them. A switch that
the libraries silently ignore would prove nothing, so before each re-run this
script asks NumPy and threadpoolctl what actually runs and fails if it is not
what the setting asked for::

    python tests/cpu_settings.py --disabled X86_V3 --coretype Sandybridge

Exit status 0 and one line describing the kernels on success; 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from threadpoolctl import threadpool_info


def numpy_found_features() -> list[str]:
    """The SIMD groups NumPy dispatches to (``np.show_runtime``'s "found")."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]


def blas_architectures() -> list[str]:
    """The kernel architecture of every loaded OpenBLAS, as threadpoolctl reports it."""
    return [
        str(info.get("architecture"))
        for info in threadpool_info()
        if info.get("internal_api") == "openblas"
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--disabled", default="", help="NumPy dispatch groups expected off")
    parser.add_argument("--coretype", default="", help="OpenBLAS kernel expected")
    args = parser.parse_args(argv)

    problems = []
    found = numpy_found_features()
    env_disabled = os.environ.get("NPY_DISABLE_CPU_FEATURES", "")
    for group in args.disabled.split():
        if group not in env_disabled.replace(",", " ").split():
            problems.append(f"NPY_DISABLE_CPU_FEATURES does not name {group}")
        if group in found:
            problems.append(f"NumPy still dispatches to {group}")
    archs = blas_architectures()
    if not archs:
        problems.append("no OpenBLAS found by threadpoolctl")
    if args.coretype:
        if os.environ.get("OPENBLAS_CORETYPE", "") != args.coretype:
            problems.append(f"OPENBLAS_CORETYPE is not {args.coretype}")
        if any(a.lower() != args.coretype.lower() for a in archs):
            problems.append(f"OpenBLAS runs {archs}, not {args.coretype}")
    if problems:
        print("CPU setting not in force: " + "; ".join(problems), file=sys.stderr)
        return 1
    groups = found or ["baseline only"]
    print(f"NumPy {np.__version__} dispatches to {groups}; OpenBLAS kernel {archs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
