"""Topology keys, presets with overrides, TOML files, and errors that name the parameter."""
from __future__ import annotations

import pytest

from mrc.errors import ConfigError
from mrc.fabric import PRESETS, load, load_toml, resolve
from mrc.fabric.spec import KEYS


def test_keys_are_exactly_the_issue_list():
    assert set(KEYS) == {"kind", "k", "hosts_per_leaf", "leaves", "spines", "planes", "link_gbps",
                         "fabric_gbps", "link_delay_ns", "oversubscription", "nic_latency_ns"}


@pytest.mark.parametrize("name,hosts,planes,gbps", [
    ("mrc-8plane-131k", 131072, 8, 100), ("fattree-k8", 128, 1, 100), ("fattree-k16", 1024, 1, 100),
    ("leafspine-8192-400g", 8192, 1, 400), ("mrc-2plane-64", 64, 2, 100), ("mrc-2plane-tiny", 4, 2, 100),
])
def test_presets(name, hosts, planes, gbps):
    s = resolve({"preset": name})
    assert (s.hosts, s.planes, s.link_gbps, s.preset, s.name) == (hosts, planes, gbps, name, name)
    assert s.oversubscription == 1


def test_mrc_131k_shape():
    s = resolve({"preset": "mrc-8plane-131k"})
    assert (s.leaves, s.spines, s.hosts_per_leaf, s.radix) == (512, 256, 256, 512)  # 256 down + 256 up = 512


def test_leafspine_spines_from_oversubscription():
    s = resolve(dict(kind="leaf-spine", hosts_per_leaf=64, leaves=128, link_gbps=400, oversubscription=4))
    assert s.spines == 16 and s.oversubscription == 4
    s = resolve(dict(kind="leaf-spine", hosts_per_leaf=16, leaves=4, spines=4, link_gbps=100, fabric_gbps=400))
    assert s.oversubscription == 1


def test_fattree_hosts_from_oversubscription_and_per_tier_lists():
    s = resolve(dict(kind="fat-tree", k=8, link_gbps=100, oversubscription=3, link_delay_ns=[10, 20, 30],
                     fabric_gbps=[100, 400]))
    assert (s.hosts_per_leaf, s.hosts, s.leaves) == (12, 384, 32)
    assert s.link_delay_ns == (10, 20, 30) and s.fabric_gbps == (100, 400)


def test_preset_with_overrides():
    s = resolve({"preset": "fattree-k8", "link_gbps": 400, "fabric_gbps": 400})
    assert (s.k, s.link_gbps, s.preset, s.overrides) == (8, 400, "fattree-k8", ("link_gbps", "fabric_gbps"))
    assert "changed" in s.name
    s = resolve({"preset": "mrc-8plane-131k", "planes": 4, "oversubscription": 2})
    assert (s.planes, s.spines, s.hosts) == (4, 128, 131072)  # spines re-derived from the new oversubscription
    s = resolve({"preset": "fattree-k8", "k": 4})
    assert s.hosts == 16  # hosts_per_leaf re-derived from k


def test_toml_file_top_level_and_topology_table(tmp_path):
    f = tmp_path / "a.toml"
    f.write_text('kind = "leaf-spine"\nhosts_per_leaf = 4\nleaves = 3\nspines = 2\nplanes = 2\nlink_gbps = 100\n'
                 'fabric_gbps = 200\nlink_delay_ns = [100, 500]\n')
    s = load_toml(f)
    assert (s.hosts, s.planes, s.spines, s.oversubscription, s.link_delay_ns) == (12, 2, 2, 1, (100, 500))
    g = tmp_path / "b.toml"
    g.write_text('[topology]\npreset = "fattree-k8"\nlink_delay_ns = 500\n')
    t = load(str(g))
    assert t.n_hosts == 128 and set(t.port["delay"].tolist()) == {500_000}


BAD = [
    ({"preset": "nope"}, "topology.preset", "unknown preset"),
    ({"preset": "fattree-k8", "radix": 8}, "topology.radix", "unknown key"),
    ({"kind": "torus", "link_gbps": 1}, "topology.kind", "must be one of"),
    ({"kind": "fat-tree", "k": 7, "link_gbps": 100}, "topology.k", "even"),
    ({"kind": "fat-tree", "k": 0, "link_gbps": 100}, "topology.k", ">= 2"),
    ({"kind": "fat-tree", "link_gbps": 100}, "topology.k", "missing"),
    ({"kind": "fat-tree", "k": 8, "spines": 4, "link_gbps": 100}, "topology.spines", "not a fat-tree key"),
    ({"kind": "fat-tree", "k": 4, "oversubscription": 1.25, "link_gbps": 100}, "topology.oversubscription",
     "not a whole number"),
    ({"kind": "fat-tree", "k": 4, "hosts_per_leaf": 4, "oversubscription": 1, "link_gbps": 100},
     "topology.oversubscription", "gives 2"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 10, "leaves": 4, "link_gbps": 100, "oversubscription": 3},
     "topology.oversubscription", "not a whole number"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 8, "leaves": 4, "spines": 4, "link_gbps": 100, "oversubscription": 1},
     "topology.oversubscription", "give 2"),
    ({"kind": "leaf-spine", "leaves": 4, "spines": 4, "link_gbps": 100}, "topology.hosts_per_leaf", "missing"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 2, "spines": 4, "link_gbps": 100}, "topology.leaves", "missing"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 2, "leaves": 2, "spines": 2}, "topology.link_gbps", "missing"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 2, "leaves": 2, "spines": 2, "link_gbps": -1}, "topology.link_gbps",
     "> 0"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 2, "leaves": 2, "spines": 2, "link_gbps": 1, "link_delay_ns": [1]},
     "topology.link_delay_ns", "list of 2"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 2, "leaves": 2, "spines": 2, "link_gbps": 1, "planes": 0},
     "topology.planes", ">= 1"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 2, "leaves": 2, "spines": 2, "link_gbps": 1, "planes": 2.5},
     "topology.planes", "integer"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 2, "leaves": 2, "spines": 2, "link_gbps": 1, "planes": 17},
     "topology.planes", "at most 16"),
    ({"kind": "leaf-spine", "hosts_per_leaf": 2, "leaves": 2, "spines": 2, "link_gbps": "fast"},
     "topology.link_gbps", "number"),
    # radix too small (the preset's 512-port switches)
    ({"preset": "mrc-8plane-131k", "hosts_per_leaf": 300}, "topology.hosts_per_leaf", "radix too small"),
    ({"preset": "mrc-8plane-131k", "leaves": 600}, "topology.leaves", "radix too small"),
    ({"preset": "mrc-8plane-131k", "oversubscription": 0.5}, "topology.oversubscription", "radix too small"),
    ({"preset": "leafspine-8192-400g", "spines": 65}, "topology.spines", "radix too small"),
    # the EV has 32 bits; the uSID plan has ranges
    ({"kind": "leaf-spine", "hosts_per_leaf": 1, "leaves": 20000, "spines": 1, "link_gbps": 1}, "topology.leaves",
     "uSID plan"),
    ({"kind": "fat-tree", "k": 130, "link_gbps": 1}, "topology.k", "uSID plan"),
]


@pytest.mark.parametrize("mapping,key,words", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_parameters_name_the_key(mapping, key, words):
    with pytest.raises(ConfigError) as err:
        resolve(mapping)
    assert err.value.key == key, str(err.value)
    assert words in str(err.value)


def test_bad_toml_and_missing_file(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text("kind = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_toml(f)
    with pytest.raises(ConfigError, match="no such file"):
        load_toml(tmp_path / "none.toml")
    with pytest.raises(ConfigError, match="neither a preset"):
        load("no-such-thing")


def test_every_preset_rebuilds_from_its_keys():
    for name in PRESETS:
        s = resolve({"preset": name})
        again = resolve(s.keys(), radix=s.radix)
        assert (again.hosts, again.planes, again.spines, again.leaves, again.fabric_gbps, again.link_delay_ns) == (
            s.hosts, s.planes, s.spines, s.leaves, s.fabric_gbps, s.link_delay_ns)
