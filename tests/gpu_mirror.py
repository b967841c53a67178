"""Every launch of the CPU runner's RawModule, run again on a GPU through cupy.RawModule, its results compared.

    NN_CUDA_GPU_MIRROR=DIR pytest tests/test_cuda_cpu_*.py     (conftest.py installs it; a GPU and CuPy needed)

The CPU runner claims to run the code a GPU runs. With this plugin every kernel the tests launch
through `nn_cuda.cuda_cpu.RawModule` is also launched by CuPy, with the same source, options, name
expressions, launch shape and arguments, as the test wrote them (a scalar as a NumPy scalar of its
parameter's type): its array arguments are copied to the GPU before the CPU
runs, and afterwards every array argument and every __device__ / __constant__ variable the test
read through get_global is compared, bit for bit and by its largest difference. A launch the CPU
runner refuses or reports (KernelError, TypeError, ...) is not sent to the GPU: planted faults would
lose the GPU's context. One JSON line per launch goes to DIR/<worker>.jsonl, with the test's id;
scripts/runner_vs_gpu.py sums them up. Tests still assert only on the CPU's results.

`Mirror(device)` takes what stands for the GPU: `cupy_device()` on a GPU; the tests of this plugin
give it a second CPU runner built with a macro set, which runs without a GPU.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Callable

import numpy as np

from nn_cuda.cuda_cpu.raw_module import DEFAULT_DYNAMIC_SHARED_BYTES


@dataclasses.dataclass
class Device:
    """What the mirror launches on: a RawModule class like CuPy's, and array copies to and from it."""

    raw_module: Callable
    to_device: Callable
    to_host: Callable
    synchronize: Callable
    #: copies bytes into a module's global variable: (module, name, uint8 bytes)
    write_global: Callable
    #: reads them back: (module, name, byte count) -> uint8 array
    read_global: Callable


def cupy_device() -> Device:
    import cupy

    def write_global(module, name, data):
        module.get_global(name).copy_from_host(data.ctypes.data, data.nbytes)

    def read_global(module, name, nbytes):
        out = np.empty(nbytes, np.uint8)
        module.get_global(name).copy_to_host(out.ctypes.data, nbytes)
        return out

    return Device(cupy.RawModule, cupy.asarray, cupy.asnumpy, cupy.cuda.runtime.deviceSynchronize,
                  write_global, read_global)


#: the differing elements a record lists (index, the CPU's bits, the GPU's bits)
SHOWN = 64


def _compare(cpu: np.ndarray, gpu: np.ndarray) -> dict:
    """Bit-for-bit equality, and for differing numbers how far apart they are."""
    cpu, gpu = np.ascontiguousarray(cpu), np.ascontiguousarray(gpu)
    if cpu.tobytes() == gpu.tobytes():
        return {"same_bits": True}
    result = {"same_bits": False, "dtype": str(cpu.dtype), "size": int(cpu.size)}
    if cpu.dtype.kind in "fiu" and cpu.shape == gpu.shape:
        with np.errstate(invalid="ignore"):
            a, b = cpu.astype(np.float64).ravel(), gpu.astype(np.float64).ravel()
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        result["elements_differing"] = int(differ.sum())
        finite = differ & np.isfinite(a) & np.isfinite(b)
        if finite.any():
            result["max_abs_difference"] = float(np.abs(a - b)[finite].max())
            scale = np.abs(a[finite]).max()
            result["max_relative_difference"] = float(np.abs(a - b)[finite].max() / scale) if scale else None
        indices = np.flatnonzero(differ)
        if not differ.any():  # NaNs with other bits
            indices = np.flatnonzero(np.frombuffer(cpu.tobytes(), f"u{cpu.itemsize}")
                                     != np.frombuffer(gpu.tobytes(), f"u{cpu.itemsize}"))
        result["first_differing"] = int(indices[0])
        bits = f"u{cpu.itemsize}"
        result["differing"] = [[int(i), int(cpu.ravel().view(bits)[i]), int(gpu.ravel().view(bits)[i])]
                               for i in indices[:SHOWN]]
    else:
        result["bytes_differing"] = int(np.sum(np.frombuffer(cpu.tobytes(), np.uint8)
                                               != np.frombuffer(gpu.tobytes(), np.uint8)))
    return result


class Mirror:
    """Wraps RawModule, its get_global and its kernels' calls; `records` holds every launch's outcome."""

    def __init__(self, device: Device, record_file: Path | None = None):
        self.device = device
        self.record_file = record_file
        self.records: list[dict] = []
        self.gpu_lost: str | None = None  # after a failed GPU launch its context may be gone
        self._inside = threading.local()  # the device's own launches, when it is a CPU runner too

    # ---- what the plugin patches ----------------------------------------------------------------

    def install(self, monkeypatch) -> None:
        from nn_cuda.cuda_cpu import raw_module

        mirror = self
        original_init = raw_module.RawModule.__init__
        original_get_function = raw_module.RawModule.get_function
        original_get_global = raw_module.RawModule.get_global
        original_call = raw_module.RawKernel.__call__

        def init(module, **kwargs):
            original_init(module, **kwargs)
            module._mirror_arguments = kwargs
            module._mirror_globals = {}

        def get_function(module, name):
            kernel = original_get_function(module, name)
            kernel._mirror_module = module
            return kernel

        def get_global(module, name):
            view = original_get_global(module, name)
            if hasattr(module, "_mirror_globals"):
                module._mirror_globals[name] = view
            return view

        def call(kernel, grid, block, args, *, shared_mem=0):
            module = getattr(kernel, "_mirror_module", None)
            if module is None or getattr(mirror._inside, "active", False):
                return original_call(kernel, grid, block, args, shared_mem=shared_mem)
            return mirror.launch(module, kernel, original_call, grid, block, args, shared_mem)

        monkeypatch.setattr(raw_module.RawModule, "__init__", init)
        monkeypatch.setattr(raw_module.RawModule, "get_function", get_function)
        monkeypatch.setattr(raw_module.RawModule, "get_global", get_global)
        monkeypatch.setattr(raw_module.RawKernel, "__call__", call)

    # ---- one launch ------------------------------------------------------------------------------

    def launch(self, module, kernel, cpu_call, grid, block, args, shared_mem):
        record = {"test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0],
                  "kernel": kernel.name, "grid": _shape(grid), "block": _shape(block), "shared_mem": shared_mem,
                  "check": module.check, "cooperative": module.enable_cooperative_groups,
                  "code": hashlib.sha256(module.code.encode()).hexdigest()[:12]}
        before = None
        holds_pointer = _struct_holding_a_pointer(kernel, args)
        if holds_pointer:  # a host address the GPU would fault on, losing its context
            record["outcome"] = "not run: a struct argument holds a host pointer"
            record["error"] = holds_pointer
        elif self.gpu_lost is None:
            try:
                before = (self._to_device(kernel.signature, args),  # as the CPU starts from them
                          {name: np.array(view, np.uint8) for name, view in module._mirror_globals.items()})
            except Exception as error:  # an argument the GPU library will not take
                record["outcome"] = "argument refused on the GPU"
                record["error"] = _first_line(error)
                if "cudaError" in str(error) or "CUDA_ERROR" in str(error):
                    self.gpu_lost = f"{record['test']} {kernel.name}: {_first_line(error)}"
        try:
            cpu_call(kernel, grid, block, args, shared_mem=shared_mem)
        except BaseException as error:
            record["outcome"] = "CPU runner raised"
            record["error"] = f"{type(error).__name__}: {_first_line(error)}"
            self._write(record)
            raise
        if not holds_pointer and self.gpu_lost is not None:
            record["outcome"] = "not run: the GPU's context was lost earlier"
            record["error"] = self.gpu_lost
        elif not holds_pointer and before is not None:
            self._run_on_device(module, kernel, grid, block, args, *before, shared_mem, record)
        self._write(record)

    def _to_device(self, signature, args):
        """Arrays passed to pointer parameters copied to the device, one copy per array (an array passed
        twice is one buffer there, as in the runner); a scalar as a NumPy scalar of its parameter's
        type (a Python float would reach CuPy as a double); every other argument as given."""
        from nn_cuda.cuda_cpu import arguments

        if not isinstance(args, (tuple, list)) or len(args) != len(signature):
            raise TypeError("not the kernel's arguments")
        copies: dict = {}  # id of an array argument -> its device copy

        def device_copy(array):
            if id(array) not in copies:
                copies[id(array)] = self.device.to_device(np.array(array, copy=True))
            return copies[id(array)]

        return [device_copy(a) if _is_buffer(a, c_type)
                else arguments.scalar_dtype(c_type).type(a) if c_type in arguments.SCALAR_CTYPES else a
                for a, c_type in zip(args, signature)]

    def _run_on_device(self, module, kernel, grid, block, args, device_args, globals_before, shared_mem, record):
        try:
            device_module = self._device_module(module)
            function = device_module.get_function(kernel.name)
        except Exception as error:
            record["outcome"] = "GPU build failed"
            record["error"] = _first_lines(error)
            return
        try:
            self._inside.active = True
            for name, data in globals_before.items():
                self.device.write_global(device_module, name, data)
            if kernel.max_dynamic_shared_size_bytes != DEFAULT_DYNAMIC_SHARED_BYTES:
                function.max_dynamic_shared_size_bytes = kernel.max_dynamic_shared_size_bytes
            function(grid, block, tuple(device_args), shared_mem=shared_mem)  # tuples: the runner took them
            self.device.synchronize()
        except Exception as error:
            record["outcome"] = "GPU launch failed"
            record["error"] = _first_lines(error)
            if "cudaError" in type(error).__name__ or "CUDA" in str(error):
                self.gpu_lost = f"{record['test']} {kernel.name}: {_first_line(error)}"
            return
        finally:
            self._inside.active = False
        compared = {}
        for i, (cpu, device, c_type) in enumerate(zip(args, device_args, kernel.signature)):
            if _is_buffer(cpu, c_type):
                compared[f"args[{i}]"] = _compare(cpu, self.device.to_host(device))
        for name, view in module._mirror_globals.items():
            compared[name] = _compare(np.array(view, np.uint8),
                                      self.device.read_global(device_module, name, view.nbytes))
        record["compared"] = compared
        record["outcome"] = "same bits" if all(c["same_bits"] for c in compared.values()) else "differs"

    def _device_module(self, module):
        built = getattr(module, "_mirror_device_module", None)
        if built is None:
            arguments = dict(module._mirror_arguments)
            arguments.pop("check", None)
            arguments.pop("name", None)
            built = self.device.raw_module(**arguments)
            module._mirror_device_module = built
        return built

    def _write(self, record: dict) -> None:
        self.records.append(record)
        if self.record_file is not None:
            with open(self.record_file, "a") as out:
                out.write(json.dumps(record) + "\n")


def _struct_holding_a_pointer(kernel, args) -> str | None:
    """The runner's own test (the checking mode runs such a launch once): which struct argument holds
    a word that is the address of writable memory of this process."""
    from types import SimpleNamespace

    from nn_cuda.cuda_cpu import arguments
    from nn_cuda.cuda_cpu.runner import _held_pointers, _holders_of

    try:
        packed = arguments.pack(kernel.name, kernel.signature, args)
    except TypeError:
        return None
    addresses = [f"args[{i}] (a function's address on the CPU)" for i, (value, c_type) in
                 enumerate(zip(packed, kernel.signature)) if c_type == "function pointer" and int(value) != 0]
    if addresses:
        return " and ".join(addresses)
    launch = SimpleNamespace(args=packed, signature=kernel.signature)
    held = _held_pointers(launch, [f"args[{i}]" for i in range(len(packed))], [])
    return " and ".join(_holders_of(held)) or None


def _is_buffer(argument, c_type: str) -> bool:
    return isinstance(argument, np.ndarray) and c_type.endswith("*")


def _shape(value):
    return [int(v) for v in value] if isinstance(value, (tuple, list)) else [int(value)]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def _first_lines(error: BaseException) -> str:
    return f"{type(error).__name__}: " + "\n".join(str(error).strip().splitlines()[:8])[:1500]
