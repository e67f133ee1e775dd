"""The same diagnosis as `cudnn-doctor run`, from inside an interpreter: for notebooks and scripts.

`import cudnn_doctor.run.hook` adds it to the running interpreter (and to IPython / Jupyter when present);
`python -m cudnn_doctor.run.hook script.py [args...]` runs a script under it. After the usual traceback of an
uncaught exception that carries a known GPU-stack error, it prints which library failed and what `check`
finds about it, on stderr. There is no loader trace here (the process started without one); the error
text and the machine's findings are what it has.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any


def diagnose_text(text: str) -> None:
    """Print the diagnosis for an error text when it names a known GPU-stack error (nothing otherwise)."""
    from cudnn_doctor.run.explain import explain

    first = explain(1, text, (), ())
    if not first.worth_telling:
        return
    from cudnn_doctor.diagnose import diagnose
    from cudnn_doctor.reports import run_report
    from cudnn_doctor.system.live import LiveSystem

    findings = diagnose(LiveSystem(), with_frameworks=first.about_frameworks).findings
    run_report.render(
        explain(1, text, (), findings), [sys.argv[0] if sys.argv and sys.argv[0] else "python"], sys.stderr, hook=True
    )


def install() -> None:
    previous = sys.excepthook

    def hook(kind: type, value: BaseException, tb: Any) -> None:
        previous(kind, value, tb)
        try:
            diagnose_text("".join(traceback.format_exception(kind, value, tb)))
        except Exception as failure:  # the diagnosis must never hide the user's own error
            from cudnn_doctor.reports import messages

            messages.note(f"hook: no diagnosis ({type(failure).__name__}: {failure})", sys.stderr)

    sys.excepthook = hook
    shell = _ipython()
    if shell is not None:

        def custom(shell: Any, kind: type, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
            shell.showtraceback((kind, value, tb), tb_offset=tb_offset)
            diagnose_text("".join(traceback.format_exception(kind, value, tb)))

        shell.set_custom_exc((Exception,), custom)


def _ipython() -> Any:
    module = sys.modules.get("IPython")
    get = getattr(module, "get_ipython", None)
    return get() if get else None


def main(argv: list[str]) -> int:
    """`python -m cudnn_doctor.run.hook script.py [args...]`: the script as `__main__`, under the hook."""
    import runpy

    if not argv:
        from cudnn_doctor.reports import messages

        messages.error("usage: python -m cudnn_doctor.run.hook SCRIPT [ARGS...]", sys.stderr)
        return 2
    sys.argv = list(argv)
    install()
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
else:
    install()
