import os
import sys

# Kernels run through Triton's interpreter in the tests (ntsym selects it
# without a GPU; this makes it explicit and keeps generated files per run).
os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
