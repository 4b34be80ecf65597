"""``python -m ntsym cache info|clear``: where ntsym's cache is, what it
holds, and emptying it."""

import argparse
import sys


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def main(argv=None):
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    from ntsym_codegen import cache

    parser = argparse.ArgumentParser(prog="python -m ntsym", description="ntsym's command line")
    commands = parser.add_subparsers(dest="command", required=True)
    cache_parser = commands.add_parser("cache", help="the cache of generated kernels and tuning choices")
    cache_parser.add_argument("action", choices=("info", "clear"),
                              help="info: where it is, entries and size; clear: remove what ntsym wrote there")
    args = parser.parse_args(argv)
    if args.action == "info":
        facts = cache.summary()
        print(f"cache directory: {facts['path']} (NTSYM_CACHE_DIR, default $XDG_CACHE_HOME/ntsym or ~/.cache/ntsym)")
        print(f"generated modules: {facts['modules']}")
        print(f"tuning files: {facts['tuning_files']}")
        print(f"size: {_human(facts['bytes'])}")
    else:
        freed = cache.clear()
        print(f"cleared {cache.cache_dir()}: {_human(freed)} freed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
