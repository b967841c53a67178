"""Launching the CPU build of a kernel: arguments as CUDA passes them, and the checking mode.

`LoadedKernels(library, tool_path, check)` runs the instances of a library loaded by
`build.load_code` by their index: every argument is passed by address in an array of pointers, as
cuLaunchKernel takes them. RawModule (raw_module.py) is how every caller gets one, the cuda-cpu
backend included.

Checking mode (`check=True`, what NN_CUDA_CPU_CHECK=1 turns on):
- each array argument is copied into memory of its own with inaccessible pages right after its end
  and before its first page, so a read or write past the end (or far before the start) faults at
  once; inputs (const pointers) are made read-only, so a write to one faults too; the fault is
  reported with the kernel, block, thread and the argument it missed;
- outputs the kernel must not read (`KernelLaunch.write_only`: C when beta == 0, `out` arrays) and
  every __shared__ array are filled with NaN first; an output that still holds NaN afterwards, from
  inputs without NaN, means the kernel read poisoned memory or left an element unwritten; the launch
  then runs again with one __shared__ array NaN-filled at a time, to name the array it came from;
- the threads of a block run in a random (seeded) order between barriers, and every launch runs
  twice, in such an order and in the same order backwards, from the same inputs (arguments and the
  code's global variables put back): if the outputs differ in any bit, the kernel has
  a race (threads of a block touching the same memory between two barriers, as when a
  __syncthreads() is missing), which is reported with the first element that differs.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import math
import mmap
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from .. import host_compiler
from ..errors import KernelFailure
from . import device_heap, device_memory, fiber_stacks
from .build import THREADS_VARIABLE, demangled, threads_from_environment

#: runtime.h's name of each scalar parameter type -> how ctypes passes it
SCALAR_CTYPES = {
    "int": ctypes.c_int32, "long long": ctypes.c_int64, "float": ctypes.c_float, "double": ctypes.c_double,
    "bool": ctypes.c_bool, "char": ctypes.c_byte, "char (unsigned)": ctypes.c_ubyte, "signed char": ctypes.c_byte,
    "unsigned char": ctypes.c_ubyte, "short": ctypes.c_short, "unsigned short": ctypes.c_ushort,
    "unsigned int": ctypes.c_uint, "long": ctypes.c_long, "unsigned long": ctypes.c_ulong,
    "unsigned long long": ctypes.c_ulonglong,
    # a parameter of a function's address (cuda-samples' FunctionPointers): its 8 bytes, as CuPy passes
    # a numpy.uint64 read from a __device__ table of them (get_global)
    "function pointer": ctypes.c_ulonglong,
}
#: runtime.cpp's fault codes for a thread that outgrew its stack (kStackOverflow), and for a
#: general-protection fault (kGeneralProtection), which has no address
_STACK_OVERFLOW, _GENERAL_PROTECTION = 1000, 1001
#: runtime.cpp's status of a launch that ran to its end with a shuffle from a lane with no value
_UNDEFINED_LANE_READ = 3
#: what the checking mode fills __shared__ memory with before every block: all-ones bytes (NaN as a
#: float or a double, -1 as a signed integer) in the first run; 0x7F bytes in the mirrored run (a large
#: positive number as every type: 3.4e38 as a float, 1.4e306 as a double, 2,139,062,143 as an int),
#: which fmaxf, a comparison or a max cannot drop as they drop a NaN
POISON_FILL, MIRRORED_FILL = 0xFF, 0x7F
#: what runtime.cpp's reports of a write or an atomic past the end of extern __shared__ memory say,
#: found by the fill that follows that memory
_PAST_DYNAMIC_SHARED = "past the end of its extern __shared__ memory"
#: half the magnitude of MIRRORED_FILL's bytes as a float (3.4e38): an atomic sum that large holds the fill
_FILL_MAGNITUDE = float(np.frombuffer(bytes([MIRRORED_FILL]) * 4, np.float32)[0]) / 2
_SIGNALS = {
    _STACK_OVERFLOW: ("a thread's local variables outgrew its stack (64 KiB each on the CPU runner), or an index "
                      "past the end of a local array wrote over it: a large local array? Put it in __shared__ or "
                      "global memory; NN_CUDA_CPU_CHECK=1 names an index out of bounds"),
    _GENERAL_PROTECTION: ("a misaligned vector access (a general-protection fault: a float4, double2 or other "
                          "16-byte type loaded or stored at an address that is no multiple of 16)"),
    4: ("an index outside an array of fixed size (__shared__, __constant__, __device__ or local; trapped by "
        "-fsanitize=bounds, which checks every index against its own dimension: `s[0][i]` of a `float s[4][8]` "
        "with i up to 31, as MAGMA's symv kernels index a 2-D array as one block, stays within the array and "
        "runs on a GPU; write it `(&s[0][0])[i]` to have the checking mode check it; and it stops where code only "
        "takes the address of an element past the end, `float* p = &s[i]` for every thread where only some read "
        "through p, which a GPU runs: write `s + i` there)"),  # SIGILL
    7: "a misaligned or invalid memory access",  # SIGBUS
    8: "an arithmetic fault (an integer division by zero, or INT_MIN / -1, which overflows; a GPU gives a value "
       "for both)",  # SIGFPE
    11: "an invalid memory access",  # SIGSEGV
}
#: the signals of an access to memory: the checking mode names the buffer an address is near
_MEMORY_FAULTS = (7, 11)
#: format -> how far two thread orders of a kernel that uses atomics may differ, relative
#: to the array's largest magnitude: a sum of a few thousand terms in another order (float32: 2^-24
#: per addition; float64: 2^-53), of about a hundred in float16 (2^-11), a few dozen in bfloat16 (2^-8)
ROUNDING_RTOL = {"float16": 5e-2, "bfloat16": 1e-1, "float32": 1e-4, "float64": 1e-12}


#: the 16-bit floats of cuda_fp16.h and cuda_bf16.h and their pairs, as a signature names them ->
#: the format of their 2-byte items (NumPy has float16; a bfloat16 array is its bits, uint16)
NARROW_FLOATS = {"__half": "float16", "__half2": "float16", "__nv_bfloat16": "bfloat16", "__nv_bfloat162": "bfloat16"}


def float_values(array: np.ndarray, c_type: str) -> tuple[np.ndarray | None, str | None]:
    """(the floats an argument holds, their format), or (None, None) for an array of no floats. A
    bfloat16 array is its bits (uint16) to NumPy: the signature ("__nv_bfloat16*") says it is one. A
    complex array's are its real and imaginary parts, along a last axis of 2 (MAGMA's zherk sums
    them by atomics)."""
    narrow = NARROW_FLOATS.get(c_type.replace("const ", "").rstrip("*"))
    if narrow == "bfloat16":
        return (array.view(np.uint16).astype(np.uint32) << 16).view(np.float32), narrow
    if narrow == "float16":
        return array.view(np.float16), narrow
    if array.dtype.kind == "f":
        return array, array.dtype.name
    if array.dtype.kind == "c":
        parts = array.view(np.dtype(f"f{array.dtype.itemsize // 2}")).reshape(array.shape + (2,))
        return parts, parts.dtype.name
    return None, None


def elements_that_differ(before: np.ndarray, now: np.ndarray, c_type: str, rounding: bool,
                         atomic_magnitude: float) -> np.ndarray:
    """A flat mask of the elements of `now` that differ from `before` in their bits; with `rounding`
    (the kernel used atomics, so its floating-point sums may come in another order), floats may differ
    by what summing in another order rounds: ROUNDING_RTOL of the array's largest finite magnitude, or
    of the largest an atomicAdd of floats found or added (`atomic_magnitude`), whichever is larger
    (an infinity, a shortest path's distance to a vertex not reached, is equal only to itself: it was
    the scale until 2026-11-28, which passed every finite element and failed the infinity). `c_type`
    (the parameter's) tells the 16-bit floats."""
    values_before, format_name = float_values(before, c_type)
    if rounding and format_name is not None:
        values_now = float_values(now, c_type)[0]
        finite = np.abs(values_before[np.isfinite(values_before)])
        scale = max(float(finite.max(initial=0.0)), atomic_magnitude if math.isfinite(atomic_magnitude) else 0.0)
        with np.errstate(invalid="ignore"):
            differs = ~((values_before == values_now)
                        | (np.abs(values_before - values_now) <= ROUNDING_RTOL[format_name] * scale)
                        | (np.isnan(values_before) & np.isnan(values_now)))
        return differs.reshape(max(now.size, 1), -1).any(axis=1)  # a complex element's two parts: one
    return (before.reshape(-1).view(np.uint8) != now.reshape(-1).view(np.uint8)).reshape(max(now.size, 1), -1).any(
        axis=1)  # 0-d arrays too


#: seconds a launch may run before it is stopped (0: no limit)
WATCHDOG_VARIABLE = "NN_CUDA_CPU_WATCHDOG"
DEFAULT_WATCHDOG_SECONDS = 60.0
_MESSAGE_BYTES = 2048


#: what assert_no_address_kept calls memory the kernels allocated
_ALLOCATED = "memory a kernel allocated with malloc or new"


#: the race check's variable
RACE_CHECK_VARIABLE = "NN_CUDA_CPU_RACECHECK"


class KernelError(KernelFailure):
    """A kernel faulted, broke a barrier, or (checking mode) read poisoned memory."""


class KernelTimeout(KernelError):
    """The watchdog stopped a launch still running after NN_CUDA_CPU_WATCHDOG seconds."""


def check_mode_from_environment() -> bool:
    """NN_CUDA_CPU_CHECK=1, or the race check (which runs in the checking mode)."""
    return os.environ.get("NN_CUDA_CPU_CHECK", "0") not in ("", "0") or race_check_from_environment()


def race_check_from_environment() -> bool:
    """NN_CUDA_CPU_RACECHECK=1: the checking mode, and in it every load and store looked at (runtime.cpp, "races")."""
    return os.environ.get(RACE_CHECK_VARIABLE, "0") not in ("", "0")


def watchdog_from_environment() -> float:
    """$NN_CUDA_CPU_WATCHDOG: the seconds a launch may run (DEFAULT_WATCHDOG_SECONDS; 0: no limit)."""
    text = os.environ.get(WATCHDOG_VARIABLE, "")
    if not text:
        return DEFAULT_WATCHDOG_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < 1e9:
        raise ValueError(f"{WATCHDOG_VARIABLE}={text!r} is not a number of seconds; set it to one (0: no limit) or "
                         "unset it")
    return seconds


def _seed_from_environment() -> int:
    """$NN_CUDA_CPU_SEED (the checking mode's thread orders), 0 by default."""
    text = os.environ.get("NN_CUDA_CPU_SEED", "0")
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"NN_CUDA_CPU_SEED={text!r} is not a whole number; set it to one (it picks the "
                         "checking mode's thread orders) or unset it") from None


@contextlib.contextmanager
def _device_printf_silenced():
    """The kernels' printf thrown away (the C library's stdout, which every launch flushes at its
    end): the checking mode runs a launch again, and a GPU prints each line once."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _nothing_to_describe(address: int) -> str:
    return ""


class LoadedKernels:
    """The instances of one loaded library, launched by their index in its instance table."""

    def __init__(self, library: ctypes.CDLL, tool_path: str, check: bool, cooperative: bool = False):
        self.check = check
        self.cooperative = cooperative  # every launch keeps its grid resident (grid_group::sync)
        self._lib = library
        self.tool_path = tool_path  # the library as another process (nm, addr2line) reads it
        self._lib.nn_cuda_cpu_signature.restype = ctypes.c_char_p
        self._lib.nn_cuda_cpu_undefined_lane_read.restype = ctypes.c_char_p
        self._lib.nn_cuda_cpu_bounds_detail.restype = ctypes.c_char_p
        self._lib.nn_cuda_cpu_atomic_sum_magnitude.restype = ctypes.c_double
        self._lib.nn_cuda_cpu_atomic_before_address.restype = ctypes.c_size_t
        self._lib.nn_cuda_cpu_atomic_before_thread.restype = ctypes.c_char_p
        #: built for the race check (build.RACE_CHECK_FLAGS): its first run of each checked launch looks at
        #: every load and store
        self.race_check = hasattr(self._lib, "nn_cuda_cpu_race_found")
        self._seeds = itertools.count(_seed_from_environment() * 1_000_003)
        self.watchdog = watchdog_from_environment()
        self.threads = 1 if check or cooperative else threads_from_environment()
        self._told_once_only: set[str] = set()  # kernels whose launches the checking mode runs once
        self._told_reordered: set[str] = set()  # kernels whose results came in another order (atomic slots)
        self._reached: list[tuple[np.ndarray, np.ndarray]] = []  # (device array, its bytes before the launch)
        self._first_variables: list[bytes] | None = None  # the code's variables after a checked first run
        self._runs_before_launch = 0  # the runtime's runs of launches before the last launch (device_heap)
        self._variables: _GlobalVariables | None = None  # found when first needed (_code_variables)
        # what every launch passes, made once: the instances' signatures, the fault record, the message
        self._signatures = [self.signature(index) for index in range(self.count())]
        self._fault = (ctypes.c_longlong * 9)()
        self._message = ctypes.create_string_buffer(_MESSAGE_BYTES)
        layout = (ctypes.c_size_t * 2)()  # bytes per stack, stacks
        self._lib.nn_cuda_cpu_stack_layout(layout)
        self._lib.nn_cuda_cpu_use_stacks(ctypes.c_void_p(fiber_stacks.process_stacks(layout[0], layout[1])),
                                         ctypes.c_size_t(layout[1]))
        if check or cooperative:  # blocks that take turns copy their __shared__ arrays in and out
            self._set_shared_regions(poisoned=check)
        ranges = self._code_functions()
        #: a thread that runs on without stopping is made to yield (runtime.cpp, "preemption"; x86-64 Linux)
        self.preempts = bool(self._lib.nn_cuda_cpu_set_preemptible(ranges.ctypes.data_as(ctypes.c_void_p),
                                                                   ctypes.c_size_t(len(ranges))))

    def preemptions(self) -> int:
        """How many times a thread of this process's launches of the library was made to yield, having
        run on without stopping (runtime.cpp, "preemption")."""
        self._lib.nn_cuda_cpu_preemptions.restype = ctypes.c_ulonglong
        return self._lib.nn_cuda_cpu_preemptions()

    def _code_functions(self) -> np.ndarray:
        """The address ranges [first, end) of the code's own functions in the loaded library, in order,
        where a thread that runs on without stopping may be made to yield (runtime.cpp, "preemption"):
        its functions less the runner's (_runner_function); none (no preemption) without nm."""
        if shutil.which("nm") is None:
            return np.zeros((0, 2), np.uintp)
        symbols = _symbol_table(self.tool_path, "the code's functions are found")
        start = self._load_address(symbols)
        ranges = sorted((start + value, start + value + size)
                        for name, (_, value, size, kind, section) in symbols.items()
                        if kind == "FUNC" and size > 0 and section == ".text" and not _runner_function(name))
        merged: list[list[int]] = []
        for first, end in ranges:
            if merged and first <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([first, end])
        return np.array(merged, np.uintp).reshape(-1, 2)

    def count(self) -> int:
        """How many instances the library holds."""
        return self._lib.nn_cuda_cpu_instance_count()

    def signature(self, index: int) -> tuple:
        """The C parameter types of instance `index`, as runtime.h names them: ('const float*', 'int')."""
        text = self._lib.nn_cuda_cpu_signature(index).decode()
        return tuple(text.split(",")) if text else ()

    def dynamic_shared_capacity(self) -> int:
        """The bytes of the runtime's extern __shared__ region (the most a launch may ask for)."""
        self._lib.nn_cuda_cpu_dynamic_shared_capacity.restype = ctypes.c_size_t
        return self._lib.nn_cuda_cpu_dynamic_shared_capacity()

    def resident_blocks(self, threads: int) -> int:
        """How many blocks of `threads` threads of a cooperative launch the runtime keeps resident."""
        self._lib.nn_cuda_cpu_resident_blocks.restype = ctypes.c_size_t
        return self._lib.nn_cuda_cpu_resident_blocks(ctypes.c_size_t(threads))

    def assert_no_address_kept(self, kernel: str, copies: list[tuple[int, int, str]], checking: bool,
                               outputs: list[tuple[str, np.ndarray]] = ()) -> None:
        """KernelError when, after a launch, a variable of the code, or one of `outputs` ((name, array)
        each: the arrays the launch wrote), holds an address within one of `copies` ((start, end, the
        argument's name) each): the memory the launch passed for an argument and frees when it ends,
        which a later launch reading through the address would find gone. A GPU's array keeps its
        address (Altis's ray tracer keeps its list of spheres in a __device__ object that the next
        kernel walks; LightGBM's tree kernels leave pointers into their histograms in a pool of
        pointers that the next launch reads through)."""
        if not copies:
            return
        variables = self._code_variables()
        holders = [(symbol, address, size) for address, size, symbol in variables.regions]
        # an address is kept in 8 bytes: an array of 8-byte integers (or of pointers), or of structs
        holders += [(name, array.ctypes.data, array.nbytes) for name, array in outputs
                    if (array.dtype.kind in "iu" and array.itemsize == 8 or array.dtype.kind == "V")
                    and array.flags.c_contiguous and array.ctypes.data % 8 == 0]
        # and what this launch allocated with new or malloc (the ray tracer's list of spheres, given an
        # argument's address); not what earlier launches did, which may hold what was their own copy
        allocated = device_heap.allocations(self._lib)
        allocated = allocated[allocated[:, device_heap.RUN] > self._runs_before_launch]
        holders += [(_ALLOCATED, int(row[device_heap.ADDRESS]), int(row[device_heap.SIZE]) // 8 * 8)
                    for row in allocated if row[device_heap.ADDRESS] % 8 == 0]
        for holder, address, size in holders:  # read in place: this runs after every launch
            if size < 8:
                continue
            words = np.ctypeslib.as_array((ctypes.c_uint64 * (size // 8)).from_address(address))
            for start, end, argument in copies:
                inside = np.flatnonzero((words >= start) & (words < end))
                if inside.size:
                    where = 8 * int(inside[0])
                    how = ("the checking mode runs every launch on guarded copies of its arrays, device memory "
                           "too, freed when it ends, so code that keeps an address for a later launch cannot be "
                           "checked: run it outside the checking mode (without NN_CUDA_CPU_CHECK, "
                           f"{RACE_CHECK_VARIABLE} and check=True), its arrays in device memory"
                           if checking else
                           "a NumPy array is copied to the runner's device memory for each launch, as "
                           "cupy.asarray copies it to a GPU, and the copy is freed when the launch ends: pass "
                           "the array as device memory (nn_cuda.cuda_cpu.device_memory.to_device(array)), which "
                           "keeps its address between launches as a CuPy array does")
                    if holder not in dict(outputs) and holder != _ALLOCATED:  # a variable's symbol, demangled
                        holder = f"the variable `{demangled([holder])[0]}`"    # only now: this runs often
                    raise KernelError(
                        f"{kernel}: {holder} (its bytes {where} to {where + 7}) holds an address within {argument} "
                        f"as this launch passed it, which a later launch reading through it would find gone: {how}")

    def take_variables(self, other: LoadedKernels) -> None:
        """The values of `other`'s variables (a build of the same code with fewer instances) in this
        library's variables of the same names: a module rebuilt for a kernel asked for by its mangled
        name keeps what get_global wrote (reset to their initial values until 2026-11-27; ccminer's
        keccak256 reads its target from a __constant__ one)."""
        mine = {symbol: (address, size) for address, size, symbol in self._code_variables().regions}
        theirs = other._code_variables()
        for symbol, contents in theirs.named(theirs.save()):
            if symbol in mine and mine[symbol][1] == len(contents):
                ctypes.memmove(mine[symbol][0], contents, len(contents))

    def _code_variables(self) -> _GlobalVariables:
        """The code's __device__ and __constant__ variables (found with nm once; none without nm)."""
        if self._variables is None:
            if shutil.which("nm") is None:
                return _GlobalVariables([])
            symbols = _symbol_table(self.tool_path, "the code's variables are found")
            base, runtime_data = self._load_address(symbols), linked_cpp_runtime_data(symbols)
            self._variables = _GlobalVariables(
                [(base + value, size, name) for name, (kind, value, size, elf_type, section) in symbols.items()
                 if _code_variable(name, kind, size, elf_type, section) and name not in runtime_data])
        return self._variables

    def global_variable(self, name: str) -> np.ndarray:
        """The bytes of the library's global variable `name` (a __device__ or __constant__ one at
        global scope): a uint8 view of the library's own memory, writable unless the variable is
        `const`. LookupError if none."""
        symbols = _symbol_table(self.tool_path, "RawModule.get_global finds variables")
        sizes = {symbol: size for symbol, (kind, _, size, _, _) in symbols.items() if kind in _DATA_KINDS + "rR"}
        if "<" in name or "::" in name:  # a variable template's instance (`mask<float>`), or one in a namespace
            # (`N1::N2::V2`): found by its demangled name
            wanted = name.replace(" ", "")
            mangled = [symbol for symbol in sizes if symbol.startswith("_Z")]
            name = next((symbol for symbol, text in zip(mangled, demangled(mangled))
                         if text.replace(" ", "") == wanted), name)
        # One of internal linkage (`static`, or `const` at namespace scope) has a local symbol of its
        # mangled name, _ZL6hidden, which the dynamic loader does not see; NVRTC names it `hidden` in
        # the PTX, as any other, where CuPy's get_global finds it.
        symbol = name if name in sizes else f"_ZL{len(name)}{name}"
        if symbol not in sizes:
            raise LookupError(f"no __device__ or __constant__ variable {name!r} at global scope in this code")
        kind, value, _, _, section = symbols[symbol]
        address = self._load_address(symbols) + value
        variable = np.ctypeslib.as_array((ctypes.c_ubyte * sizes[symbol]).from_address(address))
        # A `const` one is in read-only memory here: its bytes can be read, not written (a write would
        # fault). On a GPU they can be written, though the kernels have its value compiled in as here.
        variable.flags.writeable = not (kind in "rR" or section.startswith(".data.rel.ro"))
        return variable

    def launch(self, index: int, launch, names: list[str]) -> None:
        """Run instance `index` with `launch` (kernel, grid, block, args, signature, write_only:
        a kernel_launch.KernelLaunch or alike, its arguments already checked); `names` name its
        parameters in messages. KernelError when it faults or breaks a barrier."""
        self._runs_before_launch = device_heap.last_run(self._lib)
        # the bytes of extern __shared__ (RawModule's shared_mem; the project's kernels use none)
        self._lib.nn_cuda_cpu_set_dynamic_shared(ctypes.c_size_t(getattr(launch, "shared_mem", 0)))
        self._lib.nn_cuda_cpu_set_watchdog(ctypes.c_double(self.watchdog))
        # per launch, as the watchdog: two modules of one library may have been made with different settings
        self._lib.nn_cuda_cpu_set_workers(ctypes.c_size_t(self.threads))
        self._lib.nn_cuda_cpu_set_cooperative(int(self.cooperative))
        if self.check:
            self._launch_checked(index, launch, names)
        else:
            lane_read = self._call(index, launch, None, _nothing_to_describe) == _UNDEFINED_LANE_READ
            if lane_read and launch.kernel not in self._told_once_only:
                read = self._lib.nn_cuda_cpu_undefined_lane_read()
                self._told_once_only.add(launch.kernel)
                print(f"nn_cuda: {launch.kernel}: {read.decode()}: a GPU gives an undefined value there, the CPU "
                      "runner all-ones bytes (NaN as a float); NN_CUDA_CPU_CHECK=1 tells whether it reaches a "
                      "result", file=sys.stderr)

    def _launch_checked(self, index: int, launch, names: list[str]) -> None:
        """The checking mode's launch: twice from the same start (arguments and global variables), in
        a random order of threads and blocks and in that order backwards: a race-free kernel writes
        the same bits both times, or, when it adds
        floating-point values atomically, the same values up to the rounding that depends on their
        order. Not when a struct argument holds a pointer to memory that is no argument and no device
        memory: it is neither guarded nor put back between the runs, and a second run would start
        from the first one's results. Device memory (device_memory.empty's arrays, as a CuPy array's
        pointer would be) that such a pointer reaches is put back before each run and compared, and so
        is the device heap, where such a pointer reaches it (device_heap.py)."""
        self._first_variables = None  # set once this launch's first run has left them
        self._variables.heap = None
        variables = self._variables.save()
        with self._frees_deferred(), _CheckedBuffers(launch, names) as buffers, self._atomics_watched_before(buffers), \
                self._device_memory_reached(launch, names, variables) as (held, reached):
            buffers.held = held
            start = buffers.snapshot()
            seed = next(self._seeds)
            try:
                with self._races_watched(buffers):
                    self._call(index, launch, buffers.pointers(), buffers.describe_fault, seed)
            except KernelTimeout:
                raise
            except KernelError as error:
                race = self._race_found(launch, buffers)
                if race:
                    raise KernelError(race) from None
                # a write past extern __shared__ memory is found by the fill it changed: with zeros there a
                # write of zeros shows no more, which is no read of the fill (HOOMD's FIRE partial sums)
                found_by_its_fill = _PAST_DYNAMIC_SHARED in str(error)
                unwritten = [] if found_by_its_fill else \
                    self._fault_after_unwritten_shared(index, launch, buffers, (start, variables, seed))
                if not unwritten:
                    raise
                raise KernelError(_following_unwritten_shared(error, unwritten, "the launch ends without it")) from None
            self._assert_no_atomic_before(buffers)
            try:
                buffers.assert_nothing_written_before()
            except KernelError as error:  # an index read from __shared__ memory no thread wrote: -1 in its fill
                unwritten = self._write_before_after_unwritten_shared(index, launch, buffers, (start, variables, seed))
                if not unwritten:
                    raise
                raise KernelError(_following_unwritten_shared(error, unwritten,
                                                              "no byte before the array is written")) from None
            buffers.heap = self._variables.heap = device_heap.after_first_run(self._lib)
            beginning = (start, variables, seed)
            if reached is not None:  # nothing held, or device memory only: put back and compared
                first = buffers.snapshot()
                self._first_variables = self._variables.save()
                first_reached = [_bytes_copy(array) for array in reached]
                # the same orders backwards: of two threads (or blocks) writing one place, the one
                # that wrote first there writes last here
                first_magnitude = self._lib.nn_cuda_cpu_atomic_sum_magnitude()
                self._run_mirrored(index, launch, buffers, beginning)
                self._assert_same_results(buffers, first, first_magnitude,
                                          lambda: self._shared_read_unwritten(index, launch, buffers, beginning),
                                          lambda: self._shared_fill_read(index, launch, buffers, beginning, first),
                                          lambda: self._lane_read_reach(index, launch, buffers, beginning, first))
                self._assert_reached_same(launch, held, reached, first_reached, first_magnitude)
                if buffers.integer_outputs():
                    self._assert_fills_unread(index, launch, buffers, beginning, first)
            elif launch.kernel not in self._told_once_only:
                self._told_once_only.add(launch.kernel)
                holders = _holders_of(held)
                holds = "holds a pointer" if len(holders) == 1 else "each hold a pointer"
                print(f"nn_cuda: checking mode: {launch.kernel}: {' and '.join(holders)} {holds} to memory that is "
                      "no argument: the checking mode neither guards it nor puts it back, so the kernel ran once, "
                      "its threads in one order (no comparison of two orders; memory of "
                      "nn_cuda.cuda_cpu.device_memory, as a CuPy array's, is compared)", file=sys.stderr)
            buffers.copy_back()
            self.assert_no_address_kept(launch.kernel, buffers.copy_spans(), checking=True,
                                        outputs=[(names[i], launch.args[i]) for i in sorted(buffers.outputs)])
            buffers.assert_no_poison_left(lambda: self._shared_read_unwritten(index, launch, buffers, beginning),
                                          lambda: self._nan_without_fills(index, launch, buffers, beginning))

    @contextlib.contextmanager
    def _races_watched(self, buffers):
        """The race check's run: every load and store of the arguments' copies and of __shared__ memory
        looked at (nothing where the library is not built for it)."""
        if not self.race_check:
            yield
            return
        # an input's copy is read-only (a write to it faults), so its reads race with nothing
        spans = [value for copy in set(buffers.copies.values()) if not copy.read_only
                 for value in (copy.start, copy.end)]
        spans += [value for address, size, _ in self._code_variables().regions for value in (address, address + size)]
        self._lib.nn_cuda_cpu_set_race_spans((ctypes.c_size_t * max(1, len(spans)))(*spans),
                                             ctypes.c_size_t(len(spans) // 2))
        self._lib.nn_cuda_cpu_set_race_tracking(1)
        try:
            yield
        finally:
            self._lib.nn_cuda_cpu_set_race_tracking(0)
            self._lib.nn_cuda_cpu_set_race_spans(None, ctypes.c_size_t(0))

    def _race_found(self, launch, buffers) -> str | None:
        """The race check's report of the race the last run ended at, or None."""
        if not self.race_check:
            return None
        found = (ctypes.c_ulonglong * 16)()
        kind = self._lib.nn_cuda_cpu_race_found(found)
        if kind == 0:
            return None
        address, earlier_site, later_site, earlier_tid, later_tid, *threads, first, end = list(found)
        earlier, later, block = (tuple(threads[i:i + 3]) for i in (0, 3, 6))
        global_word = buffers.word_at(address) or self._variable_word_at(first, end)
        what = global_word or self._shared_word_at(first, end)
        earlier_at = self.source_at(earlier_site - 1) or " at a line not known"
        later_at = self.source_at(later_site - 1) or " at a line not known"
        warp = "" if earlier_tid // 32 != later_tid // 32 else " nor a __syncwarp() (they are lanes of one warp)"
        first, then, hazard = _RACE_KINDS[kind]
        order = (f"thread {earlier} of block {block} {first} it{earlier_at}, and thread {later} {then} it{later_at}, "
                 f"with no __syncthreads(){warp} between: on a GPU the {hazard}")
        sanitizer = ("compute-sanitizer's racecheck looks at __shared__ memory only, so a GPU reports this one "
                     "nowhere" if global_word else "compute-sanitizer's racecheck reports this one on a GPU")
        return (f"{launch.kernel}: a race on {what} ({RACE_CHECK_VARIABLE}=1): {order}. Threads that add to one place "
                "(s += x) need atomicAdd or a reduction; a thread that reads what another wrote needs a barrier "
                "between, and in a loop also between one pass's last access and the next pass's first (a thread "
                f"that runs ahead into the next pass overwrites what a slower one still reads) ({sanitizer})")

    def _variable_word_at(self, first: int, end: int) -> str | None:
        """How a race report names the bytes [first, end) of a __device__ variable of the code, or None."""
        for start, size, symbol in self._code_variables().regions:
            if start <= first < start + size:
                return f"the variable `{demangled([symbol])[0]}`, its bytes {first - start} to {end - 1 - start}"
        return None

    def _shared_word_at(self, first: int, end: int) -> str:
        """How a race report names the bytes [first, end) of __shared__ memory (within the array)."""
        for (start, size, _), name in zip(self._shared, _demangled(n for _, _, n in self._shared)):
            if start <= first < start + size:
                return f"{name}, its bytes {first - start} to {end - 1 - start}"
        dynamic = ctypes.c_size_t()
        self._lib.nn_cuda_cpu_dynamic_shared_at(ctypes.byref(dynamic))
        return f"extern __shared__ memory, its bytes {first - dynamic.value} to {end - 1 - dynamic.value}"

    @contextlib.contextmanager
    def _frees_deferred(self):
        """While a launch runs again, memory it frees that an earlier run or launch allocated with malloc or
        new is freed after its last run: once, not once a run (device_heap.py)."""
        self._lib.nn_cuda_cpu_heap_defer_frees(1)
        try:
            yield
        finally:
            self._lib.nn_cuda_cpu_heap_defer_frees(0)

    @contextlib.contextmanager
    def _atomics_watched_before(self, buffers):
        """The bytes before each array watched for atomics during the checked runs (runtime.h,
        watched_spans): an atomicAdd of 0 there changes none of them, so only its address tells. And
        the floating-point arrays (float_spans), where an atomicCAS swaps floats or doubles."""
        copies = set(buffers.copies.values())
        spans = [bound for copy in copies for bound in (copy.base + copy.guard, copy.start)]
        self._lib.nn_cuda_cpu_watch_before((ctypes.c_size_t * max(1, len(spans)))(*spans),
                                           ctypes.c_size_t(len(spans) // 2))
        # a complex array's parts are floats too (MAGMA's zatomic_add adds each part by a CAS)
        parts = {copy: copy.array.itemsize // (2 if copy.array.dtype.kind == "c" else 1) for copy in copies
                 if copy.array.dtype.kind in "fc"}
        floats = [field for copy, part in parts.items() if part in (4, 8) for field in (copy.start, copy.end, part)]
        self._lib.nn_cuda_cpu_watch_floats((ctypes.c_size_t * max(1, len(floats)))(*floats),
                                           ctypes.c_size_t(len(floats) // 3))
        try:
            yield
        finally:
            self._lib.nn_cuda_cpu_watch_before(None, ctypes.c_size_t(0))
            self._lib.nn_cuda_cpu_watch_floats(None, ctypes.c_size_t(0))

    def _assert_no_atomic_before(self, buffers) -> None:
        """KernelError when an atomic of the launch reached the bytes right before an array."""
        address = self._lib.nn_cuda_cpu_atomic_before_address()
        if address:
            where = buffers.describe_fault(address).removeprefix(": an access ")
            raise KernelError(
                f"{buffers.launch.kernel}: an atomic operation {where}, in "
                f"{self._lib.nn_cuda_cpu_atomic_before_thread().decode()} (an index of -1, such as a[i - 1] at "
                "i = 0? compute-sanitizer reports an invalid global write on a GPU; an atomicAdd of 0 changes no "
                "byte, so the checking mode watches the atomics there)")

    def _assert_same_results(self, buffers, first, first_magnitude: float, find_shared_read_unwritten,
                             find_shared_fill_read, find_lane_read_reach) -> None:
        """The two checked runs' results alike (_CheckedBuffers.assert_same_as); where they differ and
        one run's value is NaN from NaN-free inputs and
        `find_shared_read_unwritten()` names the __shared__ arrays whose fill it is, they are (a
        missing first barrier of a tiled GEMM: the run in which the block's thread 0 reads first
        takes the fill of the tile others had not stored yet); else where `find_shared_fill_read()`
        (_shared_fill_read) finds the arrays whose other fill of the mirrored run made the difference,
        it names them (a max over a reduction's tail that no thread wrote: fmaxf drops the NaN); else
        where a shuffle read a lane with no value to give (all ones in one run, zeros in the other) and
        `find_lane_read_reach()` (_lane_read_reach) finds an output that this alone changes, that read
        is named as the cause."""
        try:
            magnitude = self._atomic_magnitude(first_magnitude)
            atomics = bool(self._lib.nn_cuda_cpu_atomics_used())
            reordered = buffers.assert_same_as(first, atomics=atomics, atomic_magnitude=magnitude)
            self._variables.assert_same_as(self._first_variables, buffers.launch, atomics)
            if reordered and buffers.launch.kernel not in self._told_reordered:
                self._told_reordered.add(buffers.launch.kernel)
                print(f"nn_cuda: checking mode: {buffers.launch.kernel}: {'; '.join(reordered)} after the two "
                      "thread orders (results at slots the threads took by atomics, a counter's or a hash table's "
                      "atomicCAS, which go in the order the threads came, on a GPU too): compared as a set",
                      file=sys.stderr)
        except KernelError as race:
            read = self._lib.nn_cuda_cpu_undefined_lane_read()
            found = buffers.first_difference(first)
            if found is not None and buffers.inputs_finite and "nan" in (found[2], found[3]):
                shared = find_shared_read_unwritten()
                if shared:
                    raise KernelError(buffers.first_run_nan_report(first, found, shared)) from race
            report = find_shared_fill_read()
            if report:
                raise KernelError(report) from race
            reached = None if read is None else find_lane_read_reach()
            if reached is None:
                raise
            raise KernelError(
                f"{buffers.launch.kernel}: {read.decode()}, whose value is undefined on a GPU, and the value "
                f"changes the result ({reached}): a shuffle may read only the lanes of its mask that have not "
                "returned, and in a partial last warp only the lanes the block has") from race

    @contextlib.contextmanager
    def _device_memory_reached(self, launch, names: list[str], variables: list[bytes]):
        """(what holds a pointer to memory that is no argument (_held_pointers: an argument, or one of
        the code's `variables` as saved), the device arrays those pointers reach, with every live
        allocation of the device heap where one reaches that, or None where one reaches other memory)
        for the launch; while it runs, _run_again puts those arrays back as they were before it."""
        held = _held_pointers(launch, names, self._variables.named(variables))
        addresses = np.concatenate([addresses for *_, addresses in held]) if held else np.zeros(0, np.uint64)
        reached = device_memory.arrays_holding(addresses)
        if reached is None:  # and the device heap (a list a kernel built with new, its head in a variable)
            devices = np.array([device_memory.arrays_holding([a]) is not None for a in addresses], bool)
            if device_heap.holds_all(self._lib, addresses[~devices]):
                reached = [*device_memory.arrays_holding(addresses[devices]), *device_heap.live_memory(self._lib)]
        self._reached = [] if reached is None else [(array, _bytes_copy(array)) for array in reached]
        try:
            yield held, reached
        finally:
            self._reached = []

    def _atomic_magnitude(self, first_magnitude: float) -> float:
        """The largest magnitude the two checked runs' atomic float sums found or added: the first run's
        (`first_magnitude`), or the mirrored run's where it is no sum onto that run's fill (3.4e38)."""
        mirrored_magnitude = self._lib.nn_cuda_cpu_atomic_sum_magnitude()
        return max(first_magnitude, mirrored_magnitude if mirrored_magnitude < _FILL_MAGNITUDE else 0.0)

    def _assert_reached_same(self, launch, held, reached, first_reached, first_magnitude: float) -> None:
        """KernelError where device memory that a held pointer reaches differs after the two runs: bit
        for bit, or, for floats where the kernel used atomics, beyond what their order rounds (as
        _assert_same_results compares the arguments)."""
        atomics, magnitude = bool(self._lib.nn_cuda_cpu_atomics_used()), self._atomic_magnitude(first_magnitude)
        heap = self._variables.heap
        for array, before in zip(reached, first_reached):
            allocated = not device_memory.holds(array)  # memory of the device heap, whose words may be addresses
            if allocated and array.nbytes % 8 == 0 and array.ctypes.data % 8 == 0:
                array, before = array.view(np.uint64), before.view(np.uint64)
            differs = device_heap.same_words(before, array, elements_that_differ(before, array, "", atomics, magnitude),
                                             heap)
            if differs.any():
                element = int(np.argmax(differs))
                start = array.ctypes.data  # the holders of a pointer into this array (ArrayFire passes 2-4 structs)
                holders = _holders_of(held, start, array.nbytes) or _holders_of(held)
                reach = "reaches" if len(holders) == 1 else "reach"
                if allocated:  # of no known type: its bytes, in hexadecimal
                    size = array.itemsize
                    place = (f"bytes {element * size} to {element * size + size - 1} of {_ALLOCATED}, which "
                             f"{' and '.join(holders)} {reach}, hold {int(before[element]):#x}")
                    now = f"{int(array[element]):#x}"
                else:
                    place = (f"element {element} of the device memory that {' and '.join(holders)} {reach} is "
                             f"{_value_text(before[element])}")
                    now = _value_text(array[element])
                raise KernelError(
                    f"{launch.kernel}: the result depends on the order in which {_who_takes_turns(launch.grid)} run "
                    f"between barriers ({place} in one order and {now} in another): threads race on __shared__ or "
                    "global memory, e.g. a __syncthreads() is missing, or blocks share global memory that one of "
                    "them writes" + (ORDER_OF_ATOMICS if atomics else ""))

    def _run_again(self, index, launch, buffers, beginning, mirrored=False) -> None:
        """The checked launch once more from `beginning` (its arguments, the code's global variables
        and its first run's seed; the orders backwards when `mirrored`), its printf thrown away: a
        GPU prints each line once; device memory that a held pointer reaches as it was before the
        launch (_device_memory_reached)."""
        start, variables, seed = beginning
        buffers.restore(start)
        self._variables.restore(variables)
        for array, contents in self._reached:
            array.reshape(-1).view(np.uint8)[...] = contents.reshape(-1).view(np.uint8)  # its padding too
        with _device_printf_silenced():
            self._call(index, launch, buffers.pointers(), buffers.describe_fault, seed, mirrored)

    def _run_mirrored(self, index, launch, buffers, beginning) -> None:
        """The checking mode's second run: from `beginning`, in the first run's orders backwards, with
        __shared__ memory filled with MIRRORED_FILL bytes (the first run's fill is NaN, which fmaxf, a
        comparison or a max drops: a read of the tail no thread wrote then still changes an output).
        When it ends in a KernelError that it does not end in with the first run's fill, in the same
        order, the error is the fill's: a __shared__ value no thread wrote taken as an index or a
        count, named as such (with the arrays whose fill alone ends the first run's order in an error,
        where it is not a timeout). The fills are 0xFF bytes again after."""
        everything = range(len(self._shared))
        shared = bool(self._shared) or self._dynamic_shared(launch)
        try:
            self._fill_shared(everything, dynamic=True, fill=MIRRORED_FILL)
            self._run_again(index, launch, buffers, beginning, mirrored=True)
            return
        except KernelError as error:
            if not shared:
                raise
            failure = error
        finally:
            self._fill_shared(everything, dynamic=True)
        try:
            self._run_again(index, launch, buffers, beginning, mirrored=True)
        except KernelError:
            raise failure from None  # the order's, not the fill's
        arrays = [] if isinstance(failure, KernelTimeout) else self._shared_fills_that(
            lambda: self._ends_in_error(index, launch, buffers, beginning), _dynamic_shared_name(launch),
            fill=MIRRORED_FILL, others=POISON_FILL)
        raise KernelError(
            f"{failure}; with __shared__ memory filled with 0x{POISON_FILL:02X} bytes instead of "
            f"0x{MIRRORED_FILL:02X} bytes (-1 or 2,139,062,143 as an int) the launch ends without it: the kernel "
            f"read {' and '.join(arrays) or '__shared__ memory'} where no thread of the block had written it and "
            "took the value as an index or a count (a __syncthreads() missing before that read, or an element no "
            "thread writes?)") from None

    def _ends_in_error(self, index, launch, buffers, beginning) -> bool | None:
        """Whether the launch, run again as it ran first (`beginning`) with the fills as they are now
        set, ends in a KernelError (None: in a timeout, no answer)."""
        try:
            self._run_again(index, launch, buffers, beginning)
        except KernelTimeout:
            return None
        except KernelError:
            return True
        return False

    def _shared_fill_read(self, index, launch, buffers, beginning, first) -> str | None:
        """The report of __shared__ memory read where no thread of the block had written it, whose
        fill reaches an output without a NaN (fmaxf, a comparison or a max drop NaN): the launch runs
        again as it ran first (`beginning`: its order too, so no race can differ) with the mirrored
        run's MIRRORED_FILL; where an output then differs from the first run's (`first`), the arrays
        whose fill alone does it are named. None when nothing differs, or when the first run's order
        with its own fill does not give its results again (clock64(), say). The outputs and variables
        are put back after."""
        if not self._shared and not self._dynamic_shared(launch):
            return None
        final, final_variables = buffers.writable_wholes(), self._variables.save()
        everything = range(len(self._shared))
        try:
            if self._changes_outputs(index, launch, buffers, beginning, first):
                return None  # the first run's order and fill do not repeat its results
            self._fill_shared(everything, dynamic=True, fill=MIRRORED_FILL)
            if not self._changes_outputs(index, launch, buffers, beginning, first):
                return None
            where = (self._difference_from_first(buffers, first, "with the first fill", "with the second")
                     or "the launch ends in an error with the second fill only")

            def differs() -> bool:
                return self._changes_outputs(index, launch, buffers, beginning, first)

            arrays = self._shared_fills_that(differs, _dynamic_shared_name(launch), fill=MIRRORED_FILL,
                                             others=POISON_FILL)
        finally:
            self._fill_shared(everything, dynamic=True)
            buffers.put_back(final)
            self._variables.restore(final_variables)
        return (f"{launch.kernel}: the result depends on what __shared__ memory held before the launch: {where} "
                f"(the checking mode fills it before every block, with 0x{POISON_FILL:02X} bytes, NaN as a float, "
                f"then with 0x{MIRRORED_FILL:02X} bytes, 3.4e38 as a float: fmaxf, fminf and comparisons drop a "
                f"NaN): the kernel read {' and '.join(arrays) or '__shared__ memory'} where no thread of the block "
                "had written it: a __syncthreads() missing before that read, or an element no thread writes (a "
                "reduction's slots past the data: set them to the operation's identity, such as -CUDART_INF_F of "
                "math_constants.h for a max)")

    def _lane_read_reach(self, index, launch, buffers, beginning, first) -> str | None:
        """"args[1][0] is 1 with all-ones bytes read there and 100 with zeros": what a shuffle's read of a
        lane with no value alone changes. The launch runs again as it ran first (`beginning`: its order
        too, so no race can differ), reading zeros from such lanes as the mirrored run did; None when
        nothing then differs (a race made the two runs differ: LightGBM's EvalKernel, whose shuffle of
        returned lanes reached nothing, was blamed for it), or when the first run's order does not
        give its results again. The outputs and variables are put back after."""
        final, final_variables = buffers.writable_wholes(), self._variables.save()
        try:
            if self._changes_outputs(index, launch, buffers, beginning, first):
                return None  # the first run's order does not repeat its results
            self._lib.nn_cuda_cpu_set_undefined_lane_fill(0)
            try:
                self._run_again(index, launch, buffers, beginning)
            except KernelError as error:
                return f"with zeros read there instead of all-ones bytes the launch ends in an error: {error}"
            finally:
                self._lib.nn_cuda_cpu_set_undefined_lane_fill(-1)
            return self._difference_from_first(buffers, first, "with all-ones bytes read there", "with zeros")
        finally:
            buffers.put_back(final)
            self._variables.restore(final_variables)

    def _difference_from_first(self, buffers, first, first_label: str, now_label: str) -> str | None:
        """"args[1][0] is 1 `first_label` and 100 `now_label`": the first output, or else the first
        variable of the code, that the run just made left other than the first run (`first`); None
        where nothing differs."""
        found = buffers.first_difference(first)
        if found:
            i, element, before, now = found
            return f"{buffers.names[i]}{list(element)} is {before} {first_label} and {now} {now_label}"
        in_variable = None if self._first_variables is None else self._variables.first_difference(self._first_variables)
        return self._variables.difference_text(in_variable, first_label, now_label) if in_variable else None

    def _changes_outputs(self, index, launch, buffers, beginning, first) -> bool:
        """Whether the launch, run again as it ran first (`beginning`) with the fills as they are now
        set, leaves its outputs other than `first`, or the code's variables other than the first run
        left them; ending in a KernelError counts (a zero where it read 0xFF bytes took the kernel
        elsewhere)."""
        try:
            self._run_again(index, launch, buffers, beginning)
        except KernelError:
            return True
        return buffers.first_difference(first) is not None or (
            self._first_variables is not None and self._variables.first_difference(self._first_variables) is not None)

    def _assert_fills_unread(self, index, launch, buffers, beginning, first) -> None:
        """Integer outputs cannot carry the NaN of the checking mode's 0xFF fills (the bytes before each
        array, __shared__ memory): the launch runs again as it ran first with every fill zeros (where a
        write before an array's start of all-ones bytes shows), and only
        where an output then changes are the fills tried one by one, to name the one read
        (_assert_nothing_read_before, _assert_shared_read_written): one run more for a kernel that
        reads none. The outputs and variables are then put back as they were."""
        final, final_variables = buffers.writable_wholes(), self._variables.save()
        try:
            buffers.fill_before(0)
            self._fill_shared([], dynamic=False)
            changed = self._changes_outputs(index, launch, buffers, beginning, first)
            # a write of all-ones bytes there (labels[i - 1] = -1, mumax's 255 "no region") left the
            # first run's fill as it was: unreported until 2026-11-27
            buffers.assert_nothing_written_before(fill=0)
        finally:
            buffers.fill_before(0xFF)
            self._fill_shared(range(len(self._shared)), dynamic=True)
            buffers.put_back(final)
            self._variables.restore(final_variables)
        if changed:
            self._assert_nothing_read_before(index, launch, buffers, beginning, first)
            if self._shared or self._dynamic_shared(launch):
                self._assert_shared_read_written(index, launch, buffers, beginning, first)

    def _assert_nothing_read_before(self, index, launch, buffers, beginning, first) -> None:
        """The launch runs again as it ran first (`beginning`), with the bytes before each array zeros
        instead of 0xFF (integer outputs cannot carry their NaN); KernelError if an output
        changes, naming the arrays whose bytes reach it (one array's zeros at a time): the kernel read
        before the array's start (a stencil given `in` where it needs `in + RADIUS`). The outputs and
        variables are then put back as they were."""
        final, final_variables = buffers.writable_wholes(), self._variables.save()
        copies = list(dict.fromkeys(buffers.copies.values()))

        def changes_with(zeros) -> bool:
            for copy in copies:
                copy.fill_before(0 if copy in zeros else 0xFF)
            return self._changes_outputs(index, launch, buffers, beginning, first)

        try:
            if not changes_with(copies):
                return
            where = buffers.fill_difference(first)
            read = [" / ".join(copy.names) for copy in copies if changes_with([copy])]
            raise KernelError(
                f"{launch.kernel}: the result depends on the bytes right before {' and '.join(read) or 'an array'}"
                f"{where}: the kernel read before the start of an array (an index of -1, such as a[i - 1] at "
                "i = 0, or an array given where the kernel expects a pointer past its first elements, a stencil's "
                "`in + RADIUS`?); the checking mode fills those bytes with 0xFF, then with zeros")
        finally:
            buffers.fill_before(0xFF)
            buffers.put_back(final)
            self._variables.restore(final_variables)

    def _assert_shared_read_written(self, index, launch, buffers, beginning, first) -> None:
        """Integer outputs cannot carry NaN: the launch runs again as it ran first (`beginning`: its
        arguments, global variables and seed), but with __shared__ memory filled with zeros instead
        of 0xFF bytes; KernelError if an output changes, naming the arrays whose fill reaches it (one
        array filled with zeros at a time). The outputs and variables are then put back as they were."""
        final, final_variables = buffers.writable_wholes(), self._variables.save()
        everything = range(len(self._shared))

        def changes_with(zeros: list[int], dynamic_zeros: bool):
            self._fill_shared([i for i in everything if i not in zeros], dynamic=not dynamic_zeros)
            return self._changes_outputs(index, launch, buffers, beginning, first)

        try:
            if not changes_with(list(everything), True):
                return
            where = buffers.fill_difference(first)
            arrays = [name for i, name in enumerate(_demangled(n for _, _, n in self._shared))
                      if changes_with([i], False)]
            if changes_with([], True):
                arrays.append(_dynamic_shared_name(launch))
            raise KernelError(
                f"{launch.kernel}: the result depends on what __shared__ memory held before the launch{where}: "
                f"the kernel read {' and '.join(arrays) or '__shared__ memory'} where no thread of the block had "
                "written it (the checking mode runs it again with the memory filled with 0xFF bytes, then with "
                "zeros; a GPU gives it no initial value: set it, e.g. a histogram's bins to 0, before a "
                "__syncthreads())")
        finally:
            self._fill_shared(everything, dynamic=True)
            buffers.put_back(final)
            self._variables.restore(final_variables)

    def _call(self, index, launch, pointers, describe_fault, seed=None, mirrored=False) -> int:
        """One run of the instance: `pointers` replace the arrays' addresses (the checking mode's
        guarded copies), None passes the arrays themselves; the checking mode's orders come from
        `seed` (None: the next one), backwards when `mirrored`. Returns the runtime's status of a
        launch that ran to its end: 0, or _UNDEFINED_LANE_READ. The plain launch's whole path in
        Python is this function and one comprehension (a launch's cost: docs/kernels.md)."""
        signature = self._signatures[index]
        # None for a pointer is NULL; a struct's bytes come packed (arguments.pack)
        if pointers is None:
            values = [ctypes.c_void_p(value.__array_interface__["data"][0]) if isinstance(value, np.ndarray)
                      else ctypes.c_void_p() if value is None else value if isinstance(value, ctypes.Array)
                      else SCALAR_CTYPES[c_type](value) for value, c_type in zip(launch.args, signature)]
        else:
            values = [ctypes.c_void_p(pointer) if pointer is not None or value is None
                      else value if isinstance(value, ctypes.Array) else SCALAR_CTYPES[c_type](value)
                      for value, pointer, c_type in zip(launch.args, pointers, signature)]
        args = (ctypes.c_void_p * len(values))(*map(ctypes.addressof, values))
        grid = (ctypes.c_uint * 3)(*launch.grid)
        block = (ctypes.c_uint * 3)(*launch.block)
        fault, message = self._fault, self._message
        status = self._lib.nn_cuda_cpu_launch(
            index, grid, block, args, launch.kernel.encode(), int(self.check) + int(mirrored),
            ctypes.c_ulonglong(next(self._seeds) if seed is None else seed), fault, message, _MESSAGE_BYTES,
        )
        if status in (0, _UNDEFINED_LANE_READ):
            return status
        if status == 1:
            raise KernelError(message.value.decode())
        if status == 2:
            number, address, tx, ty, tz, bx, by, bz, pc = list(fault)
            line = self.source_at(pc) or self._caller_at()
            where = f" in thread ({tx}, {ty}, {tz}) of block ({bx}, {by}, {bz}){line}"
            if number == signal.SIGINT:
                raise KeyboardInterrupt
            if number == signal.SIGTERM:
                signal.raise_signal(signal.SIGTERM)  # its handler, or the default: the process ends
                raise KernelError(f"{launch.kernel}: stopped by SIGTERM{where}")
            if number == signal.SIGALRM:
                at_once = "up to 4 of them, in a random order" if self.check or self.cooperative else \
                    f"{self.threads} at a time, in order; {THREADS_VARIABLE}=N keeps N resident, as a persistent " \
                    "kernel's blocks that wait for each other need"
                threads = ("a thread that waits for another is made to let it run after a while" if self.preempts else
                           "a thread that waits for another must let it run, with __nanosleep() in its loop or by "
                           "spinning on an atomic (a few atomics in a row that find one value let the others run)")
                raise KernelTimeout(
                    f"{launch.kernel}: still running after {self.watchdog:g} s ({WATCHDOG_VARIABLE}){where}: a loop that "
                    "never ends, a thread that waits for another one, or a launch too large for the CPU (set "
                    f"{WATCHDOG_VARIABLE}=SECONDS higher, or 0 for no limit). On the CPU the threads of a block take "
                    f"turns, and so do its blocks ({at_once}): {threads}, and a block can wait only for one that "
                    "started before it (number the blocks by an atomicAdd ticket, not by blockIdx)")
            what = _SIGNALS.get(number, f"signal {number}")
            bounds = self._lib.nn_cuda_cpu_bounds_detail().decode() if number == 4 else ""
            if bounds:  # the checking build's handler saw the index and the array's type
                what = what.replace("an index outside an array of fixed size (", f"an index outside an array of "
                                    f"fixed size ({bounds}, counting from 0; ", 1)
            described = describe_fault(address) if number in _MEMORY_FAULTS else ""
            if number == _GENERAL_PROTECTION and self.check:  # the checking mode's own placement may cause it
                described = (": the checking mode places each array's last byte right before a guard page, so an "
                             "array whose size in bytes is no multiple of 16 starts unaligned there, where a GPU "
                             "(and this runner without the checking mode) starts every array on a 256-byte "
                             "boundary; if the kernel indexes vectors within its arrays, pad them to a multiple "
                             "of 16 bytes to check it")
            raise KernelError(
                f"{launch.kernel}: {what}{described}{where}"
                # a RawModule made with check=False stays so under the variable
                + ("; run in the checking mode to name the buffer (NN_CUDA_CPU_CHECK=1; a RawModule made with "
                   "check=False takes check=True)" if number in _MEMORY_FAULTS and not self.check
                   else "")
            )

    def source_at(self, pc: int) -> str:
        """' at FILE:LINE' of the kernel code at address `pc` (the library's line tables, read by
        addr2line), with the lines that called it when it was inlined: '' where not known (no
        addr2line, an address in the runtime or outside the library)."""
        tool = shutil.which("addr2line") or shutil.which("llvm-addr2line")
        if not pc or tool is None or shutil.which("nm") is None:
            return ""
        offset = pc - self._load_address(_symbol_table(self.tool_path, "a fault's file:line"))
        try:
            found = subprocess.run([tool, "-i", "-e", self.tool_path, hex(offset)], capture_output=True,
                                   text=True, timeout=30).stdout.splitlines()
        except (OSError, subprocess.SubprocessError):
            return ""
        return _kernel_place(found)

    def _caller_at(self) -> str:
        """' at FILE:LINE' of the kernel code that called the function of the runner's in which the last
        launch faulted or the watchdog stopped it, where the compiler did not inline it (an atomicAdd
        through an index past the end, GPUSorting's histogram; the race check's handler of a load in a
        spin): the first return address into the code among the words on the thread's stack. '' where
        none is found."""
        words = (ctypes.c_size_t * 64)()  # room for all the runtime keeps (kFaultStackWords)
        self._lib.nn_cuda_cpu_fault_stack.restype = ctypes.c_size_t
        if shutil.which("nm") is None:
            return ""
        start = self._load_address(_symbol_table(self.tool_path, "a fault's file:line"))
        end = start + os.path.getsize(self.tool_path)
        for word in words[:self._lib.nn_cuda_cpu_fault_stack(words, ctypes.c_size_t(len(words)))]:
            found = self.source_at(word - 1) if start < word <= end else ""  # within the call: its line
            if found:
                return found
        return ""

    def _load_address(self, symbols: dict) -> int:
        """Where the library is loaded: an exported function's address less its symbol's value."""
        anchor = "nn_cuda_cpu_instance_count"
        return ctypes.cast(getattr(self._lib, anchor), ctypes.c_void_p).value - symbols[anchor][1]

    def _set_shared_regions(self, poisoned: bool) -> None:
        """Tell the library where its __shared__ arrays are: the function-local statics (_ZZ
        symbols; a template instance's are exported, other kernels' are not) and the variables in
        runtime.h's section of __shared__ ones (those at file scope). Every one's address is the
        library's load address plus the symbol's value. Each block's start fills them with NaN when
        `poisoned` (the checking mode), else with zeros."""
        symbols = _symbol_table(self.tool_path, "the checking mode finds __shared__ arrays")
        base = self._load_address(symbols)
        bounds = (ctypes.c_size_t * 2)()
        self._lib.nn_cuda_cpu_shared_section(bounds)
        in_section = range(bounds[0], bounds[1])
        runtime_data = linked_cpp_runtime_data(symbols)
        self._shared = [(base + value, size, name) for name, (kind, value, size, elf_type, section) in symbols.items()
                        if kind in _DATA_KINDS and elf_type == "OBJECT" and size
                        and "nn_cuda_cpu_shared_anchor" not in name and name not in runtime_data
                        and (_function_static(name, section) or base + value in in_section)]
        self._fill_shared(poisoned=range(len(self._shared)) if poisoned else (), dynamic=poisoned)
        shared = {address for address, _, _ in self._shared}
        self._variables = _GlobalVariables([(base + value, size, name) for name, (kind, value, size, elf_type, section)
                                            in symbols.items() if _code_variable(name, kind, size, elf_type, section)
                                            and name not in runtime_data and base + value not in shared])

    def _fill_shared(self, poisoned, dynamic: bool, fill: int = POISON_FILL, others: int = 0) -> None:
        """Fill the __shared__ arrays of `poisoned` (indices into self._shared), and extern __shared__
        memory when `dynamic`, with `fill` bytes before every block (NaN by default); the others
        with `others` bytes."""
        count, poisoned = len(self._shared), set(poisoned)
        addresses = (ctypes.c_void_p * max(1, count))(*[address for address, _, _ in self._shared])
        sizes = (ctypes.c_size_t * max(1, count))(*[size for _, size, _ in self._shared])
        fills = (ctypes.c_ubyte * max(1, count))(*[fill if i in poisoned else others for i in range(count)])
        self._lib.nn_cuda_cpu_set_shared_regions(addresses, sizes, fills, count, fill if dynamic else others)

    def _shared_read_unwritten(self, index, launch, buffers, beginning) -> list[str]:
        """The __shared__ arrays whose NaN fill reaches the outputs: the launch runs again from
        `beginning` (_run_again) with every shared array filled with zeros, then with one of them
        filled with NaN at a time (extern __shared__ memory with the rest of its region, past the
        launch's shared_mem).
        Nothing when NaN shows with zeros everywhere: then an output element was left unwritten (or
        an output the kernel must not read was read)."""
        def nan_shows() -> bool | None:
            try:
                self._run_again(index, launch, buffers, beginning)
            except KernelError:  # zeros where it read NaN took the kernel elsewhere: no answer
                return None
            return buffers.nan_in_outputs()

        return self._shared_fills_that(nan_shows, _dynamic_shared_name(launch))

    def _dynamic_shared(self, launch) -> bool:
        """Whether the launch has extern __shared__ memory to read: its shared_mem, or the code's
        declaration of it, which a launch of shared_mem = 0 reads past its end (such a read was
        reported as a race until 2026-11-27: onnxruntime's softmax launched without its bytes)."""
        return bool(getattr(launch, "shared_mem", 0)) or bool(self._lib.nn_cuda_cpu_declares_dynamic_shared())

    def _fault_after_unwritten_shared(self, index, launch, buffers, beginning) -> list[str]:
        """The __shared__ arrays whose 0xFF fill makes the launch end in an error (a garbage index used
        before it was written): it runs again from `beginning` with every array filled with zeros, and
        if it then ends, with one array at a time filled with 0xFF bytes. Nothing where zeros end it
        too, or where there is no __shared__ memory to fill."""
        if not self._shared and not self._dynamic_shared(launch):
            return []
        return self._shared_fills_that(lambda: self._ends_in_error(index, launch, buffers, beginning),
                                       _dynamic_shared_name(launch))

    def _write_before_after_unwritten_shared(self, index, launch, buffers, beginning) -> list[str]:
        """The __shared__ arrays whose 0xFF fill makes the launch write before an array (an index read
        where no thread wrote it, -1 as an int: a cell list's bin without its __syncthreads(), CS267's
        particles), as _fault_after_unwritten_shared finds a fault's."""
        if not self._shared and not self._dynamic_shared(launch):
            return []

        def shows() -> bool | None:
            buffers.fill_before(0xFF)
            if self._ends_in_error(index, launch, buffers, beginning) is not False:
                return None
            return buffers.written_before_any()

        return self._shared_fills_that(shows, _dynamic_shared_name(launch))

    def _shared_fills_that(self, shows, dynamic_name: str, fill: int = POISON_FILL, others: int = 0) -> list[str]:
        """The __shared__ arrays, and extern __shared__ memory (`dynamic_name`), whose `fill` bytes
        alone show in a run of the launch (`shows()`: True, False, or None for no answer): first with
        every one filled with `others` bytes (nothing is named when it shows then too), then with one
        at a time filled with `fill` bytes. Every fill is set back to 0xFF after."""
        candidates = [([i], False, name) for i, name in enumerate(_demangled(n for _, _, n in self._shared))]
        candidates.append(([], True, dynamic_name))
        found = []
        try:
            for poisoned, dynamic, name in [([], False, None), *candidates]:
                self._fill_shared(poisoned, dynamic, fill=fill, others=others)
                shown = shows()
                if shown is None or (shown and name is None):
                    return []
                if shown:
                    found.append(name)
        finally:
            self._fill_shared(range(len(self._shared)), dynamic=True)
        return found

    def _nan_without_fills(self, index, launch, buffers, beginning) -> dict[int, np.ndarray]:
        """Where the outputs hold NaN when nothing the checking mode fills holds NaN: the launch runs
        again from `beginning` with __shared__ memory and the bytes before each array filled with
        zeros, and the outputs it filled with NaN (write_only) zeros. NaN there is the kernel's own
        arithmetic (inf / inf, 0 * inf, as a GPU computes it). {argument position: where, as a mask}."""
        start, variables, seed = beginning
        clean = {i: np.zeros_like(values) if i in buffers.poisoned else values for i, values in start.items()}
        try:
            self._fill_shared([], dynamic=False)
            buffers.fill_before(0)
            try:
                self._run_again(index, launch, buffers, (clean, variables, seed))
            except KernelError:  # zeros took the kernel elsewhere: no answer
                return {}
            return {i: np.isnan(buffers.views[i]) for i in buffers.outputs if buffers.views[i].dtype.kind == "f"}
        finally:
            self._fill_shared(range(len(self._shared)), dynamic=True)
            buffers.fill_before(0xFF)


#: the runner's own headers, which a fault's file:line skips to the kernel's code
_RUNTIME_FILES = ("runtime.h", "runtime.cpp", "device_functions.h")


#: the symbols of the runner's functions in a code's library: runtime.cpp's and runtime.h's (namespace
#: nn_cuda_cpu, C names nn_cuda_cpu_*, the sanitizers' and the linker's __* and _GLOBAL__*) and the C++
#: library's templates they instantiate (std::, __gnu_cxx::)
_RUNNER_FUNCTION = re.compile(r"_ZN11nn_cuda_cpu|nn_cuda_cpu|__|_GLOBAL__|_ZN?K?St|_ZN?K?9__gnu_cxx")
#: of those, the ones that call the kernel, into which the compiler may inline it
_KERNEL_CALLER = re.compile(r"_ZN11nn_cuda_cpu(?:10run_thread|11call_kernel)")


def _runner_function(name: str) -> bool:
    """Whether `name` (a function's symbol in a code's library) is the runner's (_RUNNER_FUNCTION)."""
    return _RUNNER_FUNCTION.match(name) is not None and _KERNEL_CALLER.match(name) is None


def _kernel_place(frames: list[str]) -> str:
    """' at FILE:LINE' of the kernel code from addr2line -i's answer for one address (the innermost
    frame first), with ', called from FILE:LINE' where that is another file's line (a header's function
    inlined into the kernel); '' where the address is in the runner's own code: none, or a function of
    runtime.cpp's, also where a C++ library's function is inlined there (a watchdog that stopped the race
    check's handler of a load named `stl_iterator.h:1073` until 2026-11-28). A kernel inlined into
    runtime.h's run_thread is the kernel's line."""
    found = [frame for frame in map(_source_frame, frames) if frame is not None]
    if not found or Path(frames[-1].split(" (discriminator")[0].rpartition(":")[0]).name == "runtime.cpp":
        return ""
    inner, outer = found[0], found[-1]
    if outer[0] == inner[0]:
        return f" at {inner[0]}:{inner[1]}"
    return f" at {inner[0]}:{inner[1]}, called from {outer[0]}:{outer[1]}"


def _source_frame(line: str) -> tuple[str, str] | None:
    """(file, line) of one line of addr2line's answer; None for the runner's own code (its headers,
    the generated instance table) or an unknown place. A name in brackets, such as RawModule code's
    "(RawModule code)", is shown without the build folder addr2line puts in front of it."""
    place, _, number = line.split(" (discriminator")[0].rpartition(":")
    name = Path(place).name
    if place.startswith("?") or not number.isdigit() or name.endswith(_RUNTIME_FILES) \
            or name.startswith("(the instance table"):
        return None
    return (name if name.startswith("(") else place), number


def _demangled(symbols) -> list[str]:
    """"__shared__ `tile` (in mirror)" for each __shared__ array's symbol (a function-local static, demangled by
    c++filt as "mirror::tile" or "void k<float>(float*)::tile"); the symbol itself without c++filt."""
    named = []
    for text in demangled(symbols):
        function, _, array = text.rpartition("::")
        function = function.split("(")[0].removeprefix("void ").strip()
        named.append(f"__shared__ `{array}` (in {function})" if function and array else f"__shared__ `{text}`")
    return named


#: nm's kinds of data objects: bss, data, unique global, weak object (either case: local or global)
_DATA_KINDS = "bBdDuV"
#: the function-local statics of the C++ runtime, which a host compiler may link into the library (the
#: exception handling's per-thread globals, a TLS symbol whose value is no address; std::terminate's
#: flag): not __shared__ arrays
_CPP_RUNTIME = ("_ZZN9__gnu_cxx", "_ZZNSt", "_ZZSt", "_ZZN10__cxxabiv1", "_ZZN12_GLOBAL__N_110get_global")


def _symbol_table(library: str, purpose: str) -> dict:
    """{name: (nm kind, value, bytes, ELF type, section)} of every symbol a library defines, read with
    nm (its System V format, the one that gives the type: OBJECT, FUNC, TLS, ...), once per file: a
    library stored in the cache is never rewritten in place (a new build is renamed there: another
    inode), so the file's identity names its symbols."""
    nm = shutil.which("nm")
    if nm is None:
        raise KernelError(f"{purpose} with nm (binutils), which is missing")
    info = os.stat(library)
    identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if identity not in _SYMBOL_TABLES:
        listing = subprocess.run([nm, "--format=sysv", "--defined-only", library], capture_output=True,
                                 text=True, check=True, timeout=60).stdout
        table = {}
        for line in listing.splitlines():
            fields = [field.strip() for field in line.split("|")]
            if len(fields) >= 5 and fields[1]:  # name|value|class|type|size|line|section
                table[fields[0]] = (fields[2], int(fields[1], 16), int(fields[4], 16) if fields[4] else 0,
                                    fields[3], fields[6] if len(fields) > 6 else "")
        if len(_SYMBOL_TABLES) >= _SYMBOL_TABLES_KEPT:  # the oldest goes (a table is some 50 KB)
            del _SYMBOL_TABLES[next(iter(_SYMBOL_TABLES))]
        _SYMBOL_TABLES[identity] = table
    return _SYMBOL_TABLES[identity]


#: the symbol tables this process has read, by the identity of the library's file, the last few only
_SYMBOL_TABLES: dict[tuple, dict] = {}
_SYMBOL_TABLES_KEPT = 64


def _function_static(name: str, section: str) -> bool:
    """Whether a symbol is a function's static variable that runtime.h made of a __shared__
    declaration in a kernel or device function (_ZZ), not one of the linked C++ runtime's, nor a
    static with an initializer, which a __shared__ variable cannot have: a table that the code's own
    `static` (or `static constexpr`) keeps in .data or .rodata (instant-ngp's Sobol directions, in an
    inline device function, were filled as __shared__ memory until 2026-11-27). `section` is where
    nm places it ('' where it does not say)."""
    plain = "_" + name.lstrip("_")  # one "_" on every host (macOS adds one)
    return (plain.startswith("_ZZ") and not plain.startswith(_CPP_RUNTIME)
            and not section.startswith((".data", ".rodata")))


#: the static __shared__ memory a GPU gives one block (a kernel declaring more fails in ptxas)
STATIC_SHARED_LIMIT = 48 * 1024


def function_shared_statics(library: str) -> dict[str, int]:
    """{symbol: bytes} of the library's function-local statics, which runtime.h makes of __shared__
    declarations (thread-local where blocks run on several threads at once). A `__device__` array in a
    namespace is no function's and never counts. Empty without nm (binutils)."""
    if shutil.which("nm") is None:
        return {}
    symbols = _symbol_table(library, "the 48 KiB limit of static __shared__ memory is checked")
    # a template kernel's arrays, thread-local where blocks run on several host threads, are weak
    # symbols ("W"), missed until 2026-11-27 (a template kernel over 48 KiB built in the plain mode)
    return {name: size for name, (kind, _, size, elf_type, section) in symbols.items()
            if kind in _DATA_KINDS + "W" and elf_type in ("OBJECT", "TLS") and _function_static(name, section)}


def static_shared_by_function(statics: dict[str, int]) -> dict[str, int]:
    """{function, as c++filt writes it: bytes of its __shared__ arrays} of function_shared_statics."""
    found: dict[str, int] = {}
    for text, size in zip(demangled(statics), statics.values()):
        function = text.rsplit("::", 1)[0]
        found[function] = found.get(function, 0) + size
    return found


def static_shared_over_limit(statics: dict[str, int]) -> dict[str, int]:
    """{function: bytes of its __shared__ arrays} of the functions of function_shared_statics that
    declare more than STATIC_SHARED_LIMIT."""
    if sum(statics.values()) <= STATIC_SHARED_LIMIT:  # no function can pass the limit: nothing to demangle
        return {}
    return {function: size for function, size in static_shared_by_function(statics).items()
            if size > STATIC_SHARED_LIMIT}


#: what the C and C++ runtime a library links defines in its .data and .bss (crtstuff's, the unwinder's)
_LINKED_DATA = ("completed.0", "__dso_handle", "__TMC_END__")


def linked_cpp_runtime_data(symbols: dict) -> frozenset:
    """The names the C++ runtime's archive (libstdc++.a) defines, where a library's `symbols` show that
    the host compiler linked it in (the library defines std::terminate): GCC 13 of Ubuntu 24.04 does,
    and the exception handling's `emergency_pool`, which holds pointers, was taken for a variable of
    the code holding one, so the checking mode ran every launch once, comparing no orders. Empty where
    the C++ runtime is a shared library of its own, or its archive is not found."""
    return _cpp_runtime_archive_names() if "_ZSt9terminatev" in symbols else frozenset()


@functools.cache
def _cpp_runtime_archive_names() -> frozenset:
    compiler = host_compiler.find_compiler()
    archive = subprocess.run([compiler, "-print-file-name=libstdc++.a"], capture_output=True, text=True,
                             timeout=60).stdout.strip()
    if not os.path.isabs(archive) or not os.path.isfile(archive):
        return frozenset()
    listing = subprocess.run(["nm", "--defined-only", "--format=posix", archive], capture_output=True, text=True,
                             timeout=60).stdout
    return frozenset(line.split(maxsplit=1)[0] for line in listing.splitlines() if " " in line)


def _code_variable(name: str, kind: str, size: int, elf_type: str, section: str) -> bool:
    """Whether a symbol is a writable variable of the code (a __device__ or __constant__ one, at file
    scope or in a namespace), not the runner's (nn_cuda_cpu), a function's static (_ZZ: __shared__
    arrays), a guard variable or what the linked C++ runtime keeps."""
    return (kind in "bBdD" and elf_type == "OBJECT" and size > 0 and section in (".data", ".bss")
            and "nn_cuda_cpu" not in name and name not in _LINKED_DATA
            and not name.lstrip("_").startswith(("ZZ", "ZGV", "ZTV", "ZTI")) and not name.startswith("DW.ref."))


class _GlobalVariables:
    """The bytes of a library's code variables ((address, bytes, symbol) each): the checking mode puts
    them back before it runs a launch again, as it puts back the arguments, so that a counter the
    kernel increments (a block's ticket) starts the second run where it started the first; and it
    compares what the two runs left in them, as it compares the arguments (a kernel may return its
    results in a __device__ array, as cuda-samples' binomialOptions does)."""

    def __init__(self, regions: list[tuple[int, int, str]]):
        self.regions = regions
        self.heap: device_heap.RunAddresses | None = None  # a checked launch's first run's allocations

    def first_difference(self, saved: list[bytes], rounding: bool = False) -> tuple | None:
        """(symbol, byte offset, 4 bytes in `saved`, 4 bytes now) of the first 32-bit word of a
        variable that differs from `saved`, or None. With `rounding` (the kernel used atomics), a
        variable whose words all lie within ROUNDING_RTOL of its largest magnitude as floats, or as
        doubles, counts as the same: a float sum in another order (the type of a variable is not
        known; integers, read as floats, are tiny numbers that differ by more than that)."""
        for (address, size, symbol), before in zip(self.regions, saved):
            now = ctypes.string_at(address, size)
            if now == before:
                continue
            if rounding and any(_within_rounding(before, now, dtype) for dtype in (np.float32, np.float64)):
                continue
            if size % 8 == 0:
                words_before, words_now = np.frombuffer(before, np.uint64), np.frombuffer(now, np.uint64)
                if not device_heap.same_words(words_before, words_now, words_before != words_now, self.heap).any():
                    continue  # addresses of allocations made alike (`__device__ Node* head = new Node`)
            offset = next(i for i in range(size) if before[i] != now[i]) // 4 * 4
            return symbol, offset, before[offset:offset + 4], now[offset:offset + 4]
        return None

    @staticmethod
    def difference_text(found: tuple, first: str, second: str) -> str:
        """"the variable `v`, its bytes 0 to 3, holds 1 as an int, ... `first` and 2 as an int, ...
        `second`" for what first_difference found."""
        symbol, offset, before, now = found

        def shown(word: bytes) -> str:
            padded = word.ljust(4, b"\0")
            return (f"{int.from_bytes(padded, 'little', signed=True)} as an int, "
                    f"{_value_text(np.frombuffer(padded, np.float32)[0])} as a float")

        return (f"the variable `{demangled([symbol])[0]}`, its bytes {offset} to {offset + len(before) - 1}, holds "
                f"{shown(before)} {first} and {shown(now)} {second}")

    def assert_same_as(self, saved: list[bytes] | None, launch, atomics: bool) -> None:
        """KernelError naming the first variable the two checked runs left different (first_difference)."""
        found = None if saved is None else self.first_difference(saved, rounding=atomics)
        if found is None:
            return
        raise KernelError(
            f"{launch.kernel}: the result depends on the order in which {_who_takes_turns(launch.grid)} run "
            f"between barriers ({self.difference_text(found, 'after one order', 'after another')}"
            + (", beyond what the order of atomics rounds" if atomics else "")
            + "): threads race on __shared__ or global memory, e.g. a __syncthreads() is missing, or blocks "
            "write one place of it (here blocks take turns, barrier to barrier)" + (ORDER_OF_ATOMICS if atomics else ""))

    def save(self) -> list[bytes]:
        return [ctypes.string_at(address, size) for address, size, _ in self.regions]

    def restore(self, saved: list[bytes]) -> None:
        for (address, size, _), contents in zip(self.regions, saved):
            ctypes.memmove(address, contents, size)

    def named(self, saved: list[bytes]) -> list[tuple[str, bytes]]:
        """(symbol, bytes) of each variable, from what save() gave."""
        return [(symbol, contents) for (_, _, symbol), contents in zip(self.regions, saved)]


def _within_rounding(before: bytes, now: bytes, dtype) -> bool:
    """Whether two variables' bytes, read as `dtype` (float32 or float64), are alike up to the rounding
    of a sum in another order (ROUNDING_RTOL of the largest magnitude among them)."""
    width = np.dtype(dtype).itemsize
    if len(before) % width:
        return False
    a, b = np.frombuffer(before, dtype).astype(np.float64), np.frombuffer(now, dtype).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        scale = float(np.nanmax(np.abs(np.concatenate([a, b])), initial=0.0))
        close = (np.abs(a - b) <= ROUNDING_RTOL[np.dtype(dtype).name] * scale) | (np.isnan(a) & np.isnan(b))
    return bool(close.all())


# ---- the checking mode's buffers --------------------------------------------------------------------


def _value_text(value) -> str:
    """An element as a race report shows it: every digit its type holds (float32 9, float64 17)."""
    if isinstance(value, np.floating):
        return f"{float(value):.{9 if value.itemsize <= 4 else 17}g}"
    return str(value.item() if isinstance(value, np.generic) else value)



def _bytes_of(array: np.ndarray) -> np.ndarray:
    """A contiguous array's bytes, as a writable view (0-d and empty arrays too)."""
    return array.reshape(-1).view(np.uint8)


class _GuardedCopy:
    """An array's copy whose last byte sits right before an inaccessible page. The bytes between the
    page before it and its first byte (up to a page) are the fill, 0xFF (NaN as float and double):
    a read there takes NaN into a floating-point output, and a write there changes them
    (written_before)."""

    def __init__(self, array: np.ndarray, names: list[str], read_only: bool):
        libc = device_memory.libc()
        self.array, self.names, self.read_only = array, names, read_only
        page = mmap.PAGESIZE
        data_pages = max(1, -(-array.nbytes // page)) * page
        self.guard = device_memory.guard_bytes(data_pages)
        self.length = 2 * self.guard + data_pages
        self.base = libc.mmap(None, self.length, mmap.PROT_READ | mmap.PROT_WRITE,
                              mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if self.base in (None, ctypes.c_void_p(-1).value):
            raise MemoryError(f"could not map {self.length} bytes for a checked buffer")
        self.start = self.base + self.guard + data_pages - array.nbytes
        self.end = self.start + array.nbytes
        libc.mprotect(self.base, self.guard, device_memory.PROT_NONE)
        libc.mprotect(self.base + self.guard + data_pages, self.guard, device_memory.PROT_NONE)
        self.view = np.ctypeslib.as_array((ctypes.c_char * max(1, array.nbytes)).from_address(self.start))
        self.view = self.view[: array.nbytes].view(array.dtype).reshape(array.shape)
        self.view[...] = array
        self._data_pages = data_pages
        self.before = np.ctypeslib.as_array((ctypes.c_ubyte * max(1, self.start - self.base - self.guard))
                                            .from_address(self.base + self.guard))[: self.start - self.base - self.guard]
        self.before.fill(0xFF)

    def fill_before(self, value: int) -> None:
        """The bytes before the array filled with `value` (0xFF, NaN, at the launch; zeros to tell a
        NaN the kernel computed from one it read there), its pages made writable for that."""
        device_memory.libc().mprotect(self.base + self.guard, self._data_pages, mmap.PROT_READ | mmap.PROT_WRITE)
        self.before.fill(value)
        self.protect()

    def written_before(self, fill: int = 0xFF) -> int | None:
        """How many bytes before the array's first one a write reached (the farthest changed byte of
        the fill, `fill` bytes), or None."""
        changed = np.flatnonzero(self.before != fill)
        return None if changed.size == 0 else int(self.before.size - changed[0])

    def protect(self) -> None:
        if self.read_only:
            device_memory.libc().mprotect(self.base + self.guard, self._data_pages, mmap.PROT_READ)

    def release(self) -> None:
        self.view = self.before = None
        device_memory.libc().munmap(self.base, self.length)

    def describe(self, address: int) -> str | None:
        name = " / ".join(self.names)
        size = self.array.itemsize
        if self.start <= address < self.end:
            return f": a write to the input {name}" if self.read_only else None
        # a byte array may be given for a pointer to a larger type (uchar4*): its count is of bytes
        unit = "byte(s)" if size == 1 else "element(s)"
        if self.end <= address < self.end + self.guard:
            return f": an access {(address - self.end) // size + 1} {unit} past the end of {name}"
        if self.base <= address < self.start:
            return f": an access {(self.start - address - 1) // size + 1} {unit} before the start of {name}"
        return None


#: runtime.h's name of a struct passed by value or pointed to: "struct of 16 bytes" (its size)
STRUCT_TYPE = re.compile(r"struct of (\d+) bytes?")
#: runtime.h's name of a type it cannot name (a reference or a pointer to one is named, and refused)
UNSUPPORTED = "?"


def _dynamic_shared_name(launch) -> str:
    """How a report names extern __shared__ memory that a kernel read where nothing was written: within
    the launch's shared_mem, or past it (a read past it is no read of written memory either)."""
    return f"extern __shared__ memory (within its shared_mem = {getattr(launch, 'shared_mem', 0)} bytes, or past them)"


#: what else makes a result depend on the threads' order where the kernel made atomic operations: an order
#: that the atomics decide, on a GPU too (the checking mode's messages end with it)
ORDER_OF_ATOMICS = (
    "; or the value an atomicExch or atomicCAS leaves, which the last thread to swap decides, on a GPU too, or "
    "which thread comes first to an atomic counter (`if (atomicAdd(&found, 1) == 0)`: hashcat's cracked hashes), "
    "which the threads' order decides there too (results placed at slots the threads took from an atomic counter, "
    "slot = atomicAdd(&count, 1), pass when they are the same rows in another order, or the same values in each row "
    "where each row has a counter: their order is the threads', on a GPU too); or what threads write in turn under "
    "a lock taken with atomicCAS, in the order they took it (a list that each pushes onto: CUDA by Example's hash "
    "table), which varies from run to run on a GPU too; or a "
    "float sum by atomics, whose rounding depends on their order, magnified by what the kernel does with it (a "
    "difference of two near sums), which varies from run to run on a GPU too")


def _who_takes_turns(grid) -> str:
    """Whose order a race's result depends on: a launch of one block has only its threads'."""
    return "the threads of a block" if math.prod(grid) == 1 else "the threads of a block, or the blocks,"


def pointers_to_pointers(c_type: str) -> bool:
    """Whether a parameter is a pointer to pointers ("void**", "const float**", "float* const*"): its
    argument is an array of addresses."""
    return c_type.replace(" const*", "*").endswith("**") and UNSUPPORTED not in c_type


def _bytes_copy(array: np.ndarray) -> np.ndarray:
    """A copy of a C-contiguous array with every byte of its memory: NumPy's copy of structs leaves out
    the padding between and after their fields (24-byte structs of two 8-byte integers and a float,
    xgboost's COO tuples), which the checked runs' bitwise comparison then found changed."""
    return array.reshape(-1).view(np.uint8).copy().view(array.dtype).reshape(array.shape)


#: the race check's kinds of race (runtime.cpp, RaceFound): what the earlier thread did to the word, what the
#: later one did, and what a GPU may do instead
_RACE_KINDS = {
    1: ("wrote", "read", "read may come before the write (a read-after-write hazard)"),
    2: ("read", "wrote", "write may come before the read (a write-after-read hazard)"),
    3: ("wrote", "made an atomic operation on", "atomic may come before the write, which a plain store then "
        "overwrites (a plain access and an atomic of one word: make the store an atomicExch, or put a barrier "
        "between)"),
    4: ("read", "made an atomic operation on", "atomic may come before the read, so that two threads read one "
        "value (a slot read with a plain load, then counted with atomicAdd, is taken twice: take it with the "
        "atomic itself, slot = atomicAdd(&count, 1))"),
    5: ("made an atomic operation on", "wrote", "write may come before the atomic, which then works on it (a "
        "plain access and an atomic of one word: make the store an atomicExch, or put a barrier between)"),
    6: ("made an atomic operation on", "read", "read may come before the atomic (a plain access and an atomic of "
        "one word: read it with the atomic's result, or after a barrier)"),
}


def _following_unwritten_shared(error: KernelError, unwritten: list[str], without: str) -> str:
    """`error`'s message, with the __shared__ arrays (`unwritten`) whose unwritten bytes led to it."""
    return (f"{error}; it follows a read of {' and '.join(unwritten)} where no thread of the block had written it "
            f"(the checking mode fills __shared__ memory with 0xFF bytes; with zeros there {without}): a "
            "__syncthreads() missing before that read, or an element no thread writes?")


def _holders_of(held: list[tuple[str, str | None, np.ndarray]], start: int = 0, length: int | None = None) -> list[str]:
    """Of _held_pointers' holders, those holding an address in [start, start + length) (all of them without
    a `length`), each named with its words that do: "the variable `params` (its bytes 16 to 23)" where only
    that word of the struct reaches the memory (CS149's renderer reaches its image so, beside four arrays
    of the scene; every word was named until 2026-11-28)."""
    reaching: dict[str, list[str]] = {}
    for what, span, addresses in held:
        if length is None or ((addresses >= start) & (addresses < start + length)).any():
            reaching.setdefault(what, []).extend([span] if span else [])
    return [f"{what} (its bytes {_spoken_list(spans)})" if spans else what for what, spans in reaching.items()]


def _held_pointers(launch, names: list[str], variables: list[tuple[str, bytes]]) -> list[tuple[str, str | None,
                                                                                            np.ndarray]]:
    """(what, its bytes, the addresses they hold) of each word that holds a pointer to memory that is no
    argument (the bytes None where the holder is an array of pointers; _holders_of names them so):
    "args[0] (an array of pointers)" for a
    pointer to pointers whose array holds an address (one of nulls only reaches no memory); "args[2]
    (its bytes 8 to 15)" for a struct argument passed by value
    with an 8-byte word that is the address of writable memory of this process (each such word named:
    "its bytes 0 to 7 and 16 to 23") (a struct of matrix
    dimensions and a pointer to their elements), or an array of structs with one ("args[0] (an
    array of structs) (its bytes 8 to 15)"); "the variable `params` (its bytes 8 to 15)" for a
    __constant__ or __device__ variable of the code (`variables`: (symbol, bytes) each) that holds
    one (CS149's renderer reaches its image through a __constant__ struct); each argument or
    variable that does (faiss's transposeAny passes its input and its output so). Nothing when nothing
    does, or where the process's memory map cannot be read (/proc/self/maps: Linux)."""
    arrays = [i for i, (value, c_type) in enumerate(zip(launch.args, launch.signature))
              if pointers_to_pointers(c_type) and isinstance(value, np.ndarray) and value.any()]
    if arrays:
        return [(f"{names[i]} (an array of pointers)", None, launch.args[i][launch.args[i] != 0].reshape(-1))
                for i in arrays]
    holders = [(names[i], bytes(value), None) for i, (value, c_type) in enumerate(zip(launch.args, launch.signature))
               if STRUCT_TYPE.fullmatch(c_type) and isinstance(value, ctypes.Array)]
    # an array of structs (Rodinia's streamcluster passes points that hold a pointer to their coordinates)
    for i, (value, c_type) in enumerate(zip(launch.args, launch.signature)):
        element = STRUCT_TYPE.fullmatch(c_type.removeprefix("const ").removesuffix("*"))
        if element and c_type.endswith("*") and isinstance(value, np.ndarray):
            holders.append((f"{names[i]} (an array of structs)", value.reshape(-1).view(np.uint8),
                            int(element[1])))
    holders += [(f"the variable `{symbol}`", data, None) for symbol, data in variables]
    # a struct whose size is no multiple of 8 holds no (aligned) pointer: CuPy's Delaunay passes arrays
    # of triangles of three ints, whose leftover bytes looked like addresses
    holders = [(what, data, element) for what, data, element in holders
               if len(data) >= 8 and (element or len(data)) % 8 == 0]
    if not holders:
        return []
    try:
        with open("/proc/self/maps") as maps:
            writable = sorted(tuple(int(end, 16) for end in line.split()[0].split("-")) for line in maps
                              if line.split()[1][1] == "w")
    except OSError:
        return []
    starts, ends = np.array(writable, np.uint64).reshape(-1, 2).T
    found = []
    for what, data, element in holders:
        words = np.frombuffer(data, np.uint64, count=len(data) // 8)  # bytes, or a uint8 view of the array (no copy)
        below = np.searchsorted(starts, words, side="right") - 1  # the last region starting at or below
        inside = (below >= 0) & (words < ends[np.maximum(below, 0)])
        if element is not None and element % 8 == 0 and len(words) % (element // 8) == 0:
            # a field of the struct: an address in at least half of the elements and null in the others,
            # where the leftover bytes of an output made by np.empty (a heap allocator's own pointers)
            # hold one here and there (cuSignal's upfirdn output ran once, its races unchecked)
            fields = inside.reshape(-1, element // 8)
            null = words.reshape(fields.shape) == 0
            inside = (fields | null).all(axis=0) & (2 * fields.sum(axis=0) >= len(fields))
        # each word (each field, in every element of an array of structs) with the addresses it holds
        by_element = words.reshape(-1, inside.size)
        for word in np.flatnonzero(inside):
            held = by_element[:, word]
            found.append((what, f"{8 * int(word)} to {8 * int(word) + 7}", held[held != 0]))
    return found


def _spoken_list(items: list[str], most: int = 4) -> str:
    """"a", "a and b", "a, b and c", ...: at most `most` of them, then how many more."""
    if len(items) > most:
        items = [*items[:most - 1], f"{len(items) - most + 1} more words"]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


class _CheckedBuffers:
    """Every array argument of one launch in a guarded copy of the whole array it views (its NumPy
    base, as CuPy passes a view's pointer into its array's memory: a stencil given `in + RADIUS`
    reads `in[-1]`), at its place there; arguments that view one array share one copy."""

    def __init__(self, launch, names: list[str]):
        self.launch, self.names = launch, names
        self.copies: dict[int, _GuardedCopy] = {}  # argument position -> the copy of its whole array
        self.offsets: dict[int, int] = {}  # argument position -> where it starts in that copy (bytes)
        self.views: dict[int, np.ndarray] = {}  # argument position -> its part of the copy, as the argument
        self.poisoned: list[int] = []
        self.held: list[tuple[str, str | None, np.ndarray]] = []  # what holds pointers to device memory (_held_pointers)
        self.heap: device_heap.RunAddresses | None = None  # the first run's allocations (malloc, new)

    def __enter__(self):
        launch, names = self.launch, self.names
        arrays = {i: x for i, x in enumerate(launch.args) if isinstance(x, np.ndarray)}
        wholes = {}
        for i, array in arrays.items():
            whole, self.offsets[i] = device_memory.place_in_whole(array)
            twin = next((j for j in self.copies if device_memory.same_memory(wholes[j], whole)), None)
            if twin is not None:
                wholes[i] = wholes[twin]
                self.copies[i] = self.copies[twin]
                self.copies[i].names.append(names[i])
                self.copies[i].read_only &= launch.signature[i].startswith("const ")
            else:
                for j in self.copies:
                    if np.shares_memory(wholes[j], whole):
                        raise KernelError(f"{launch.kernel}: arguments {names[j]} and {names[i]} overlap partially")
                wholes[i] = whole
                self.copies[i] = _GuardedCopy(whole, [names[i]], launch.signature[i].startswith("const "))
            flat = self.copies[i].view.reshape(-1).view(np.uint8)
            self.views[i] = flat[self.offsets[i]:self.offsets[i] + array.nbytes].view(array.dtype).reshape(array.shape)
        for i in launch.write_only:
            if len(self.copies[i].names) == 1 and self.views[i].dtype.kind == "f":
                self.views[i].fill(np.nan)
                self.poisoned.append(i)
        self.inputs_finite = all(
            np.isfinite(wholes[i]).all() for i in arrays if i not in self.poisoned and wholes[i].dtype.kind == "f"
        )
        self.outputs = [i for i in arrays if not launch.signature[i].startswith("const ")]
        for copy in set(self.copies.values()):
            copy.protect()
        # the whole array of each output given as a view of part of it, as it starts, put back before
        # every run: a kernel may write past its view into the array's other elements, which a run must
        # not find changed by the one before (bytes: a NumPy copy of a struct array leaves its padding
        # undefined); an output given whole is put back from the snapshot alone
        partial = {self.copies[i] for i in self.outputs} - {
            self.copies[i] for i in self.outputs if self.views[i].nbytes == self.copies[i].array.nbytes}
        self._start_of_wholes = [(copy, _bytes_of(copy.view).copy()) for copy in partial]
        return self

    def snapshot(self) -> dict:
        """The writable arguments' current contents, byte for byte: a NumPy copy of a struct array
        leaves its padding undefined, and the runs are compared byte for byte."""
        return {i: np.frombuffer(self.views[i].tobytes(), self.views[i].dtype).reshape(self.views[i].shape)
                for i in self.outputs}

    def restore(self, snapshot: dict) -> None:
        """The arrays of outputs given as views as they started, then the arguments' views as in
        `snapshot`."""
        for copy, start in self._start_of_wholes:
            _bytes_of(copy.view)[...] = start
        for i, contents in snapshot.items():
            self.views[i][...] = contents

    def fill_difference(self, first: dict) -> str:
        """" (args[1][0] is 1 with 0xFF bytes and 4 with zeros)": the first element that differs from
        `first` (a run with the checking mode's 0xFF fills) now (one with zeros there); "" if none."""
        found = self.first_difference(first)
        return "" if found is None else \
            f" ({self.names[found[0]]}{list(found[1])} is {found[2]} with 0xFF bytes and {found[3]} with zeros)"

    def writable_wholes(self) -> list:
        """(copy, its bytes) of every writable array copied: the whole array, where an output is a view
        of it (a kernel may write past its view, as on a GPU), for put_back."""
        return [(copy, _bytes_of(copy.view).copy()) for copy in dict.fromkeys(self.copies.values())
                if not copy.read_only]

    @staticmethod
    def put_back(wholes: list) -> None:
        for copy, contents in wholes:
            _bytes_of(copy.view)[...] = contents

    def integer_outputs(self) -> bool:
        """Whether an output holds no floating-point values (so no NaN can show a poisoned read)."""
        return any(self.views[i].dtype.kind != "f" for i in self.outputs)

    def first_difference(self, snapshot: dict, rounding: bool = False, atomic_magnitude: float = 0.0) -> tuple | None:
        """(argument position, index, value in `snapshot`, value now: as text) of the first element
        that differs from `snapshot` in its bits, or None; with `rounding` (the kernel used atomics, so
        its floating-point sums may come in another order), floating-point arguments may differ by what
        summing in another order rounds: ROUNDING_RTOL of the array's largest magnitude, or of the
        largest an atomicAdd of floats found or added (`atomic_magnitude`), whichever is larger."""
        for i, before in snapshot.items():
            now = self.views[i]
            if now.size == 0:  # an empty array (a kernel's tail of length 0): nothing to differ
                continue
            differs = elements_that_differ(before, now, self.launch.signature[i], rounding, atomic_magnitude)
            differs = device_heap.same_words(before, now, differs, self.heap)
            if differs.any():
                index = tuple(int(v) for v in np.unravel_index(int(np.argmax(differs)), now.shape))
                return i, index, _value_text(before[index]), _value_text(now[index])
        return None

    def in_another_order(self, snapshot: dict, atomic_magnitude: float) -> list[str]:
        """What says that the outputs hold `snapshot`'s results in another order, and nothing else
        differs, or [] where any differing output is not so: where a kernel places results at slots its
        threads took from an atomic counter (`slot = atomicAdd(&count, 1); out[slot] = ...`: a stream
        compaction, a BFS frontier, Kilosort's spike lists), the slots go in the order the threads came,
        on a GPU too, and compute-sanitizer's racecheck sees no hazard. Outputs of one length are
        reordered as one table (a spike's time, template and amplitude stay together): as rows along
        their first axis, or, where each row has a counter (a neighbour list of N rows of MAX slots,
        `list[n * MAX + atomicAdd(&count[n], 1)]`), as the values along the second axis of each row."""
        differing = {i: before for i, before in snapshot.items()
                     if self.first_difference({i: before}, rounding=True, atomic_magnitude=atomic_magnitude)}
        tables: dict[int, list[int]] = {}
        for i, before in differing.items():
            if before.ndim == 0:
                return []
            tables.setdefault(before.shape[0], []).append(i)

        def records(arrays, axes: int) -> np.ndarray:  # the arrays side by side, a record per index of `axes`
            arrays = [np.ascontiguousarray(a) for a in arrays]
            shape = arrays[0].shape[:axes]
            table = np.concatenate([a.reshape(*shape, -1).view(np.uint8) for a in arrays], axis=axes)
            return np.ascontiguousarray(table).view(f"V{table.shape[-1]}").reshape(shape)

        said = []
        for members in tables.values():
            names = " and ".join(self.names[i] for i in members)
            verb = "holds" if len(members) == 1 else "hold"
            before, now = [differing[i] for i in members], [self.views[i] for i in members]
            if np.array_equal(np.sort(records(before, 1)), np.sort(records(now, 1))):
                said.append(f"{names} {verb} the same rows in another order")
            elif (all(a.ndim >= 2 and a.shape[1] == before[0].shape[1] for a in before)
                  and np.array_equal(np.sort(records(before, 2), axis=1), np.sort(records(now, 2), axis=1))):
                said.append(f"{names} {verb} the same values in each row in another order")
            else:
                return []
        return said

    def assert_same_as(self, snapshot: dict, atomics: bool = False, atomic_magnitude: float = 0.0) -> list[str]:
        """KernelError unless every argument holds what it holds in `snapshot` (first_difference), up to
        rounding when the kernel used `atomics`, whose tickets may also place results in another order:
        what says which outputs then hold their results so (in_another_order)."""
        found = self.first_difference(snapshot, rounding=atomics, atomic_magnitude=atomic_magnitude)
        if found is None:
            return []
        reordered = self.in_another_order(snapshot, atomic_magnitude) if atomics else []
        if reordered:
            return reordered
        i, index, before, now = found
        raise KernelError(
            f"{self.launch.kernel}: the result depends on the order in which "
            f"{_who_takes_turns(self.launch.grid)} run between barriers ({self.names[i]}{list(index)} is {before} "
            f"in one order and {now} in another"
            + (", beyond what the order of its atomics rounds" if atomics else "")
            + "): threads race on __shared__ or global memory, e.g. a __syncthreads() is missing (or, "
            "between the lanes of a warp, a __syncwarp(): lanes do not run in lockstep here), or blocks "
            "share global memory that one of them writes (here blocks take turns, barrier to barrier); "
            "or threads add to one element with `+=` where an atomicAdd is needed (a scatter of gradients "
            "to repeated indices); or a thread uses a local variable it never set, whose value is whatever "
            "its stack held"
            + (ORDER_OF_ATOMICS if atomics else "")
        )

    def pointers(self) -> list:
        return [self.copies[i].start + self.offsets[i] if i in self.copies else None
                for i in range(len(self.launch.args))]

    def written_before_any(self, fill: int = 0xFF) -> bool:
        return any(copy.written_before(fill) is not None for copy in set(self.copies.values()))

    def assert_nothing_written_before(self, fill: int = 0xFF) -> None:
        """KernelError when the kernel wrote into the bytes right before an array (an index of -1:
        `a[i - 1]` at i = 0), which lie in the array's first page, before the guard can stop it: they
        hold other bytes than their `fill` now."""
        for copy in set(self.copies.values()):
            reach = copy.written_before(fill)
            if reach is not None:
                raise KernelError(
                    f"{self.launch.kernel}: a write before the start of {' / '.join(copy.names)}: up to "
                    f"{-(-reach // copy.array.itemsize)} element(s) before it (found after the launch, in the "
                    "bytes the checking mode fills before each array; an index of -1, such as a[i - 1] at i = 0?)")

    def describe_fault(self, address: int) -> str:
        for copy in set(self.copies.values()):
            text = copy.describe(address)
            if text:
                return text
        if address < mmap.PAGESIZE:
            return f" at address {address:#x}, through a null pointer" + (
                " (an argument given as None is one)" if any(value is None for value in self.launch.args) else
                " (no argument is one; a local array written past its end overwrites what the thread saved on "
                "its stack, whose next use can land here)")
        beside = device_memory.beside_an_array(address)
        if beside is not None:  # device memory that a struct's pointer reaches (ArrayFire's Param<T>)
            where, start, length = beside
            holders = _holders_of(self.held, start, length)
            if holders:
                return (f": an access {where} of the device memory that {' and '.join(holders)} "
                        f"reach{'es' if len(holders) == 1 else ''}")
        return f" at address {address:#x}, outside every buffer passed to the kernel"

    def word_at(self, address: int) -> str | None:
        """How a race report names the 4-byte word at `address` of an argument's copy: its element in each
        argument whose part of the array it is (two views of one array name it twice), or its element in
        the whole array that the arguments view, where it lies outside their parts."""
        def element(array: np.ndarray, offset: int) -> str:
            at = offset // array.itemsize
            return f"[{', '.join(map(str, np.unravel_index(at, array.shape)))}]" if array.ndim > 1 else f"[{at}]"

        named = [self.names[i] + element(view, address - self.copies[i].start - self.offsets[i])
                 for i, view in self.views.items()
                 if 0 <= address - self.copies[i].start - self.offsets[i] < view.nbytes]
        if named:
            return " / ".join(named)
        for copy in set(self.copies.values()):
            if copy.start <= address < copy.end:
                return (f"the array that {' and '.join(copy.names)} {'views' if len(copy.names) == 1 else 'view'}, "
                        f"its element {element(copy.array, address - copy.start)}, outside "
                        f"{'that view' if len(copy.names) == 1 else 'those views'}")
        return None

    def copy_spans(self) -> list[tuple[int, int, str]]:
        """(first, end, names) of each guarded copy's memory, its guards included."""
        return [(copy.base, copy.base + copy.length, " / ".join(copy.names)) for copy in set(self.copies.values())]

    def copy_back(self) -> None:
        for copy in {self.copies[i] for i in self.outputs}:
            copy.array[...] = copy.view  # the whole array: a kernel may write past its view, as on a GPU

    def __exit__(self, *exc):
        for copy in set(self.copies.values()):
            copy.release()
        return False

    def fill_before(self, value: int) -> None:
        for copy in set(self.copies.values()):
            copy.fill_before(value)

    def nan_in_outputs(self) -> bool:
        """Whether a floating-point output (the guarded copy) holds NaN now."""
        return any(self.views[i].dtype.kind == "f" and np.isnan(self.views[i]).any() for i in self.outputs)

    def assert_no_poison_left(self, find_shared_read_unwritten, find_nan_without_fills) -> None:
        """KernelError when an output holds NaN from NaN-free inputs, naming the __shared__ arrays
        that `find_shared_read_unwritten()` (LoadedKernels._shared_read_unwritten, which runs the
        launch again, so only then) finds to carry their fill into it, where there are some; none
        when `find_nan_without_fills()` (LoadedKernels._nan_without_fills) finds the same NaN with
        nothing filled with NaN: the kernel computed it, as a GPU does."""
        if not self.inputs_finite:
            return
        names = self.names
        for i in self.outputs:
            view = self.views[i]
            if view.dtype.kind != "f" or not np.isnan(view).any():
                continue
            nan_mask = np.isnan(view)
            nan_at = np.argwhere(nan_mask)  # before the reruns overwrite the copy
            shared = find_shared_read_unwritten()
            if not shared:
                computed = find_nan_without_fills().get(i)
                if computed is not None and computed[nan_mask].all():
                    continue  # every NaN is there with nothing filled: the kernel's arithmetic
            if shared:
                raise KernelError(self.unwritten_shared_report(i, tuple(int(v) for v in nan_at[0]), shared,
                                                               count=len(nan_at)))
            poisoned = f"{names[i]} (filled with NaN before the launch), " if i in self.poisoned else ""
            raise KernelError(
                f"{self.launch.kernel}: {len(nan_at)} element(s) of {names[i]} hold NaN after the launch "
                f"(first at index {tuple(int(v) for v in nan_at[0])}) though no input did: the kernel read poisoned "
                f"memory ({poisoned}__shared__ memory before any thread wrote it, or the bytes right before an "
                "array, an index of -1) or left elements unwritten"
            )

    def first_run_nan_report(self, first: dict, found: tuple, shared: list[str]) -> str:
        """unwritten_shared_report for two runs that differ (`found`: first_difference's answer),
        counting the elements NaN in the first run's output (`first`) where the first run holds NaN
        there (the mirrored run's fill is no NaN)."""
        i, index, before, _ = found
        values = float_values(first[i], self.launch.signature[i])[0] if before == "nan" else None
        if values is None:
            return self.unwritten_shared_report(i, index, shared)
        if values.ndim > first[i].ndim:  # a complex element's two parts
            values = np.where(np.isnan(values).any(axis=-1), np.nan, 0.0)
        nan_at = np.argwhere(np.isnan(values))
        return self.unwritten_shared_report(i, tuple(int(v) for v in nan_at[0]), shared, count=len(nan_at),
                                            run="the first of its two runs")

    def unwritten_shared_report(self, i: int, index: tuple, shared: list[str], count: int | None = None,
                                run: str = "the launch") -> str:
        """The report of __shared__ arrays (`shared`) read where no thread had written them, whose NaN
        fill reached output `i` at `index` (`count` elements of it after the launch, where known)."""
        held = (f"{count} element(s) of {self.names[i]} hold NaN after {run} (first at index {index})"
                if count is not None else f"{self.names[i]}{list(index)} is NaN in one of its two runs")
        return (f"{self.launch.kernel}: {held} though no input did: the kernel read {' and '.join(shared)} where no "
                "thread of the block had written it yet (the arrays are filled with NaN before every block): where "
                "a thread writes it before another reads it, a __syncthreads() between the two is missing (or, "
                "between the lanes of a warp, a __syncwarp(): lanes do not run in lockstep here), or the thread "
                "that writes it returned before it did (a thread that returns early, beyond the data, leaves its share "
                "of a tile unwritten), or no thread of the block writes that element at all (a tile's halo that no "
                "thread loads: ENCCS's shared-memory heat equation)")


