"""The floor plan of nn_cuda (docs/architecture.md): no import circles, commands on top.

Read from the sources with `ast`, so imports inside functions count as much as those at the top.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "nn_cuda"
#: the command-line modules: nothing imports them, and they never import each other
COMMANDS = {"nn_cuda.train", "nn_cuda.grade", "nn_cuda.course", "nn_cuda.adversarial.cli", "nn_cuda.adversarial.__main__",
            "nn_cuda.report.__main__", "nn_cuda.bench.__main__", "nn_cuda.__main__"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict:
    """module -> the nn_cuda modules it imports (a package import counts as its __init__)."""
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in modules else base)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    assert cycles(import_graph()) == []


def test_the_circle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_commands_sit_on_top():
    graph = import_graph()
    assert COMMANDS <= set(graph), "a command module was renamed: update COMMANDS"
    for module, targets in graph.items():
        imported_commands = targets & COMMANDS
        if module == "nn_cuda.adversarial.__main__":
            imported_commands -= {"nn_cuda.adversarial.cli"}  # `python -m` runs the command it names
        assert not imported_commands, f"{module} imports the command(s) {sorted(imported_commands)}"


def test_the_scripts_sit_above_the_package():
    # scripts/ imports the library; a module of the package that imported a script would work only
    # where scripts/ happens to be on the path (as in these tests)
    scripts = {path.stem for path in (PACKAGE.parent / "scripts").glob("*.py")}
    assert {"bench_lr", "bench_diff", "bench_roofline", "gpu_check"} <= scripts
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            assert not {name.split(".")[0] for name in names} & scripts, f"{path} imports a script"
    for script in scripts:
        text = (PACKAGE.parent / "scripts" / f"{script}.py").read_text()
        assert "from ." not in text and 'if __name__ == "__main__":' in text, script


def test_no_import_waits_for_a_side_effect():
    offenders = [str(path) for path in PACKAGE.rglob("*.py") if "noqa: E402" in path.read_text()]
    assert offenders == []


def test_python_m_nn_cuda_lists_every_command():
    import importlib.util
    import subprocess
    import sys

    from nn_cuda.__main__ import COMMANDS as LISTED

    output = subprocess.run([sys.executable, "-m", "nn_cuda"], capture_output=True, text=True, check=True).stdout
    for module, _ in LISTED:
        assert f"python -m {module} " in output
        assert importlib.util.find_spec(module) is not None, f"{module} is listed but does not exist"
    listed = {module for module, _ in LISTED}
    assert {"nn_cuda.train", "nn_cuda.grade", "nn_cuda.course", "nn_cuda.bench", "nn_cuda.report",
            "nn_cuda.adversarial"} <= listed
    from nn_cuda.bench import MOVED

    (benchmarks,) = [line for line in output.splitlines() if "python -m nn_cuda.bench " in line]
    assert not any(name in benchmarks.split(": ", 1)[1].split(", ") for name in MOVED), benchmarks  # scripts now


def test_every_environment_variable_the_package_reads_is_in_the_help():
    import re

    from nn_cuda.config import ENVIRONMENT

    listed = {name.split("=")[0] for name, _ in ENVIRONMENT}
    read = set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        read |= set(re.findall(r"environ(?:\.get\(|\[)\s*\"(NN_CUDA_\w+)\"", text))
        read |= set(re.findall(r"_VARIABLE = \"(NN_CUDA_\w+)\"", text))
    assert {"NN_CUDA_KERNEL_DIR", "NN_CUDA_CPU_CHECK", "NN_CUDA_OFFLINE"} <= read
    assert read - listed == set(), "add them to ENVIRONMENT in nn_cuda/config.py"


def test_the_cpu_runner_does_not_import_the_backends():
    """nn_cuda.cuda_cpu is a leaf the backends use: its errors come from nn_cuda.errors."""
    graph = import_graph()
    runner = {module for module in graph if module.startswith("nn_cuda.cuda_cpu")}
    assert runner and all(not any(t.startswith("nn_cuda.backends") for t in graph[m]) for m in runner)
