"""`plan`'s inputs: --framework parsed as packaging.requirements parses it (a fast parser pinned to the library),
and every bad value refused in one line with exit code 2."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cudnn_doctor.cli import main
from cudnn_doctor.errors import UsageError
from cudnn_doctor.planner.inputs import build_request
from cudnn_doctor.planner.request import parse_framework

NAMES = [
    "torch",
    "PyTorch",
    "tensorflow",
    "tensorflow-gpu",
    "TensorFlow_GPU",
    "onnxruntime-gpu",
    "onnxruntime.gpu",
    "paddlepaddle-gpu",
    "jax",
    "jaxlib",
]
SPECIFIERS = [
    "",
    "==2.1",
    ">=2.1,<2.4",
    "~=1.18",
    "!=2.0.*",
    "==2.5.0",
    "<3",
    " >= 2.15 , < 2.17 ",
    "===2.1",
    "(>=2.1)",
]
EXTRAS = ["", "[and-cuda]", "[cuda12]", "[cuda12, cuda12-local]", "[ cuda,cudnn ]"]


def _library(text: str) -> tuple[str, str, frozenset[str]]:
    requirement = Requirement(text)
    return (
        canonicalize_name(requirement.name),
        str(requirement.specifier),
        frozenset(canonicalize_name(e) for e in requirement.extras),
    )


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("extras", EXTRAS)
@pytest.mark.parametrize("specifier", SPECIFIERS)
def test_parsed_as_packaging_parses_it(name, extras, specifier):
    text = f"{name}{extras}{specifier}"
    wanted = parse_framework(text)
    _, library_specifier, library_extras = _library(text)
    assert str(wanted.specifier) == library_specifier
    assert wanted.extras == library_extras


_name = st.sampled_from(NAMES)
_version = st.from_regex(r"\A[0-9]{1,2}(\.[0-9]{1,2}){0,2}\Z")
_clause = st.tuples(st.sampled_from(["==", ">=", "<=", "<", ">", "!=", "~="]), _version).map("".join)


@given(_name, st.lists(_clause, min_size=0, max_size=3), st.sampled_from(EXTRAS))
def test_any_valid_requirement_agrees_with_packaging(name, clauses, extras):
    text = f"{name}{extras}{','.join(clauses)}"
    try:
        expected = _library(text)
    except InvalidRequirement:
        with pytest.raises(UsageError):
            parse_framework(text)
        return
    wanted = parse_framework(text)
    assert (str(wanted.specifier), wanted.extras) == expected[1:]


@pytest.mark.parametrize(
    "text",
    [
        "torch==",
        "torch;python_version<'3'",
        "torch @ https://example.org/t.whl",
        "==2.1",
        "torch[",
        "torch>=x.y",
        "torch 2.1",
    ],
)
def test_a_requirement_packaging_refuses_or_plan_cannot_use_is_refused(text):
    with pytest.raises(UsageError):
        parse_framework(text)


@pytest.mark.parametrize(
    "arguments",
    [
        ["--framework", "foo"],
        ["--framework", "torch=="],
        ["--framework", "torch", "--framework", "torch==2.1"],
        ["--python", "3"],
        ["--python", "three"],
        ["--driver", "abc"],
        ["--driver", "-1"],
        ["--gpu", "Voodoo 5"],
        ["--cuda", "99.1"],
        ["--os", "macos"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(arguments, capsys):
    code = main(["plan", "--os", "linux", "--python", "3.11", "--driver", "550.54.14", "--gpu", "8.6", *arguments])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.startswith("cudnn-doctor: error: ") and err.count("\n") == 1


def test_every_input_given_reads_nothing_from_the_machine(monkeypatch):
    """`--cuda` alone stands for the frameworks: with the rest given, the machine is not probed (nor its frameworks)."""
    from cudnn_doctor.planner import machine

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the machine was read")

    monkeypatch.setattr(machine, "read_machine", refuse)
    monkeypatch.setattr(machine, "machine_os", refuse)
    request = build_request([], "linux", "3.10", "T4", "520.61.05", "11.8")
    assert request.frameworks == () and request.cuda.text == "11.8"
    assert build_request(["torch"], "linux", "3.10", "T4", "520.61.05").frameworks[0].name == "torch"
