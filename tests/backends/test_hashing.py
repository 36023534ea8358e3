"""Tests of ``bayeseval._backends.hashing``."""

from __future__ import annotations

import numpy as np
import pytest

from bayeseval.plan.split import _fnv1a64_bytes, _fnv1a64_strings, _mix64, _mix64_int, key_salt


def test_key_salt_takes_random_seed_by_keyword_only():
    with pytest.raises(TypeError):
        key_salt((1, "north"), 42)
    assert key_salt((1, "north"), random_seed=42) != key_salt((1, "north"), random_seed=43)


def test_mix64_is_the_splitmix64_finalizer():
    # SplitMix64 seeded with 0 returns mix64(0 + 0x9E3779B97F4A7C15) first; its published first
    # output is 0xE220A8397B1DCDAF (Vigna's splitmix64.c, seed 0), second 0x6E789E6AA1B965F4.
    assert _mix64_int(0x9E3779B97F4A7C15) == 0xE220A8397B1DCDAF
    assert _mix64_int(2 * 0x9E3779B97F4A7C15 % 2**64) == 0x6E789E6AA1B965F4
    arr = np.array([0x9E3779B97F4A7C15, 2 * 0x9E3779B97F4A7C15 % 2**64], dtype=np.uint64)
    assert _mix64(arr).tolist() == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]


def test_fnv1a64_reference_values_and_vectorised():
    # FNV-1a 64 reference values (Fowler/Noll/Vo test vectors): "" -> offset basis, "a", "foobar"
    assert _fnv1a64_bytes(b"") == 0xCBF29CE484222325
    assert _fnv1a64_bytes(b"a") == 0xAF63DC4C8601EC8C
    assert _fnv1a64_bytes(b"foobar") == 0x85944171F73967E8
    words = ["", "a", "foobar", "é-ß", "row-000017"]
    got = _fnv1a64_strings(words).tolist()
    assert got == [_fnv1a64_bytes(w.encode("utf-8")) for w in words]
