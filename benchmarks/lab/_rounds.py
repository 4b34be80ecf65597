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


def flops_table(title, times, baseline, flops, spread=False):
    """Print ``times`` (from ``interleaved``) under ``### title``, fastest first:
    median ms, TFLOP/s for ``flops`` operations, the ratio to ``baseline``'s
    median and, with ``spread``, the range of the rounds."""
    import statistics

    base = statistics.median(times[baseline])
    print(f"\n### {title}\n")
    extra = (" range |", "---|") if spread else ("", "")
    print(f"| impl | ms | TFLOP/s | / {baseline} |{extra[0]}\n|---|---:|---:|---:|{extra[1]}")
    for name, ts in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
        ms = statistics.median(ts)
        tail = f" {min(ts):.4f}-{max(ts):.4f} |" if spread else ""
        print(f"| {name} | {ms:.4f} | {flops / ms / 1e9:.0f} | {ms / base:.3f} |{tail}")
    print(flush=True)
