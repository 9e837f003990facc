"""The API reference: every public name of mrc.api, mrc.ctl, mrc.testing.simnet, mrc.io, mrc.wire and
mrc.wire.layers has a docstring, and docs/api.md is what docs/make_api.py renders from them."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _make_api():
    spec = importlib.util.spec_from_file_location("make_api", ROOT / "docs" / "make_api.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_public_name_has_a_docstring():
    assert _make_api().missing() == [], "add a docstring to each of these"


def test_api_reference_page_is_current():
    text = _make_api().render()
    assert (ROOT / "docs" / "api.md").read_text() == text, "run: python docs/make_api.py"
    for name in ("### class `Device(", "#### `QueuePair.connect(", "#### `Controller.setup_ev_profile(",
                 "### class `SimNet(", "### `open_endpoint(", "### `decode(", "### class `BTH("):
        assert name in text


def test_a_public_name_without_a_docstring_is_reported(monkeypatch):
    mod = _make_api()
    import mrc.testing.simnet

    def undocumented():
        pass

    monkeypatch.setattr(mrc.testing.simnet, "undocumented", undocumented, raising=False)
    monkeypatch.setattr(mrc.testing.simnet, "__all__", [*mrc.testing.simnet.__all__, "undocumented"])
    assert mod.missing() == ["mrc.testing.simnet.undocumented"]
    monkeypatch.setattr(mrc.testing.simnet.SimNet.pump, "__doc__", None)
    assert "mrc.testing.simnet.SimNet.pump" in mod.missing()
