"""GPU name -> compute capability for the parts NVIDIA's CUDA GPU pages listed before their 2025 redesign
(Kepler, Fermi, Tesla, notebook and Quadro mobile tables, Jetson TK1), and how names are matched."""

from urllib.parse import urlparse

import pytest

from cudnn_doctor import knowledge


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("NVIDIA GeForce GTX 780", "3.5"),  # cuda-gpus (pre-2025) 'GeForce and TITAN Products': 'GeForce GTX 780' 3.5
        ("GeForce GTX 780", "3.5"),
        ("GTX 780", "3.5"),  # "GeForce" is optional
        ("  nvidia   geforce  gtx 780 ", "3.5"),  # case and spacing do not matter
        ("GeForce GTX 780 Ti", "3.5"),  # its own row 'GeForce GTX 780 Ti' 3.5
        ("NVIDIA GeForce GTX 680", "3.0"),  # 'GeForce GTX 680' 3.0
        ("GeForce GTX 770", "3.0"),  # 'GeForce GTX 770' 3.0
        ("GeForce GTX 650 Ti BOOST", "3.0"),  # 'GeForce GTX 650 Ti BOOST' 3.0
        ("GeForce GTX 780M", "3.0"),  # 'GeForce Notebook Products': 'GeForce GTX 780M' 3.0, not the desktop 780's 3.5
        ("GeForce 920M", "3.5"),  # notebook 'GeForce 920M' 3.5
        ("GeForce 930M", "5.0"),  # notebook 'GeForce 930M' 5.0
        ("Tesla K40", "3.5"),  # 'NVIDIA Data Center Products': 'Tesla K40' 3.5
        ("Tesla K20", "3.5"),  # 'Tesla K20' 3.5
        ("Tesla K10", "3.0"),  # 'Tesla K10' 3.0
        ("Tesla K80", "3.7"),  # 'Tesla K80' 3.7
        ("Quadro K6000", "3.5"),  # Quadro desktop 'Quadro K6000' 3.5
        ("Quadro K5000", "3.0"),  # 'Quadro K5000' 3.0
        ("Quadro K2200", "5.0"),  # Maxwell 'Quadro K2200' 5.0 ...
        ("Quadro K2200M", "3.0"),  # ... but the Kepler notebook 'Quadro K2200M' 3.0
        ("Jetson TK1", "3.2"),  # cuda-legacy-gpus (pre-2025) 'Tegra Mobile & Embedded Processors': 'Jetson TK1' 3.2
        ("Tegra K1", "3.2"),
        (
            "NVIDIA GeForce RTX 3060 Laptop GPU",
            "8.6",
        ),  # 'GeForce RTX 3060' 8.6 (the notebook table prints no 'Laptop GPU')
        ("RTX 3060 Laptop GPU", "8.6"),
        ("GeForce RTX 2080 SUPER", "7.5"),  # no SUPER row; longest prefix 'GeForce RTX 2080' 7.5
        ("T2000", "7.5"),  # Quadro mobile table 'T2000' 7.5
        ("Tesla C2050", "2.0"),  # Tesla workstation 'Tesla C2050/C2070' 2.0: each model of an 'A/B' name
        ("Tesla C2070", "2.0"),
        ("Tesla M2090", "2.0"),  # 'Tesla M2050/M2070/M2075/M2090' 2.0
        ("GeForce GTS 450", "2.1"),  # 'GeForce GTS 450' and 'GeForce GTS 450*' (a footnote) 2.1
        ("GeForce GT 730", "3.5"),  # 'GeForce GT 730' 3.5 (the Fermi one is 'GeForce GT 730 DDR3,128bit' 2.1)
        ("GeForce GT 640 (GDDR5)", "3.5"),
        ("GeForce GT 640 (GDDR3)", "2.1"),
        ("GeForce 8800 GTX", "1.0"),  # cuda-legacy-gpus (pre-2025) 'GeForce Desktop Products': 'GeForce 8800 GTX' 1.0
        ("GeForce 9800 GTX+", "1.1"),
    ],
)
def test_legacy_gpu_names_resolve(name, cc):
    assert knowledge.gpu_compute_capability(name) == cc


@pytest.mark.parametrize(
    ("name", "cc"),
    [
        ("GeForce GTX TITAN X", "5.2"),  # Maxwell: legacy 5.2 'GeForce GTX TITAN X'
        ("NVIDIA GeForce GTX TITAN X", "5.2"),
        ("GTX TITAN X", "5.2"),
        ("NVIDIA TITAN X", "6.1"),  # Pascal: legacy 6.1 'NVIDIA TITAN X'
        ("TITAN X (Pascal)", "6.1"),  # the name NVML gives the Pascal TITAN X
        ("NVIDIA TITAN Xp", "6.1"),
        ("GeForce GTX TITAN", "3.5"),  # Kepler 'GeForce GTX TITAN' 3.5, not a TITAN X
        ("GeForce GTX TITAN Black", "3.5"),
        ("GeForce GTX TITAN Z", "3.5"),
        ("NVIDIA TITAN V", "7.0"),
    ],
)
def test_the_titans_stay_distinct(name, cc):
    assert knowledge.gpu_compute_capability(name) == cc


def test_rows_that_disagree_give_no_answer():
    # NVIDIA lists 'GeForce GT 640 (GDDR5)' 3.5 and 'GeForce GT 640 (GDDR3)' 2.1: the bare name cannot tell.
    assert knowledge.gpu_compute_capability("NVIDIA GeForce GT 640") is None
    # 'GeForce GTX 860M' is listed as '3.0/5.0' (two chips): no row, and no wrong prefix.
    assert knowledge.gpu_compute_capability("GeForce GTX 860M") is None


def test_no_bare_quadro_mobile_name_captures_an_ada_laptop_part():
    # The Quadro mobile table's 'RTX 3000' (7.5) is left out: as a prefix it would take Ada laptop parts.
    assert knowledge.gpu_compute_capability("NVIDIA RTX 3000 Ada Generation Laptop GPU") != "7.5"
    assert knowledge.gpu_compute_capability("Quadro RTX 3000") == "7.5"  # the current page's 'QUADRO RTX 3000'


def test_a_longer_name_does_not_match_a_shorter_model(tmp_path):
    kb = tmp_path / "kb.yaml"
    kb.write_text(
        "gpus:\n  gpus:\n"
        '    - {name: "GeForce GTX 9990 Ti", cc: "9.9", source: "https://developer.nvidia.com/cuda-gpus (test)"}\n'
        '    - {name: "Quadro Z100/Z200", cc: "9.8", source: "https://developer.nvidia.com/cuda-gpus (test)"}\n',
        encoding="utf-8",
    )
    with knowledge.overlay(kb):
        assert knowledge.gpu_compute_capability("GeForce GTX 9990 Ti") == "9.9"
        assert knowledge.gpu_compute_capability("NVIDIA GeForce GTX 9990 Ti with Max-Q Design") == "9.9"
        assert knowledge.gpu_compute_capability("GTX 9990 Ti") == "9.9"
        assert knowledge.gpu_compute_capability("NVIDIA GeForce GTX 9990") is None  # not the Ti's row
        assert knowledge.gpu_compute_capability("GeForce GTX 9990 Tix") is None  # no word boundary
        assert knowledge.gpu_compute_capability("Quadro Z200") == "9.8"
        assert knowledge.gpu_compute_capability("Quadro Z100") == "9.8"
        assert knowledge.gpu_compute_capability("Quadro Z300") is None
    assert knowledge.gpu_compute_capability("GeForce GTX 9990 Ti") is None


def test_every_row_resolves_to_its_own_capability():
    """No two rows compare equal with different capabilities, so each name finds its own row."""
    wrong = [(row.name, row.cc, knowledge.gpu_compute_capability(row.name)) for row in knowledge.table("gpus").gpus]
    assert [w for w in wrong if w[1] != w[2]] == []


def test_every_gpu_row_cites_an_nvidia_page():
    for row in knowledge.table("gpus").gpus:
        host = urlparse(row.source.split(" ", 1)[0]).hostname or ""
        assert row.source.startswith("https://") and (host == "nvidia.com" or host.endswith(".nvidia.com")), row
        if row.copy:  # read from a copy: the copy and what was seen in it are both named
            assert row.observed and f"'{row.name}" in row.observed, row


def test_the_legacy_pages_cover_kepler_to_volta():
    ccs = {row.cc for row in knowledge.table("gpus").gpus}
    assert {"3.0", "3.2", "3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2"} <= ccs
    kepler = [row.name for row in knowledge.table("gpus").gpus if row.cc.startswith("3.")]
    assert len(kepler) >= 60
