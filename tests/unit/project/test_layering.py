"""Data flows one way: system → probes → facts → checks → findings → reports. Imports must agree.

Each module belongs to one layer; each layer lists the layers it may import (an allow-list, so a
new edge is a decision written here, not an accident). The edges come from the resolved import
graph (`tests/import_graph.py`): relative imports, `from cudnn_doctor import probes`, imports inside
functions all count. Imports under `if TYPE_CHECKING:` count like any other: a layer may name a
type only from a layer it may import at run time, so a type-only edge cannot hide a wrong design.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.import_graph import imports_of, lazy_exports, modules_of, package_graph

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "cudnn_doctor"
MODULES = modules_of(PACKAGE)
EXPORTS = {name: lazy_exports(m.path.read_text(encoding="utf-8")) for name, m in MODULES.items() if m.is_package}

# Module (or package, with all it holds) → layer. A module missing here fails `test_every_module_has_a_layer`.
LAYER_OF = {
    "cudnn_doctor": "package",  # the root: `__version__` and lazy re-exports only (each resolved to its module)
    "cudnn_doctor.__main__": "cli",
    "cudnn_doctor.errors": "errors",
    "cudnn_doctor.paths": "paths",
    "cudnn_doctor.versions": "versions",
    "cudnn_doctor.lazyre": "lazyre",  # regexes compiled on first use (issue 15)
    "cudnn_doctor.record": "record",  # NamedTuple's behaviour at a fraction of its class-creation cost (issue 15)
    "cudnn_doctor.textenum": "textenum",  # a closed set of names that is still its text (issue 32)
    "cudnn_doctor.privacy": "privacy",
    "cudnn_doctor.system.untrusted": "untrusted",  # the one hardened reader of user-given files (regular, bounded, strict)
    "cudnn_doctor.system.archive": "archive",  # the hardened reader of a cuDNN archive (zip, tar, folder)
    "cudnn_doctor.system.spool": "archive",  # the folder an install reads the archive into
    "cudnn_doctor.system.sink": "archive",  # where a member's bytes go as they are read
    "cudnn_doctor.binaries": "binaries",
    "cudnn_doctor.system": "system",
    "cudnn_doctor.system.interface": "interface",  # the System protocol and the values it returns, without any machine
    "cudnn_doctor.loader": "loader",
    "cudnn_doctor.facts": "facts",
    "cudnn_doctor.kinds": "facts",  # the enums facts are said in
    "cudnn_doctor.loads": "facts",  # what a process would load: the loader's facts
    "cudnn_doctor.knowledge": "knowledge",
    "cudnn_doctor.verify": "verify",
    "cudnn_doctor.run": "run",  # what a failing program said and what its loader did
    "cudnn_doctor.run.hook": "cli",  # an entry point inside the user's interpreter: wires the diagnosis like the CLI
    "cudnn_doctor.probes": "probes",
    "cudnn_doctor.checks": "checks",
    "cudnn_doctor.findings": "findings",
    "cudnn_doctor.diagnosis": "findings",  # the (facts, findings) pair the reports render
    "cudnn_doctor.reports": "reports",
    "cudnn_doctor.install": "install",
    "cudnn_doctor.fixes": "fixes",  # what `fix` would change, planned from facts and findings only (never the machine)
    "cudnn_doctor.install.installing": "operations",  # `install` as a library call: preflight, plan, apply, re-check
    "cudnn_doctor.fixes.applying": "operations",  # `fix` as a library call: diagnose, plan, apply, re-diagnose
    "cudnn_doctor.planner": "planner",
    "cudnn_doctor.planner.machine": "planner-inputs",
    "cudnn_doctor.planner.inputs": "planner-inputs",
    "cudnn_doctor.diagnose": "diagnose",
    "cudnn_doctor.fleet": "fleet",  # fleet: snapshots of many nodes (files or a Ray cluster) → node results
    "cudnn_doctor.fleet.model": "fleet-model",  # a fleet's values and their aggregation, which the reports render
    "cudnn_doctor.cli": "cli",
}

# Pure helpers that import nothing from the package but `record`: every layer may use them.
LEAVES = {"errors", "paths", "versions", "lazyre", "record", "textenum"}

# Layer → the other layers it may import (besides itself, the root package and LEAVES).
ALLOWED: dict[str, set[str]] = {
    "package": set(),  # imported by every module (it is every module's parent): it must import nothing
    "errors": set(),
    "paths": set(),
    "versions": set(),
    "lazyre": set(),
    "record": set(),
    "textenum": set(),
    "privacy": set(),
    "untrusted": set(),  # `errors` only: bytes and documents in, an InputError out
    "archive": {"knowledge"},  # NVIDIA's archive names say the CUDA an archive was built for
    "binaries": set(),  # open files and bytes in, header facts out (system/binaries opens the files)
    "facts": set(),  # plain values; only `versions` (a leaf) to parse them
    "knowledge": {"untrusted"},  # data tables; `errors` to report a bad row; a `--kb` file read by the hardened reader
    "findings": {"facts"},  # a Diagnosis pairs facts with the findings drawn from them
    "interface": {"binaries"},  # System.read_binary returns a binaries.BinaryInfo
    "system": {
        "interface",  # the concrete systems implement it
        "binaries",  # the live system parses headers of real files; the fixture and recorder store BinaryInfo
        "privacy",  # the snapshot recorder keeps only the environment the diagnosis reads
        "untrusted",  # fixtures are read by the hardened reader; open_regular lives there
    },
    "loader": {
        "interface",  # it reads folders through a System, never a concrete one
        "binaries",  # a library's imports come from its headers
        "facts",
        "knowledge",  # which names a CUDA/cuDNN library goes by
    },
    "probes": {
        "interface",
        "binaries",
        "loader",
        "knowledge",
        "facts",
    },  # probes/builds.py types each framework build once
    # Checks are pure functions of facts and knowledge: never a system, a probe, the loader, binaries, a report or the CLI.
    "checks": {"facts", "knowledge", "findings", "planner"},  # a fix that names versions asks the planner
    "reports": {
        "facts",
        "findings",
        "checks",  # rule metadata (titles, areas) lives with the rules; rules import no probe or system
        "privacy",  # the JSON report keeps only the environment the diagnosis reads
        "planner",  # plan's report renders a plan and its steps
        "run",  # run's report renders what the failing program's loader did
        "fleet-model",  # fleet's reports render the groups, drift and per-node findings (never a probe or a system)
        "fixes",  # whether `fix` has changes for a finding is its planner's answer, asked with the facts
        "install",  # rollback's and history's results (issue 31: every command's output is rendered in reports/)
        "operations",  # install's and fix's results: the commands compute, the reports speak
    },
    "install": {
        "untrusted",  # the journal and the history are read back by the hardened reader
        "interface",  # every file change goes through a System
        "facts",  # the toolkit facts of the target
        "loader",  # the loader's folder index says whether a folder is on the library path
        "binaries",  # a library's machine is named as the headers name it, in one table
        "knowledge",  # NVIDIA's archive names say the CUDA an archive was built for
        "fixes",  # a fix's changes (data) are made concrete and applied in the install's transaction
        "archive",  # the archive is read, judged and spooled by the archive reader
    },
    # A command that changes the machine, as a library call: it wires the pipeline (diagnose, probes) to the
    # transaction (install) and the fix planner, through a System; it prints nothing (the reports do).
    "operations": {"install", "fixes", "diagnose", "probes", "interface", "facts", "findings", "archive"},
    # A fix is planned from the finding and the facts (rule metadata from checks), never by reading the machine.
    "fixes": {"facts", "findings", "checks"},
    # verify runs its worker through a System and judges the figures with the knowledge (peaks, thresholds).
    "verify": {"interface", "knowledge", "untrusted"},  # its history file is read back by the hardened reader
    # run's reading of a failing program: its output, the loader's trace and check's findings, all given to it.
    "run": {
        "findings",
        "knowledge",
    },  # the one catalogue of the stack's error messages is knowledge (knowledge/messages.py)
    # The planner is a search over knowledge alone; what a plan leaves open is read from the machine by its inputs.
    "planner": {"knowledge"},
    "planner-inputs": {"planner", "knowledge", "system", "interface", "probes", "facts"},
    "diagnose": {
        "interface",
        "probes",
        "facts",
        "checks",
        "findings",
    },  # the library entry point runs the whole pipeline
    # A fleet's values: node results, stack keys read from facts, groups and drift; nothing that reads a machine.
    "fleet-model": {"facts", "findings"},
    # fleet replays each node's snapshot through a FixtureSystem and the diagnosis; a node's task records its machine
    # (probes through a recording live system, or another interpreter as a child process through the system layer).
    "fleet": {"fleet-model", "interface", "system", "probes", "diagnose", "facts", "findings", "privacy"},
    "cli": set(LAYER_OF.values()),  # parsing and dispatch: it wires everything
}


def layer_of(module: str) -> str:
    """The layer of a module of the package: the longest key of LAYER_OF it falls under."""
    if module in LAYER_OF:
        return LAYER_OF[module]
    parts = module.split(".")
    for end in range(len(parts) - 1, 1, -1):  # stop before the root: it holds only itself
        prefix = ".".join(parts[:end])
        if prefix in LAYER_OF:
            return LAYER_OF[prefix]
    raise KeyError(f"{module} has no layer: add it to LAYER_OF in tests/unit/project/test_layering.py")


def bad_edges(module: str, imported: set[str]) -> list[str]:
    """The imports of `module` that its layer may not make, as 'a → b (layer → layer)'."""
    source = layer_of(module)
    allowed = ALLOWED[source] | LEAVES | {source, "package"}
    bad = []
    for target in sorted(imported):
        if target != "cudnn_doctor" and not target.startswith("cudnn_doctor."):
            continue
        if target not in MODULES:
            bad.append(f"{module} → {target} (no such module)")
        elif layer_of(target) not in allowed:
            bad.append(f"{module} → {target} ({source} → {layer_of(target)})")
    return bad


def edges_of(module: str, source: str) -> set[str]:
    return imports_of(source, module, MODULES[module].is_package if module in MODULES else False, MODULES, EXPORTS)


def test_every_module_has_a_layer():
    for module in MODULES:
        assert layer_of(module) in ALLOWED


def test_the_leaves_and_the_root_import_nothing_from_the_package():
    """Nothing but `record`, the base of their values, which itself imports nothing."""
    graph = package_graph(PACKAGE)
    for module in MODULES:
        if layer_of(module) in LEAVES | {"package"}:
            allowed = {"cudnn_doctor.record"} if layer_of(module) in LEAVES - {"record"} else set()
            assert not {t for t in graph[module] if t.startswith("cudnn_doctor")} - allowed, module


def test_every_import_is_allowed():
    graph = package_graph(PACKAGE)
    bad = [edge for module in sorted(graph) for edge in bad_edges(module, graph[module])]
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_only_the_system_and_the_cli_touch_processes_and_the_registry():
    for module, imported in package_graph(PACKAGE).items():
        if layer_of(module) in ("system", "cli"):
            continue
        touched = {name.split(".")[0] for name in imported} & {"subprocess", "winreg", "ctypes", "pynvml"}
        assert not touched, f"{module} imports {touched}"


# The graph builder on small sources: each of these once slipped past a name-prefix test.

CHECK = "cudnn_doctor.checks.driver"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from cudnn_doctor import probes", "cudnn_doctor.probes"),
        ("from cudnn_doctor.probes import gpu", "cudnn_doctor.probes.gpu"),
        ("from ..probes import gpu", "cudnn_doctor.probes.gpu"),
        ("from .. import probes", "cudnn_doctor.probes"),
        ("from ..system.live import LiveSystem", "cudnn_doctor.system.live"),
        ("def f():\n    import cudnn_doctor.system.live\n", "cudnn_doctor.system.live"),
        ("def f():\n    from ..loader import resolve\n", "cudnn_doctor.loader.resolve"),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cudnn_doctor.probes import run_probes\n",
            "cudnn_doctor.probes",
        ),
        ("from cudnn_doctor import open_system", "cudnn_doctor.system"),  # a lazy re-export of the root package
        (
            "import importlib\nimportlib.import_module('cudnn_doctor.reports.terminal')\n",
            "cudnn_doctor.reports.terminal",
        ),
    ],
)
def test_a_check_cannot_reach_a_forbidden_layer_by_any_spelling(source, expected):
    imported = edges_of(CHECK, source)
    assert expected in imported
    assert any(f"→ {expected} " in edge for edge in bad_edges(CHECK, imported)), bad_edges(CHECK, imported)


def test_relative_imports_resolve_from_a_package_and_from_a_module():
    assert "cudnn_doctor.checks.registry" in edges_of("cudnn_doctor.checks", "from . import registry")
    assert "cudnn_doctor.checks.registry" in edges_of(CHECK, "from . import registry")
    assert "cudnn_doctor.facts" in edges_of(CHECK, "from ..facts import Facts")
    assert (
        bad_edges(
            CHECK,
            edges_of(CHECK, "from . import registry\nfrom ..facts import Facts\nfrom cudnn_doctor import knowledge"),
        )
        == []
    )


def test_an_attribute_that_is_not_a_module_is_not_an_import_of_it():
    assert edges_of(CHECK, "from cudnn_doctor.facts import Facts") == {"cudnn_doctor.facts"}


def test_a_relative_import_above_the_package_is_an_error():
    with pytest.raises(ValueError, match="above the top-level package"):
        edges_of(CHECK, "from .... import x")


def test_an_unknown_module_of_the_package_is_reported():
    assert bad_edges(CHECK, {"cudnn_doctor.nowhere"}) == [
        "cudnn_doctor.checks.driver → cudnn_doctor.nowhere (no such module)"
    ]


REPORTS = sorted(name for name in MODULES if layer_of(name) == "reports")


@pytest.mark.live
@pytest.mark.parametrize("module", REPORTS)
def test_a_report_loads_no_probe_and_no_system(module):
    """Rendering a diagnosis (a saved one, say) must not pay for, or depend on, the machinery that made it."""
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert module in loaded
    assert [
        m
        for m in loaded
        if m == "cudnn_doctor.diagnose" or m.startswith(("cudnn_doctor.probes", "cudnn_doctor.system"))
    ] == []


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE.parent), *filter(None, [env.get("PYTHONPATH")])])
    return env


@pytest.mark.live
def test_the_report_test_would_see_a_probe():
    """The subprocess probe above is not vacuous: importing the library entry point does load the probes."""
    code = textwrap.dedent("""
        import json, sys
        import cudnn_doctor.diagnose
        print(json.dumps(sorted(sys.modules)))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert "cudnn_doctor.probes" in json.loads(done.stdout)


# The machine behind one seam (issue 32): `os`, `shutil`, `subprocess` and `open()` belong in system/. The one module
# outside it that may use them is the maintainers' generator of the prebuilt knowledge, which the tool never runs.
BUILD_TOOLS = {"cudnn_doctor.knowledge.generate"}


def _reaches_host(source: str) -> bool:
    import ast

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] in ("os", "shutil", "subprocess") for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("os", "shutil", "subprocess"):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            return True
    return False


def test_only_the_system_reaches_the_host():
    reaching = {name for name, module in MODULES.items() if _reaches_host(module.path.read_text(encoding="utf-8"))}
    outside = {
        name for name in reaching if not name.startswith("cudnn_doctor.system.") and name != "cudnn_doctor.system"
    }
    assert outside == BUILD_TOOLS, f"os/shutil/subprocess/open outside system/: {sorted(outside - BUILD_TOOLS)}"


@pytest.mark.parametrize(
    ("source", "reaches"),
    [
        ("import os", True),
        ("import os.path as p", True),
        ("from shutil import rmtree", True),
        ("import subprocess, json", True),
        ("with open('x') as f: pass", True),
        ("import json\nfrom pathlib import PurePath", False),
        ("x.open('r')", False),  # a method of another object (a zip member, a Traversable) is not the builtin
    ],
)
def test_the_host_test_sees_each_spelling(source, reaches):
    assert _reaches_host(source) is reaches
