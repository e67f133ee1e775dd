"""PATH-like variables as ordered entries, and the persistent (registry) environment on Windows."""

from __future__ import annotations

from cudnn_doctor.facts import EnvironmentFacts, PathEntry
from cudnn_doctor.paths import expand_percent
from cudnn_doctor.system.interface import System


def probe_environment(system: System) -> EnvironmentFacts:
    rules, env = system.paths, system.env()

    def entries(variable: str) -> tuple[PathEntry, ...]:
        values = rules.split_list(env.get(variable, ""))
        # Windows skips an empty entry (the usual trailing `;`); on Linux it means the current folder.
        return tuple(
            PathEntry(variable=variable, index=i, value=v, exists=bool(v) and system.is_dir(v))
            for i, v in enumerate(values)
            if v or not rules.windows
        )

    persistent = system.persistent_env()
    persistent_path: tuple[str, ...] = ()
    if persistent is not None:
        system_vars = {k.upper(): v for k, v in persistent.get("system", {}).items()}
        user_vars = {k.upper(): v for k, v in persistent.get("user", {}).items()}
        scope = {**{k.upper(): v for k, v in env.items()}, **system_vars, **user_vars}
        joined = ";".join(p for p in (system_vars.get("PATH", ""), user_vars.get("PATH", "")) if p)
        persistent_path = tuple(e for e in rules.split_list(expand_percent(joined, scope)) if e)
    return EnvironmentFacts(
        variables=dict(env),
        path=entries("PATH"),
        ld_library_path=() if rules.windows else entries("LD_LIBRARY_PATH"),
        persistent=persistent,
        persistent_path=persistent_path,
        distribution=() if rules.windows else distribution(system.read_text("/etc/os-release", 64 * 1024) or ""),
    )


def distribution(os_release: str) -> tuple[str, ...]:
    """The distribution and those it is like, from os-release's `ID` and `ID_LIKE` (shell-style values, quotes
    optional)."""
    fields = {}
    for line in os_release.splitlines():
        key, _, value = line.partition("=")
        fields[key.strip()] = value.strip().strip("\"'").lower()
    return tuple(word for word in (fields.get("ID", ""), *fields.get("ID_LIKE", "").split()) if word)
