"""The experiments' timing: interleaved rounds of ``do_bench`` medians."""

from triton.testing import do_bench

ROUNDS = 5


def interleaved(fns, rounds=ROUNDS):
    """{label: [ms, one per round]} for ``fns`` ({label: fn} or (label, fn)
    pairs): each round times every fn once (do_bench median, L2 flushed), in
    order, so that drifting clocks touch all of them alike."""
    pairs = list(fns.items()) if isinstance(fns, dict) else list(fns)
    times = {label: [] for label, _ in pairs}
    for _ in range(rounds):
        for label, fn in pairs:
            times[label].append(do_bench(fn, warmup=25, rep=100, return_mode="median"))
    return times


def ratio_table(times, baseline, first="variant", ratio=None):
    """A markdown table of ``times`` (from ``interleaved``): median ms, the
    ratio to ``baseline``'s median, and the range of the rounds."""
    import statistics

    base = statistics.median(times[baseline])
    lines = [f"| {first} | ms | {ratio or '/ ' + baseline} | range |", "|---|---:|---:|---|"]
    for label, ms_list in times.items():
        ms = statistics.median(ms_list)
        lines.append(f"| {label} | {ms:.4f} | {ms / base:.3f} | {min(ms_list):.4f}-{max(ms_list):.4f} |")
    return "\n".join(lines)
