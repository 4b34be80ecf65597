"""GPU benchmark suite for ntsym: hand-written Triton baselines and the harness.

Nothing is imported here on purpose: ``benchmarks.bench`` has to set
``TRITON_INTERPRET`` before Triton is imported.
"""
