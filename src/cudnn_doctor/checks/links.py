"""The URLs the doctor itself chose to cite: its rules' pages and downloads, and those of its shipped knowledge.

A report makes a link only of these (reports/html.py); a URL in machine text (a PATH entry) stays text.
"""

from __future__ import annotations

import functools
from typing import Any

from cudnn_doctor import knowledge
from cudnn_doctor.lazyre import regex

URL = regex(r"https?://[^\s<>()\"']+[^\s<>()\"'.,;:]")

# The URLs the checks' fix steps name (checks/, planner/); tests/unit/reports/test_html_links.py keeps this list whole.
DOCTOR_LINKS = frozenset(
    {
        "https://developer.nvidia.com/cuda-downloads",
        "https://developer.nvidia.com/cuda-toolkit-archive",
        "https://developer.nvidia.com/rdp/cudnn-archive",
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility",
        "https://docs.nvidia.com/deploy/topics/topic_5_2_1.html",
        "https://download.pytorch.org/whl/torch_stable.html",
        "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements",
        "https://pytorch.org/get-started/locally/",
        "https://www.nvidia.com/Download/index.aspx",
        "https://www.tensorflow.org/install/source#gpu",
        # the planner's: JAX's find-links page for jaxlib's CUDA wheels before the plugins, and NVIDIA's Jetson wheels
        "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html",
        "https://github.com/jax-ml/jax/blob/jax-v0.4.20/README.md",
        "https://pypi.jetson-ai-lab.dev/",
        "https://pypi.jetson-ai-lab.dev/jp6/cu126",
        "https://github.com/pytorch/TensorRT/pull/3453",
        "https://developer.nvidia.com/embedded/jetpack/downloads/archive-7.1.md",
    }
)


@functools.cache
def _chosen() -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
    """The URLs the doctor chose: `DOCTOR_LINKS`, every URL in the shipped knowledge (never a user's overlay) and
    its URL templates (`https://download.pytorch.org/whl/cu{tag}`) as (before, after) the tag."""
    urls, templates = set(DOCTOR_LINKS), []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if "{tag}" in value and URL.fullmatch(value.replace("{tag}", "0")):
                before, after = value.split("{tag}", 1)
                templates.append((before, after))
            urls.update(m.group() for m in URL.finditer(value))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(knowledge.shipped_document())
    return frozenset(urls), tuple(templates)


def chosen_url(url: str) -> bool:
    """Whether the report may make `url` a link: the doctor chose it (see `_chosen`), whatever text it stands in."""
    urls, templates = _chosen()
    return url in urls or any(_fills(url, before, after) for before, after in templates)


def _fills(url: str, before: str, after: str) -> bool:
    """`url` is the template with a CUDA tag of 2-4 digits in its place (cu121)."""
    tag = url[len(before) : len(url) - len(after)] if url.startswith(before) and url.endswith(after) else ""
    return 2 <= len(tag) <= 4 and tag.isascii() and tag.isdigit()
