"""`emulator.keys`: each check of a scenario value, at and beside its edge (the key named, nothing clamped)."""
from __future__ import annotations

import math

import pytest

from mrc.emulator.keys import Table, host_list, toml_value
from mrc.errors import ConfigError


def refused(fn, key: str) -> ConfigError:
    with pytest.raises(ConfigError) as exc:
        fn()
    assert exc.value.key == key, exc.value
    return exc.value


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, toml_value("nan"), toml_value("inf"),
                                 toml_value("-inf")])
def test_num_refuses_nan_and_infinities(bad):
    t = Table({"rate": bad}, "switch")
    e = refused(lambda: t.num("rate", 1.0), "switch.rate")
    assert "number" in e.problem and (e.value != e.value or math.isinf(e.value))


@pytest.mark.parametrize("bad", [True, False, "1", [1], None])
def test_num_refuses_what_is_not_a_number(bad):
    t = Table({"rate": bad}, "switch")
    refused(lambda: t.num("rate", 1.0), "switch.rate")


def test_num_takes_integers_and_floats_as_floats():
    t = Table({"a": 3, "b": 2.5, "c": 1e15}, "")
    assert (t.num("a"), t.num("b"), t.num("c")) == (3.0, 2.5, 1e15)
    assert isinstance(t.num("a"), float)


@pytest.mark.parametrize("bad", [True, False, 1.0, 2.5, "3", None])
def test_int_refuses_booleans_floats_and_strings(bad):
    t = Table({"k": bad}, "topology")
    e = refused(lambda: t.int("k", 4), "topology.k")
    assert "integer" in e.problem


def test_int_and_num_bounds_are_inclusive_unless_open():
    t = Table({"lo": 2, "hi": 9, "x": 0.0, "y": 1e-9}, "s")
    assert t.int("lo", lo=2, hi=9) == 2 and t.int("hi", lo=2, hi=9) == 9
    refused(lambda: t.int("lo", lo=3), "s.lo")
    refused(lambda: t.int("hi", hi=8), "s.hi")
    assert t.num("x", lo=0.0) == 0.0
    e = refused(lambda: t.num("x", lo=0.0, lo_open=True), "s.x")
    assert "> 0" in e.problem
    assert t.num("y", lo=0.0, lo_open=True) == 1e-9
    assert t.num("y", lo=0.0, hi=1e-9) == 1e-9
    refused(lambda: t.num("y", hi=0.0), "s.y")


def test_a_none_default_means_optional_but_a_given_none_is_still_checked():
    t = Table({}, "metrics")
    assert t.int("n", None) is None and t.num("x", None) is None and t.str("s", None) is None
    t = Table({"n": 3, "x": 0.5, "s": "on"}, "metrics")  # optional, and given: the value, checked
    assert t.int("n", None) == 3 and t.num("x", None) == 0.5 and t.str("s", None) == "on"
    t = Table({"n": "3", "x": "0.5", "s": 7}, "metrics")
    refused(lambda: t.int("n", None), "metrics.n")
    refused(lambda: t.num("x", None), "metrics.x")
    refused(lambda: t.str("s", None), "metrics.s")
    t = Table({"s": None}, "metrics")
    refused(lambda: t.str("s", "x"), "metrics.s")
    assert t.int("n", 5) == 5 and t.num("x", 0.5) == 0.5 and t.bool("b", True) is True
    t = Table({"n": None}, "metrics")  # TOML has no null, but a Python caller may pass one
    refused(lambda: t.int("n", 5), "metrics.n")


def test_missing_required_key_is_named():
    t = Table({}, "workload[1]")
    e = refused(lambda: t.int("flows"), "workload[1].flows")
    assert e.problem == "missing" and e.value is None


@pytest.mark.parametrize("bad", [0, 1, "true", None])
def test_bool_is_only_true_or_false(bad):
    t = Table({"on": bad}, "capture")
    refused(lambda: t.bool("on", False), "capture.on")
    assert Table({"on": True}, "").bool("on") is True and Table({"on": False}, "").bool("on") is False


@pytest.mark.parametrize("bad", ["", 3, ["a"]])
def test_str_is_a_non_empty_string(bad):
    refused(lambda: Table({"name": bad}, "transport").str("name", "mrc"), "transport.name")


def test_choice_lists_the_choices():
    t = Table({"mode": "fast"}, "engine")
    e = refused(lambda: t.choice("mode", ["heap", "calendar"], "heap"), "engine.mode")
    assert "heap, calendar" in e.problem
    assert Table({}, "engine").choice("mode", ["heap", "calendar"], "heap") == "heap"


def test_done_names_the_first_unknown_key_and_the_known_ones():
    t = Table({"a": 1, "typo": 2, "b": 3}, "switch")
    t.int("a")
    t.int("b", 0)
    e = refused(t.done, "switch.typo")
    assert e.value == 2 and "a, b" in e.problem
    t = Table({"a": 1}, "")  # asking is what makes a key known: nothing left over
    t.int("a")
    t.done()
    e = refused(Table({"x": 1}, "t").done, "t.x")
    assert "(none)" in e.problem


def test_key_names_at_top_level_and_nested():
    assert Table({}, "").key("seed") == "seed"
    assert Table({}, "failures[0]").key("at_us") == "failures[0].at_us"
    assert Table({"sub": {"x": 1}}, "top").table("sub").key("x") == "top.sub.x"
    refused(lambda: Table({"sub": 3}, "top").table("sub"), "top.sub")
    refused(lambda: Table([1], "top"), "top")
    assert Table(None, "top").data == {}


def test_toml_value_reads_toml_and_keeps_other_text():
    assert toml_value("1e6") == 1e6 and toml_value("false") is False and toml_value("[1, 2]") == [1, 2]
    assert toml_value('"x"') == "x" and toml_value("plain words") == "plain words"


# --- host sets --------------------------------------------------------------------------------------------

def test_host_list_reads_ids_ranges_and_mixtures():
    assert host_list(3, "w.hosts", 8) == [3]
    assert host_list("0-3", "w.hosts", 8) == [0, 1, 2, 3]
    assert host_list([7, "2-4"], "w.hosts", 8) == [7, 2, 3, 4]
    assert host_list("5-5", "w.hosts", 8) == [5]


@pytest.mark.parametrize("value", [[1, 1], ["0-3", 2], ["0-2", "2-4"], [0, "0-0"]])
def test_host_listed_twice_is_refused(value):
    e = refused(lambda: host_list(value, "workload[0].hosts", 8), "workload[0].hosts")
    assert "twice" in e.problem and e.value == value


@pytest.mark.parametrize("value, problem", [
    ([8], "host 8 is not in this fabric"), ([-1], "host -1"), ("6-8", "host 8"),
    ([True], "integers or ranges"), (["x-y"], "bad range"), (["3-1"], "empty"), (["1-2-3"], "integers or ranges"),
    ([2.0], "integers or ranges"), ("7", "integers or ranges"),
])
def test_host_list_refuses(value, problem):
    e = refused(lambda: host_list(value, "failures[0].hosts", 8), "failures[0].hosts")
    assert problem in e.problem, e.problem


def test_host_list_edges_of_the_fabric():
    assert host_list([0, 7], "h", 8) == [0, 7]
    e = refused(lambda: host_list([0, 8], "h", 8), "h")
    assert "hosts 0..7" in e.problem
