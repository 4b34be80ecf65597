"""sdpa through tensor descriptors: ntsym emits no persistent variant for it (its
tile work loads q before the key loop, and flattening that loop failed to compile
for some block shapes and ran 3.6x slower for the others).  This patches the
emitter to build the variant anyway, without flattening, and times the plain
kernel, the descriptor kernel with one program per tile, and the descriptor
kernel on a persistent grid, against the Triton baseline and torch (fp16,
benchmark shape, one process).  Run with NTSYM_RETUNE=1 so each form is tuned.

Usage (GPU): NTSYM_RETUNE=1 python -m benchmarks.lab.sdpa_tma
"""
import inspect, logging, sys, time
import torch, triton
from benchmarks.lab._rounds import interleaved, ratio_table
import ntsym_codegen.emit as E, ntsym_codegen.runtime.persistent as R
src = inspect.getsource(E._persistent_kernel).replace("flatten=True", "flatten=False")
exec(src, E.__dict__)
E._streams = lambda body: True
MODE = {"programs": None}
orig = R.persistent_programs
R.persistent_programs = lambda device, spec: MODE["programs"] or orig(device, spec)
h = logging.StreamHandler(sys.stdout); h.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
logging.getLogger("ntsym").addHandler(h); logging.getLogger("ntsym").setLevel(logging.INFO)
from benchmarks import tasks, triton_baselines as tb
import examples.sdpa as sdpa
dev, dt = "cuda", torch.float16
print(torch.cuda.get_device_name(), torch.__version__, triton.__version__, flush=True)
args, kw = tasks.make_inputs("sdpa", tasks.BENCH_SHAPES["sdpa"], dev, dt)
q, k, v = args
def nt(opt, programs):
    out = torch.empty_like(q)
    def f():
        MODE["programs"] = programs
        sdpa.kernel(q, k, v, q.shape[-1] ** -0.5, False, out, ntsym_options=opt)
        return out
    return f
ref = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v)
expect = ref().float()
fns = {}
# The extra "grid" key only keeps the two descriptor forms apart in ntsym's call and tuning caches.
for label, fn in (("plain", nt({"persistent": False}, None)), ("tma 1 tile/program", nt({"persistent": True}, 10**9)),
                  ("tma persistent, no flatten", nt({"persistent": True, "grid": "persistent"}, None)), ("triton", lambda: tb.sdpa(q, k, v)), ("torch", ref)):
    t0 = time.time()
    try:
        got = fn().float(); err = ((got - expect).norm() / expect.norm()).item()
    except Exception as e:
        print(label, "FAILED", type(e).__name__, str(e)[:300], flush=True); continue
    print(f"{label}: first call {time.time()-t0:.1f}s rel err {err:.2e}", flush=True)
    if err < 1e-2: fns[label] = fn
print(ratio_table(interleaved(fns), "triton", first="impl", ratio="/triton"))
