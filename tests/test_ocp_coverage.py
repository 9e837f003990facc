"""docs/ocp-coverage.md: every item of the OCP headers has a row, every counterpart it names exists, and the
page is what docs/make_ocp_coverage.py renders."""
from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _gen():
    spec = importlib.util.spec_from_file_location("make_ocp_coverage", ROOT / "docs" / "make_ocp_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_page_is_current():
    assert (ROOT / "docs" / "ocp-coverage.md").read_text() == _gen().render() + "\n", \
        "run: python docs/make_ocp_coverage.py"


def test_every_header_item_has_one_row_and_its_counterparts_exist():
    gen = _gen()
    rows = gen.rows()
    names = [(r[0], r[1]) for r in rows]
    assert len(names) == len(set(names))
    kinds = Counter((r[0], r[2] == "function") for r in rows)
    # mrc.h: 27 functions and 13 structs / enums / constants; mrc_ctl.h: 14 and 33 (87 items, issue 30)
    assert kinds == {("mrc.h", True): 27, ("mrc.h", False): 13, ("mrc_ctl.h", True): 14, ("mrc_ctl.h", False): 33}
    for r in rows:
        assert r[4] in (gen.F, gen.P, gen.X) and r[5] in (gen.F, gen.P, gen.X), r
        assert r[5] == gen.F or r[6], f"{r[1]}: a status short of faithful needs its reason"
        for dotted in r[3].split():
            assert gen.resolve(dotted) is not None, dotted
    assert gen.counts(4) == {gen.F: 16, gen.P: 40, gen.X: 31}  # when issue 30 was opened (this page's rubric)
    assert gen.counts(5)[gen.X] == 0
