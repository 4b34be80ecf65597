"""A fast slice of ``benchmarks/fuzz_padding.py``: tiles with lanes outside
the tensor (padded rows, ``pad()``, windows past the end, looped chunks)
through prologues and every reduction, scan, sort and flip, against torch."""

from benchmarks import fuzz_padding


def test_a_slice_of_the_padding_fuzzer_matches_torch():
    table, failures = fuzz_padding.run(36, seed=7)
    assert sum(v[0] for v in table.values()) == 36, failures
    assert not failures
