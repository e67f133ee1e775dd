"""A rule is the one home of a finding: its area decides the report line, the internal-error
finding is a rule like the others, and findings of one root cause are said once."""

from __future__ import annotations

import io

from cudnn_doctor.checks import INTERNAL_ERROR, RULES, run_checks
from cudnn_doctor.checks.causes import link_causes
from cudnn_doctor.checks.registry import Rule
from cudnn_doctor.cli import main
from cudnn_doctor.facts import ProbeFailure
from cudnn_doctor.findings import Area, Finding, Severity
from cudnn_doctor.reports import terminal
from tests.conftest import LINUX_BASE, machine, run
from tests.unit.checks.test_cudnn_checks import CUDA, cudnn8, toolkit


def _report(document) -> str:
    out = io.StringIO()
    terminal.render(run(document), out, color=False)
    return out.getvalue()


def _area_line(report: str, title: str) -> str:
    return next(line for line in report.splitlines() if line.startswith("[") and f"] {title}:" in line)


def test_every_rule_names_its_area():
    assert all(isinstance(rule.area, Area) for rule in RULES.values())
    assert INTERNAL_ERROR in RULES


def test_a_zero_byte_cudnn_library_marks_the_cudnn_line_not_environment():
    report = _report(toolkit(cudnn8(f"{CUDA}\\bin", **{f"{CUDA}\\bin\\cudnn_cnn_infer64_8.dll": {"size": 0}})))
    assert _area_line(report, "cuDNN").startswith("[✗]"), report
    assert _area_line(report, "Environment").startswith("[✓]"), report


def test_a_missing_visual_cpp_runtime_marks_the_cudnn_line_when_cudnn_asks_for_it():
    files = cudnn8(
        f"{CUDA}\\bin", **{f"{CUDA}\\bin\\cudnn_ops_infer64_8.dll": {"imports": ["KERNEL32.dll", "MSVCP140.dll"]}}
    )
    found = [f for f in run(toolkit(files)).findings if f.id == "dependency-missing"]
    assert found and found[0].area is Area.CUDNN and "MSVCP140.dll" in found[0].detail


def test_internal_error_is_a_registered_rule_that_explain_and_ignore_accept(capsys):
    facts = run(machine(LINUX_BASE)).facts._replace(failures=(ProbeFailure("driver", "OSError: boom"),))
    (found,) = [f for f in run_checks(facts) if f.id == INTERNAL_ERROR]
    assert found.area is RULES[INTERNAL_ERROR].area and "boom" in found.detail
    assert not [f for f in run_checks(facts, ignore={INTERNAL_ERROR}) if f.id == INTERNAL_ERROR]
    assert main(["explain", INTERNAL_ERROR]) == 0
    assert INTERNAL_ERROR in capsys.readouterr().out
    assert (
        main(["check", "--fixture", "/nonexistent.yaml", "--ignore", INTERNAL_ERROR]) == 2
    )  # the id is accepted; the path is not
    assert "unknown finding id" not in capsys.readouterr().err


def test_a_raising_rule_becomes_the_internal_error_finding_naming_it():
    def broken(facts):
        raise KeyError("x")

    RULES["test-broken-rule"] = Rule("test-broken-rule", Severity.ERROR, "broken", Area.DRIVER, check=broken)
    try:
        found = [f for f in run_checks(run(machine(LINUX_BASE)).facts) if f.id == INTERNAL_ERROR]
    finally:
        del RULES["test-broken-rule"]
    assert found and found[0].evidence == {"rule": "test-broken-rule"} and "KeyError" in found[0].detail


def _finding(id, severity=Severity.ERROR, causes=()):
    return Finding(id, severity, id, f"{id} detail", causes=tuple(causes))


def test_findings_sharing_a_cause_key_hang_under_the_one_nothing_explains():
    cause = Rule("cause", Severity.ERROR, "", Area.FRAMEWORKS)
    rules = {
        "symptom": Rule("symptom", Severity.ERROR, "", Area.CUDNN, explained_by=(cause,)),
        "cause": cause,
        "other": Rule("other", Severity.ERROR, "", Area.CUDNN),
    }
    findings = [
        _finding("symptom", causes=["cuda:11"]),
        _finding("symptom", causes=["lib:x", "cuda:11"]),
        _finding("cause", causes=["cuda:11"]),
        _finding("other", causes=["cudnn:/x"]),
    ]
    linked = link_causes(findings, rules)
    assert [f.symptom_of for f in linked] == [2, 2, None, None]


def test_keys_chain_findings_into_one_group():
    rules = {i: Rule(i, Severity.ERROR, "", Area.CUDNN) for i in "abc"}
    linked = link_causes(
        [_finding("a", causes=["k1"]), _finding("b", causes=["k1", "k2"]), _finding("c", causes=["k2"])], rules
    )
    assert [f.symptom_of for f in linked] == [None, 0, 0]


def test_a_symptom_without_keys_is_linked_to_a_present_explanation():
    driver_too_old = Rule("driver-too-old", Severity.ERROR, "", Area.DRIVER)
    rules = {
        "torch-cuda-unavailable": Rule(
            "torch-cuda-unavailable", Severity.ERROR, "", Area.FRAMEWORKS, explained_by=(driver_too_old,)
        ),
        "driver-too-old": driver_too_old,
    }
    linked = link_causes([_finding("driver-too-old", causes=["driver"]), _finding("torch-cuda-unavailable")], rules)
    assert linked[1].symptom_of == 0 and "Explained by: driver-too-old" in linked[1].detail
    alone = link_causes([_finding("torch-cuda-unavailable")], rules)
    assert alone[0].symptom_of is None and "No other finding explains it" in alone[0].detail


def test_a_cudnn_install_missing_its_parts_is_one_problem_in_the_report():
    files = cudnn8(f"{CUDA}\\bin", parts=())  # only cudnn64_8.dll was copied
    diagnosis = run(toolkit(files))
    partial = [i for i, f in enumerate(diagnosis.findings) if f.id == "cudnn-partial-install"]
    missing = [f for f in diagnosis.findings if f.id == "dependency-missing" and "cudnn_" in f.evidence["name"]]
    assert partial and len(missing) == 6 and all(f.symptom_of == partial[0] for f in missing)
    report = _report(toolkit(files))
    assert report.count("✗ error dependency-missing") == 0 and "The same cause also shows as:" in report
    assert "1 error(s)" in report.splitlines()[-1] and "6 more finding(s)" in report.splitlines()[-1]


def test_a_missing_cuda_runtime_is_said_once_with_its_symptoms():
    """A CUDA 11.8 build of ONNX Runtime on a machine with only CUDA 12: the toolkit is the cause."""
    lib = "/usr/local/cuda-12.4/lib64"
    site = "/env/lib/python3.10/site-packages"
    provider = f"{site}/onnxruntime/capi/libonnxruntime_providers_cuda.so"
    files = {
        f"{lib}/libcudart.so.12": {"soname": "libcudart.so.12"},
        "/usr/local/cuda-12.4/bin/nvcc": {"size": 10, "text": ""},
        "/usr/local/cuda-12.4/version.json": {"text": '{"cuda": {"version": "12.4.1"}}'},
        provider: {
            "soname": "libonnxruntime_providers_cuda.so",
            "imports": ["libcublasLt.so.11", "libcublas.so.11", "libcudart.so.11.0", "libc.so.6"],
        },
        f"{site}/onnxruntime/__init__.py": {"text": ""},
    }
    env = {"PATH": "/usr/local/cuda-12.4/bin:/usr/bin", "LD_LIBRARY_PATH": lib}
    pythons = [
        {
            "executable": "/env/bin/python",
            "version": "3.10.14",
            "current": True,
            "kind": "venv",
            "packages": {"onnxruntime-gpu": "1.16.3"},
            "frameworks": {
                "onnxruntime": {"version": "1.16.3", "providers": ["CUDAExecutionProvider", "CPUExecutionProvider"]}
            },
        }
    ]
    diagnosis = run(machine(LINUX_BASE, files=files, env=env, pythons=pythons))
    causes = [f for f in diagnosis.findings if f.symptom_of is None and f.severity is Severity.ERROR]
    # two problems: the CUDA 11 runtime (five findings) and no cuDNN at all
    assert sorted(f.id for f in causes) == ["cudnn-missing", "framework-cuda-mismatch"], [
        (f.id, f.detail) for f in diagnosis.findings
    ]
    symptoms = {f.id for f in diagnosis.findings if f.symptom_of is not None}
    assert {"cuda-libs-not-found", "dependency-missing"} <= symptoms


def test_a_rule_can_name_what_it_explains_from_its_own_side():
    symptom = Rule("symptom", Severity.ERROR, "", Area.FRAMEWORKS)
    rules = {
        "symptom": symptom,
        "new-cause": Rule("new-cause", Severity.WARNING, "", Area.ENVIRONMENT, explains=(symptom,)),
    }
    linked = link_causes([_finding("new-cause", Severity.WARNING), _finding("symptom")], rules)
    assert linked[1].symptom_of == 0 and "Explained by: new-cause" in linked[1].detail


def test_the_summary_says_how_many_findings_fix_can_fix():
    """Issue 31: the last line counts the findings `cudnn-doctor fix` has changes for (a duplicate PATH entry: safe)."""
    twice = machine(
        LINUX_BASE, env={"PATH": "/usr/local/bin:/usr/bin:/usr/bin:/bin"}, files={"/usr/bin/ls": {}, "/bin/sh": {}}
    )
    last = _report(twice).rstrip().splitlines()[-1]
    assert " 1 finding(s) `cudnn-doctor fix` can fix." in last, last
    assert "can fix" not in _report(machine(LINUX_BASE)).rstrip().splitlines()[-1]


def _string_constants(source: str) -> list[str]:
    import ast

    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_every_finding_id_is_written_once_in_the_source():
    """Issue 32: a rule is one value (checks/rules.py); checks, planners and reports reach it by that value, never by its
    id spelled again (its page, checks/pages/<id>.md, and the tests aside)."""
    from pathlib import Path

    import cudnn_doctor

    written: dict[str, list[str]] = {rule_id: [] for rule_id in RULES}
    for path in sorted(Path(cudnn_doctor.__file__).parent.rglob("*.py")):
        for text in _string_constants(path.read_text(encoding="utf-8")):
            if text in written:
                written[text].append(path.name)
    assert {rule_id: files for rule_id, files in written.items() if files != ["rules.py"]} == {}


def test_the_once_test_sees_an_id_written_again():
    assert _string_constants('x = "cudnn-missing"\ndef f():\n    """cudnn-missing in prose is not a use."""\n') == [
        "cudnn-missing",
        "cudnn-missing in prose is not a use.",
    ]
