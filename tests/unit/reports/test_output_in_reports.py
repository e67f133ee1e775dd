"""Reports are the only code that prints (issue 31): no `print`, and no write to `sys.stdout` / `sys.stderr`, anywhere
else in the package. A command computes a result and hands it, with the stream, to its report."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "cudnn_doctor"

# Scripts run in another interpreter, whose standard output is the wire back to the doctor (not the user's screen),
# and the maintainers' generator of the prebuilt knowledge (`python -m cudnn_doctor.knowledge.generate`).
WIRE_OR_BUILD = {
    "system/scripts/framework_probe.py",
    "system/scripts/map_probe.py",
    "system/scripts/cudnn_doctor_verify/main.py",
    "fleet/node.py",
    "knowledge/generate.py",
}


def output_calls(source: str) -> list[int]:
    """The lines of `print(...)` calls and of `.write` / `.writelines` on `sys.stdout` or `sys.stderr`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        if isinstance(function, ast.Name) and function.id == "print":
            lines.append(node.lineno)
        elif isinstance(function, ast.Attribute) and function.attr in ("write", "writelines"):
            stream = function.value
            if (
                isinstance(stream, ast.Attribute)
                and stream.attr in ("stdout", "stderr")
                and isinstance(stream.value, ast.Name)
                and stream.value.id == "sys"
            ):
                lines.append(node.lineno)
    return lines


def test_only_reports_print():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("reports/") or relative in WIRE_OR_BUILD:
            continue
        offenders += [f"{relative}:{line}" for line in output_calls(path.read_text(encoding="utf-8"))]
    assert not offenders, "output outside reports/ (render it in a report): " + ", ".join(offenders)


def test_the_detector_sees_each_way_of_printing():
    """The scan finds what it must (a detector that finds nothing would pass the test above whatever the code did)."""
    source = "import sys\nprint('a')\nsys.stdout.write('b')\nsys.stderr.writelines(['c'])\nstream.write('fine')\nx = 'print(1)'\n"
    assert output_calls(source) == [2, 3, 4]


def test_every_allowed_script_exists():
    assert all((PACKAGE / name).is_file() for name in WIRE_OR_BUILD)
