"""The launch geometry each kernel file declares, one line next to its kernel.

A kernel's block shape (and, for a GEMM, the tile of C one block computes) is a fact of its file, so
it is written there, in terms of the file's own `constexpr int` constants:

    constexpr int TILE = 32;
    ...
    // launch: block (TILE, TILE), C tile (TILE, TILE)
    template <typename T, bool TRANS_A, bool TRANS_B>
    __global__ void gemm_tiled(...)

`block (x, y[, z])` is the threads of a block; `C tile (rows, columns)` the part of C one block
computes (the grid covers C with it). The line belongs to the first `__global__` kernel after it.
The launchers of CuPy, of the CPU runner and of Numba's mirrors all read it from here, so a copy of
kernels/ with another TILE (NN_CUDA_KERNEL_DIR) launches with its own shape and no other edit.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import operator
import re
from pathlib import Path

_CONSTANT = re.compile(r"^\s*constexpr\s+(?:int|unsigned|long|size_t)\s+(\w+)\s*=\s*([^;]+);", re.MULTILINE)
_LAUNCH = re.compile(r"^\s*//\s*launch:\s*(.*)$", re.MULTILINE)
_LAUNCH_FIELDS = re.compile(r"^block\s*\(([^)]*)\)(?:\s*,\s*C tile\s*\(([^)]*)\))?\s*$")
_KERNEL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(")
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.floordiv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}


class GeometryError(ValueError):
    """A kernel file's launch line is missing or cannot be read."""


@dataclasses.dataclass(frozen=True)
class Geometry:
    """How one kernel is launched: threads per block (x, y, z), and for a GEMM the (rows, columns)
    of C one block computes."""

    block: tuple
    tile: tuple | None = None


def _evaluate(text: str, constants: dict, where: str) -> int:
    """An integer expression of literals, the file's constants, + - * / % and parentheses."""

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in constants:
            return constants[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        raise GeometryError(f"{where}: cannot evaluate {text.strip()!r} (integers, + - * / % and the "
                            "file's constexpr int constants only)")

    try:
        return value(ast.parse(text.strip(), mode="eval").body)
    except SyntaxError:
        raise GeometryError(f"{where}: cannot evaluate {text.strip()!r}") from None


def _constants(source: str, where: str) -> dict:
    constants = {}
    for name, expression in _CONSTANT.findall(source):
        try:
            constants[name] = _evaluate(expression.split("//")[0], constants, where)
        except GeometryError:
            continue  # a constant the launch line does not need may use what Python cannot evaluate
    return constants


def parse(source: str, where: str = "<source>") -> dict:
    """kernel name -> Geometry, for every `// launch:` line of a .cu source."""
    constants = _constants(source, where)
    geometries = {}
    for match in _LAUNCH.finditer(source):
        line = source.count("\n", 0, match.start()) + 1
        fields = _LAUNCH_FIELDS.match(match.group(1).strip())
        if not fields:
            raise GeometryError(f"{where}:{line}: a launch line reads '// launch: block (X, Y), C tile (ROWS, COLS)' "
                                f"(the C tile only for a GEMM), got {match.group(1).strip()!r}")
        kernel = _KERNEL.search(source, match.end())
        if not kernel:
            raise GeometryError(f"{where}:{line}: no __global__ kernel after this launch line")
        block = tuple(_evaluate(part, constants, f"{where}:{line}") for part in fields.group(1).split(","))
        block = (block + (1, 1))[:3]
        tile = None
        if fields.group(2):
            tile = tuple(_evaluate(part, constants, f"{where}:{line}") for part in fields.group(2).split(","))
            if len(tile) != 2:
                raise GeometryError(f"{where}:{line}: the C tile is (rows, columns), got {tile}")
        if min(block + (tile or ())) < 1:
            raise GeometryError(f"{where}:{line}: block {block} and tile {tile} must be positive")
        geometries[kernel.group(1)] = Geometry(block, tile)
    return geometries


@functools.lru_cache(maxsize=64)
def _parse_file(path: Path, modified_ns: int, size: int) -> dict:
    return parse(path.read_text(), path.name)


def read(path: Path) -> dict:
    """The geometries of a .cu file, read again whenever the file changes."""
    status = path.stat()
    return _parse_file(path, status.st_mtime_ns, status.st_size)


def of_kernel(path: Path, template: str) -> Geometry:
    """The Geometry of `template` in the .cu file at `path`; GeometryError naming the file if none."""
    geometries = read(path)
    if template in geometries:
        return geometries[template]
    kernels = _KERNEL.findall(path.read_text())
    if template not in kernels:  # renamed or misspelled: the launch line is not what is missing
        raise GeometryError(f"{path} has no __global__ kernel named {template} (it has "
                            f"{', '.join(kernels) or 'none'}): the project launches it by that name, as in kernels/")
    raise GeometryError(
        f"{path} declares no launch geometry for {template}: put a line such as "
        f"'// launch: block (32, 32), C tile (32, 32)' just before its __global__ function"
    )
