"""ntsym back end: IR, SymPy printer, kernel and launcher emitter, runtime."""
