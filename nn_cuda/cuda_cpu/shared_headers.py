"""The code's own headers, rewritten as the code is, when one of them declares shared memory the CPU
build takes otherwise than written (`extern __shared__`, `static __shared__`, at file scope).

The CPU runner makes `extern __shared__ T name[];` a reference to its dynamic shared memory, and
marks `__shared__` variables at file scope, by rewriting the source (raw_module.cpu_declarations). A
header the code includes, such as cuda-samples' `sharedmem.cuh` with its `SharedMemory<T>` structs,
is read by the compiler itself, so its declaration stayed as written, and the build stopped
("conflicting specifiers"). Now, when the rewrite changes a header reachable from the code through
`#include "..."`, every such header is copied into the private build cache, rewritten, with its
quoted includes (and the code's) pointing to the copies, and a `#line` directive that keeps the
compiler's messages on the original file and line. The copies' folder is named by their contents,
so an edit of a header makes another build.

A header reached through `#include <...>` is rewritten alike where it is found in the code's own -I
folders and is none of the runner's (ArrayFire's kernels include `<shared.hpp>`, which declares an
`extern __shared__` array, from the folder its options name; the build stopped until 2026-11-27);
the others, and those reached through a macro, are read as they are.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from . import build_cache
from .build import INCLUDE_DIR

#: `#include "name"` or `#include <name>`: the name, and where it stands
_INCLUDE = re.compile(r'^(?P<lead>[ \t]*#[ \t]*include[ \t]*)(?:"(?P<name>[^"\n]+)"|<(?P<angled>[^>\n]+)>)', re.M)
#: the subfolder of the build cache that holds the copies
FOLDER = "headers"


def include_dirs(flags) -> list[Path]:
    """The -I folders of host compiler `flags` (build.host_flags makes them absolute)."""
    return [Path(flag[2:]) for flag in flags if flag.startswith("-I") and len(flag) > 2]


def _resolve(include: re.Match, including: Path | None, folders: list[Path]) -> Path | None:
    """Where the compiler finds an `#include`'s header: for "name", an absolute name where it says,
    else beside the including file, then in the -I folders (the code itself is compiled from a
    temporary folder, so only those); for <name>, in the -I folders, unless it is one of the
    runner's."""
    if include["angled"] is not None:
        name = include["angled"]
        if (INCLUDE_DIR / name).is_file():  # the runner's own (cuda_fp16.h, cub/...), found before the code's
            return None
        return next((candidate.resolve() for candidate in (folder / name for folder in folders)
                     if candidate.is_file()), None)
    name = include["name"]
    if Path(name).is_absolute():
        return Path(name).resolve() if Path(name).is_file() else None
    for folder in ([including.parent] if including is not None else []) + folders:
        candidate = folder / name
        if candidate.is_file():
            return candidate.resolve()
    return None


def _headers(code: str, folders: list[Path]) -> dict[Path, str]:
    """{path: text} of every header reachable from `code` through includes (_resolve)."""
    found: dict[Path, str] = {}
    pending = [(code, None)]
    while pending:
        text, including = pending.pop()
        for include in _INCLUDE.finditer(text):
            path = _resolve(include, including, folders)
            if path is not None and path not in found:
                found[path] = path.read_text(errors="replace")
                pending.append((found[path], path))
    return found


def reachable(code: str, flags) -> dict[Path, str]:
    """{path: text} of every header `code` reaches through includes, with host compiler `flags`."""
    return _headers(code, include_dirs(flags))


def rewritten(code: str, flags, rewrite) -> str:
    """`code`, its includes pointing to rewritten copies of the headers they reach when
    `rewrite` (which keeps a source's lines) changes one of those; else `code` as it is."""
    folders = include_dirs(flags)
    headers = _headers(code, folders)
    if all(rewrite(text) == text for text in headers.values()):
        return code
    digest = hashlib.sha256()
    for path in sorted(headers):
        digest.update(str(path).encode() + b"\0" + headers[path].encode() + b"\0")
    folder = build_cache.folder() / FOLDER / digest.hexdigest()[:16]
    copies = {path: folder / f"{i}_{path.name}" for i, path in enumerate(sorted(headers))}

    def pointing_to_copies(text: str, including: Path | None) -> str:
        def copy_of(include: re.Match) -> str:
            path = _resolve(include, including, folders)
            return include[0] if path not in copies else f'{include["lead"]}"{copies[path]}"'
        return _INCLUDE.sub(copy_of, text)

    folder.mkdir(parents=True, exist_ok=True)
    for path, text in headers.items():
        original = str(path).replace("\\", "\\\\").replace('"', '\\"')
        body = f'#line 1 "{original}"\n' + pointing_to_copies(rewrite(text), path)
        if not copies[path].is_file() or copies[path].read_text() != body:
            temporary = copies[path].with_name(f".{copies[path].name}.{os.getpid()}.part")  # ranks write at once
            temporary.write_text(body)
            temporary.replace(copies[path])
    return pointing_to_copies(code, None)
