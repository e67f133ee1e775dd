"""`check --html FILE` / `verify --html FILE`: one self-contained HTML file (issue 12).

Everything is inline: the CSS, the SVG charts (drawn here, no script library) and the pages of
the findings (so their links work offline). A Content-Security-Policy in the head forbids any
network load and any script. Every text that comes from the machine (paths, messages, versions)
goes through `html.escape`; the report shows only what the terminal and JSON reports show. A link is
made only of a URL the doctor chose: the pages' own, those its rules name and those
of its shipped knowledge (checks/links.py) (pip indexes, datasheets); a URL in machine text (a PATH entry) stays text.

The parts: `html_page` (what every page shares), `html_check`, `html_verify` and `html_charts`; `fleet_html` is
fleet's. This module is their public face.
"""

from __future__ import annotations

from cudnn_doctor.reports.html_charts import Bar, Group, chart_svg
from cudnn_doctor.reports.html_check import render_check
from cudnn_doctor.reports.html_page import esc, markdown
from cudnn_doctor.reports.html_verify import render_verify

__all__ = ["Bar", "Group", "chart_svg", "esc", "markdown", "render_check", "render_verify"]
