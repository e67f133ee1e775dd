"""`plan` graded against sourced facts (tests/data/plan_facts.yaml).

Each fact is a question (the inputs of one `plan` query) and the answer a vendor page gives (NVIDIA's CUDA release
notes Table 3, TensorFlow's tested build configurations, PyTorch's release compatibility matrix, ONNX Runtime's CUDA
execution provider requirements, JAX's changelog and setup.py, PaddlePaddle's install pages, PyPI's file lists), with
the page's address and a verbatim quote. The source decides the expectation, the tool is graded: a fact the tool gets
wrong stays in the file. The grade passes at 98 % and names every fact answered wrong with what `plan` said.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest
import yaml
from packaging.version import InvalidVersion, Version

from cudnn_doctor.errors import UsageError
from tests.unit.planner.test_plan import plan

FACTS_FILE = Path(__file__).parents[2] / "data" / "plan_facts.yaml"
FACTS: list[dict[str, Any]] = yaml.safe_load(FACTS_FILE.read_text(encoding="utf-8"))
PASS_RATE = 0.98

INPUT_KEYS = {"framework", "os", "python", "gpu", "driver", "cuda", "arch"}
PATH_TESTS = {"equals", "series", "at_least", "contains", "not_equals"}
MISSING = object()
NO_ARCH = "the planner takes no arch input"


def ask(inputs: dict[str, Any]) -> tuple[Optional[dict[str, Any]], Optional[str]]:
    """The plan's JSON, or None and why there is none (a usage error, or a planner that does not take an input)."""
    kwargs = {key: value for key, value in inputs.items() if key != "framework"}
    try:
        return plan(*inputs.get("framework", []), **kwargs), None
    except UsageError as error:
        return None, f"usage error: {error}"
    except TypeError as error:
        if "arch" in inputs and "arch" in str(error):
            return None, f"{NO_ARCH} ({error})"
        raise


def at(report: Any, path: str) -> Any:
    """The value at a dotted path; `frameworks[0]` indexes a list."""
    value = report
    for part in path.split("."):
        name, _, index = part.partition("[")
        if not isinstance(value, dict) or name not in value:
            return MISSING
        value = value[name]
        if index:
            position = int(index.rstrip("]"))
            if not isinstance(value, list) or position >= len(value):
                return MISSING
            value = value[position]
    return value


def reasons(report: dict[str, Any]) -> str:
    texts = []
    for rejected in report.get("rejected") or []:
        for reason in rejected.get("reasons") or []:
            texts.append(f"{reason.get('kind', '')}: {reason.get('text', '')}")
    return " | ".join(texts)


def unknown_release(report: dict[str, Any]) -> bool:
    """Every candidate was turned down only because the knowledge lacks the release: not a refusal for the fact's reason."""
    kinds = {
        reason.get("kind") for rejected in report.get("rejected") or [] for reason in rejected.get("reasons") or []
    }
    return kinds == {"version"}


def in_series(value: str, series: str) -> bool:
    return value == series or value.startswith(series + ".")


def at_least(value: str, floor: str) -> bool:
    try:
        return Version(value) >= Version(floor)
    except InvalidVersion:
        return False


def said(report: Optional[dict[str, Any]], error: Optional[str], path: Optional[str] = None) -> str:
    """What plan answered, short enough for an assertion message."""
    if report is None:
        return error or "no report"
    if report.get("stack") is None:
        return f"no stack; rejected: {reasons(report)[:300]}"
    if path is not None:
        return f"{path} = {json.dumps(at(report, path)) if at(report, path) is not MISSING else '(missing)'}"
    stack = report["stack"]
    return f"stack {stack.get('framework')} {stack.get('version')} {stack.get('build')}; commands: {report.get('commands')}"


def grade(fact: dict[str, Any]) -> tuple[bool, str]:
    """(answered right, what plan said)."""
    expect = fact["expect"]
    report, error = ask(fact["inputs"])
    if error is not None and error.startswith(NO_ARCH):
        return False, error
    refused = report is None or report.get("stack") is None
    if "refused" in expect:
        if not refused:
            return False, said(report, error)
        if report is not None and unknown_release(report):
            return False, said(report, error)
        why = error if report is None else reasons(report)
        return expect["refused"].lower() in why.lower(), said(report, error)
    if report is None:
        return False, said(report, error)
    if "command_contains" in expect:
        commands = report.get("commands") or []
        return any(expect["command_contains"] in line for line in commands), said(report, error)
    path = expect["path"]
    if refused:
        return bool(expect.get("or_refused")), said(report, error)
    value = at(report, path)
    answer = said(report, error, path)
    if value is MISSING or value is None:
        return False, answer
    value = str(value)
    if "equals" in expect:
        return value == expect["equals"], answer
    if "series" in expect:
        return in_series(value, expect["series"]), answer
    if "at_least" in expect:
        return at_least(value, expect["at_least"]), answer
    if "contains" in expect:
        return expect["contains"] in value, answer
    return value != expect["not_equals"], answer


@pytest.mark.parametrize("fact", FACTS, ids=[fact["id"] for fact in FACTS])
def test_a_fact_is_sourced_and_well_formed(fact):
    assert set(fact) <= {"id", "inputs", "expect", "url", "quote", "note"}, fact
    assert len(fact["id"]) <= 40
    assert fact["url"].startswith("https://"), fact["url"]
    assert 0 < len(fact["quote"]) <= 200, fact["quote"]
    assert set(fact["inputs"]) <= INPUT_KEYS and "os" in fact["inputs"], fact["inputs"]
    assert all(isinstance(value, (str, list)) for value in fact["inputs"].values()), fact["inputs"]
    expect = fact["expect"]
    forms = [bool(set(expect) & PATH_TESTS), "refused" in expect, "command_contains" in expect]
    assert sum(forms) == 1, expect
    if forms[0]:
        assert "path" in expect and len(set(expect) & PATH_TESTS) == 1, expect
        assert "or_refused" not in expect or "not_equals" in expect, expect
    assert all(isinstance(value, (str, bool)) for value in expect.values()), expect


def test_fact_ids_are_unique():
    ids = [fact["id"] for fact in FACTS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(FACTS) >= 170


def test_plan_answers_the_sourced_facts():
    wrong = []
    for fact in FACTS:
        right, answer = grade(fact)
        if not right:
            expected = json.dumps(fact["expect"], ensure_ascii=False)
            wrong.append(f"{fact['id']}: expected {expected}; plan said {answer}; source {fact['url']}")
    rate = 1 - len(wrong) / len(FACTS)
    message = (
        f"{len(FACTS) - len(wrong)}/{len(FACTS)} facts right ({rate:.1%}, needs {PASS_RATE:.0%}); wrong:\n"
        + "\n".join(wrong)
    )
    assert rate >= PASS_RATE, message
