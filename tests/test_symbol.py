import pickle

import pytest
import sympy

import ntsym
from ntsym import Symbol, block_size


def test_symbol_arithmetic_is_sympy():
    m, n = Symbol("BLOCK_SIZE_M"), Symbol("BLOCK_SIZE_N")
    assert repr(m) == "BLOCK_SIZE_M"
    product = m * n
    assert isinstance(product, sympy.Expr)
    assert product == sympy.Mul(m, n)
    assert eval(repr(product), {"BLOCK_SIZE_M": 3, "BLOCK_SIZE_N": 5}) == 15
    assert (m < n).func is sympy.StrictLessThan


def test_symbol_assumptions():
    s = Symbol("n")
    assert s.is_integer and s.is_positive
    assert (s - 1).is_nonnegative


def test_symbol_flags():
    s = Symbol("B", meta=True, lower_bound=16, upper_bound=128, power_of_two=True)
    assert s.meta and s.constexpr
    assert s.candidates() == [16, 32, 64, 128]
    c = Symbol("C", constexpr=True)
    assert c.constexpr and not c.meta
    assert Symbol("B", meta=True) != Symbol("B", constexpr=True)


def test_symbol_pickles_with_flags():
    s = Symbol("B", meta=True, lower_bound=16)
    t = pickle.loads(pickle.dumps(s))
    assert t == s and t.meta and t.lower_bound == 16


def test_symbol_rejects_bad_names_and_bounds():
    with pytest.raises(ValueError):
        Symbol("not an identifier")
    with pytest.raises(ValueError):
        Symbol("B", lower_bound=64, upper_bound=32)


def test_block_size_defaults():
    b = block_size()
    assert b.meta and b.power_of_two
    assert b.candidates() == [32, 64, 128, 256, 512, 1024]
    assert block_size(lower_bound=16, upper_bound=64).candidates() == [16, 32, 64]
    assert block_size() != block_size()
