"""EV field expansion (mrc_ctl.h) against the OCP ev_expansion example cases, a naive model and properties.

Expected values below are computed by hand from the algorithm mrc_ctl.h
documents: start from init_val, overwrite the mask bits with bits pulled
most-significant first from the raw EV (the first pulled bit on the highest
mask bit), right-align each field in its format field, concatenate.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mrc.errors import ConfigError
from mrc.ctl.ev_fields import EvField, check_fields, check_format, expand, generate, in_range, join_raw, split_raw
from mrc.wire.constants import EvMode

from tests.core.naive import ev_expand as naive_expand


def naive(raw, bits, widths, fields):
    return naive_expand(raw, bits, widths, [(f.width, f.init_val, f.mask) for f in fields])


# --- the OCP examples/ev_expansion cases, expected values worked out by hand ---------------------

STEV16 = [16, 16]
FULL16 = [EvField(16, 0, 0, 0, 0xFFFF)] * 2


def test_stev_explicit_full_masks_is_identity():
    # stev_exp: two 16-bit fields, mask 0xffff, init 0: the EV comes out unchanged
    assert expand(0x1234ABCD, 32, STEV16, FULL16) == 0x1234ABCD
    assert in_range(0x1234ABCD, 32, FULL16)  # min = max = 0 on a masked field: the whole range


def test_stev_generated_single_32_bit_field():
    # stev_gen_2: one 32-bit field, mask 0xffffffff
    fields = [EvField(32, 0, 0, 0, 0xFFFFFFFF)]
    assert expand(0xDEADBEEF, 32, [32], fields) == 0xDEADBEEF


def test_stev_generated_with_fixed_bits():
    # stev_gen_with_fixed: field i = width 16, init (i+1) << 8, mask 0x000f, range [1, 15];
    # the two 4-bit values are packed in the first byte of the EV: (v1 << 4) | v2
    fields = [EvField(16, (i + 1) << 8, 1, 0xF, 0x000F) for i in range(2)]
    assert expand(0x35000000, 32, STEV16, fields) == 0x0103_0205
    assert expand(0xF1000000, 32, STEV16, fields) == 0x010F_0201
    assert in_range(0x35000000, 32, fields)
    assert not in_range(0x05000000, 32, fields)  # v1 = 0 is below min_val 1: DENIED
    with pytest.raises(ConfigError, match="bits set beyond"):
        expand(0x35000001, 32, STEV16, fields)  # only the first 8 bits may be set


def test_stev_generated_weird_noncontiguous_mask():
    # stev_gen_with_fixed_weird_mask: init (i+1) << 12, mask 0x0f0f, range [1, 0xff];
    # the pulled byte 0xA5 puts 0xA on mask bits 8-11 and 0x5 on bits 0-3
    fields = [EvField(16, (i + 1) << 12, 1, 0xFF, 0x0F0F) for i in range(2)]
    raw = ((0xA5 << 8) | 0x3C) << 16
    assert expand(raw, 32, STEV16, fields) == 0x1A05_230C
    assert split_raw(raw, 32, fields) == [0xA5, 0x3C]


SRV6_FMT = [32, 16, 16, 16, 16]  # 32-bit locator, four 16-bit uSIDs: 96 bits


def test_srv6_usids_with_tier_numbers_in_the_upper_byte():
    # mrc_ctl_gen_ev.md: fixed locator, uSID i = init i << 8 (0x100/0x200/0x300/0x400), lower 8 bits generated
    fields = [EvField(32, 0xDEADCAFE)] + [EvField(16, i << 8, 0, 255, 0xFF) for i in range(1, 5)]
    assert expand(0x11223344, 32, SRV6_FMT, fields) == 0xDEADCAFE_0111_0222_0333_0444
    check_format(EvMode.SRV6, SRV6_FMT)
    check_fields(SRV6_FMT, fields, max_raw_bits=32)


def test_srv6_generated_with_fixed_and_narrow_fields():
    # srv6_gen_with_fixed: 16-bit uSIDs, init i << 8, mask 0xf; 4 x 4 bits packed in two bytes
    fields = [EvField(32, 0x13131313)] + [EvField(16, i << 8, 1, 0xF, 0xF) for i in range(1, 5)]
    assert expand(0x9ABC << 16, 32, SRV6_FMT, fields) == 0x13131313_0109_020A_030B_040C
    # srv6_gen: 4-bit profile fields in 16-bit format fields: right-aligned, the rest zero-filled
    narrow = [EvField(32, 0x42424242)] + [EvField(4, 0, 1, 0xF, 0xF)] * 4
    assert expand(0x9ABC << 16, 32, SRV6_FMT, narrow) == 0x42424242_0009_000A_000B_000C


def test_srv6_explicit_subset_leaves_missing_format_fields_zero():
    # srv6_exp_subset: 5 format fields, 3 profile fields
    fields = [EvField(32, 0xDEADDEAD), EvField(16, 0, 0, 0, 0xFFFF), EvField(16, 0, 0, 0, 0xFFFF)]
    assert expand(0x1111_2222, 32, SRV6_FMT, fields) == 0xDEADDEAD_1111_2222_0000_0000


def test_srv6_with_srh_224_bits():
    # mrc_ctl_exp_ev.md: SRv6 address = 32-bit locator + six uSIDs (128 bits), SRH segment = 32-bit
    # locator + four uSIDs (96 bits): 224 bits; ten 16-bit uSIDs pulled from the 256-bit EV value
    widths = [32] + [16] * 6 + [32] + [16] * 4
    usid = EvField(16, 0, 0, 0, 0xFFFF)
    fields = [EvField(32, 0xCAFECAFE)] + [usid] * 6 + [EvField(32, 0xDECAFBAD)] + [usid] * 4
    check_format(EvMode.SRV6, widths)
    check_fields(widths, fields, max_raw_bits=256)
    raw = 0
    for k in range(1, 11):
        raw = (raw << 16) | k
    raw <<= 256 - 160
    expanded = expand(raw, 256, widths, fields)
    assert expanded == 0xCAFECAFE_0001_0002_0003_0004_0005_0006_DECAFBAD_0007_0008_0009_000A
    assert expanded >> 96 == 0xCAFECAFE_0001_0002_0003_0004_0005_0006  # the 128-bit SRv6 address
    assert naive(raw, 256, widths, fields) == expanded
    with pytest.raises(ConfigError) as e:  # 160 raw bits do not fit the controller's 32-bit compact EV
        check_fields(widths, fields, max_raw_bits=32)
    assert e.value.key == "ev_profile.fields"


@pytest.mark.parametrize("raw", [0x1234ABCD, 0xFFFFFFFF, 0, 0x80000001])
def test_naive_model_agrees_on_the_ocp_cases(raw):
    weird = [EvField(16, (i + 1) << 12, 1, 0xFF, 0x0F0F) for i in range(2)]
    fixed = [EvField(16, (i + 1) << 8, 1, 0xF, 0x000F) for i in range(2)]
    for fields in (FULL16, weird, fixed):
        used = sum(f.mask_bits for f in fields)
        r = raw >> (32 - used) << (32 - used)
        assert expand(r, 32, STEV16, fields) == naive(r, 32, STEV16, fields)


# --- configuration restrictions (mrc_ctl.h), each naming the offending field ---------------------

@pytest.mark.parametrize(
    "widths, fields, key",
    [
        ([16], [EvField(8, mask=0xFF), EvField(8, mask=0xFF)], "ev_profile.fields"),  # more fields than the format
        ([16, 8], [EvField(16, mask=1), EvField(16, mask=1)], "ev_profile.fields"),  # total width exceeds the format
        ([16, 16], [EvField(8, mask=1), EvField(20, mask=1)], "ev_profile.fields[1].width"),  # wider than its format field
        ([16], [EvField(8, init_val=0x100, mask=1)], "ev_profile.fields[0].init_val"),  # init_val wider than the field
        ([16], [EvField(8, mask=0x1F0)], "ev_profile.fields[0].mask"),  # mask bits outside the field
        ([16], [EvField(8, max_val=8, mask=0x7)], "ev_profile.fields[0].max_val"),  # max_val wider than the mask bits
        ([16], [EvField(8, max_val=1)], "ev_profile.fields[0].max_val"),  # fixed field: max_val must be 0
        ([16], [EvField(8, min_val=5, max_val=3, mask=0xF)], "ev_profile.fields[0].min_val"),  # min above max
        ([16], [EvField(8, min_val=2)], "ev_profile.fields[0].min_val"),  # fixed field: min_val must be 0
        ([64], [EvField(40, mask=1)], "ev_profile.fields[0].width"),  # mrc_ctl_ev_field values are 32-bit
        ([16], [EvField(0)], "ev_profile.fields[0].width"),
    ],
)
def test_profile_restrictions_name_the_field(widths, fields, key):
    with pytest.raises(ConfigError) as e:
        check_fields(widths, fields)
    assert e.value.key == key
    assert key in str(e.value)


@pytest.mark.parametrize(
    "mode, widths, key",
    [(EvMode.STEV, [16, 17], "ev_format.fields"), (EvMode.UDP, [17], "ev_format.fields"),
     (EvMode.SRV6, [128, 128, 8], "ev_format.fields"), (EvMode.STEV, [], "ev_format.fields"),
     (EvMode.SRV6, [0, 16], "ev_format.fields[0].width")],
)
def test_format_restrictions(mode, widths, key):
    with pytest.raises(ConfigError) as e:
        check_format(mode, widths)
    assert e.value.key == key


def test_raw_ev_checks():
    fields = [EvField(8, mask=0xFF)]
    with pytest.raises(ConfigError, match="more bits"):
        split_raw(0, 4, fields)
    with pytest.raises(ConfigError, match="2\\^32"):
        split_raw(1 << 32, 32, fields)
    with pytest.raises(ConfigError) as e:
        join_raw([256], 32, fields)
    assert e.value.key == "ev.fields[0]"


# --- properties -----------------------------------------------------------------------------

@st.composite
def profiles(draw, max_fields=4):
    """(format widths, fields, container bits) with every restriction satisfied."""
    n = draw(st.integers(1, max_fields))
    widths, fields = [], []
    for _ in range(n):
        width = draw(st.integers(1, 16))
        mask = draw(st.integers(0, (1 << width) - 1))
        nbits = bin(mask).count("1")
        hi = draw(st.integers(0, (1 << nbits) - 1))
        lo = draw(st.integers(0, hi))
        init = draw(st.integers(0, (1 << width) - 1))
        fields.append(EvField(width, init, lo, hi, mask))
        widths.append(width + draw(st.integers(0, 4)))
    extra_fmt = draw(st.lists(st.integers(1, 8), max_size=2))
    used = sum(f.mask_bits for f in fields)
    return widths + extra_fmt, fields, used + draw(st.integers(0, 8))


@st.composite
def profile_and_values(draw):
    widths, fields, bits = draw(profiles())
    values = [draw(st.integers(0, (1 << f.mask_bits) - 1)) for f in fields]
    return widths, fields, bits, values


@given(profile_and_values())
def test_expand_matches_the_naive_model(case):
    widths, fields, bits, values = case
    check_fields(widths, fields, max_raw_bits=bits)
    raw = join_raw(values, bits, fields)
    assert expand(raw, bits, widths, fields) == naive(raw, bits, widths, fields)


@given(profile_and_values(), st.data())
def test_expand_depends_only_on_pulled_bits_and_unmasked_init_bits(case, data):
    widths, fields, bits, values = case
    raw = join_raw(values, bits, fields)
    # init_val bits under the mask are always overwritten: changing them changes nothing
    noisy = [EvField(f.width, f.init_val ^ (data.draw(st.integers(0, (1 << f.width) - 1)) & f.mask),
                     f.min_val, f.max_val, f.mask) for f in fields]
    assert expand(raw, bits, widths, noisy) == expand(raw, bits, widths, fields)
    # and the output moves with the pulled bits of one field only inside that field's mask
    k = data.draw(st.integers(0, len(fields) - 1))
    f = fields[k]
    if f.mask:
        other = list(values)
        other[k] = values[k] ^ ((1 << f.mask_bits) - 1)
        diff = expand(raw, bits, widths, fields) ^ expand(join_raw(other, bits, fields), bits, widths, fields)
        shift = sum(widths[k + 1:])
        assert diff == f.mask << shift


@given(profile_and_values())
def test_split_and_join_are_inverses(case):
    widths, fields, bits, values = case
    raw = join_raw(values, bits, fields)
    assert split_raw(raw, bits, fields) == [v if f.mask else 0 for v, f in zip(values, fields)]
    assert join_raw(split_raw(raw, bits, fields), bits, fields) == raw


@given(profiles(max_fields=3), st.integers(1, 64), st.integers(1, 8), st.integers(0, 2**32))
def test_generated_evs_are_distinct_in_range_and_round_robin(case, count, n_ports, seed):
    widths, fields, bits = case
    total = 1
    for f in fields:
        lo, hi = f.value_range
        total *= hi - lo + 1
    count = min(count, total)
    raws, ports = generate(count, bits, fields, n_ports, seed)
    assert len(set(raws)) == count
    for raw in raws:
        for f, v in zip(fields, split_raw(int(raw), bits, fields)):
            lo, hi = f.value_range
            assert lo <= v <= hi
        assert in_range(int(raw), bits, fields)
    assert [int(p) for p in ports] == [k % n_ports + 1 for k in range(count)]
    again, _ = generate(count, bits, fields, n_ports, seed)
    assert list(again) == list(raws)  # reproducible from the seed
    if count < total:
        with pytest.raises(ConfigError):
            generate(total + 1, bits, fields, n_ports, seed)
