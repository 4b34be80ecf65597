"""The C sources: the header, the runtime helpers every library carries, one
launcher per plan (checks, choice of variant, launch) and the entry point
that dispatches to them."""

from ntsym_codegen.aot.common import DTYPES, ELEMENT_SIZES, STATUS, AotError, c_string


def header(prefix, entry_params, *, doc=""):
    """``<prefix>.h``: the tensor struct, status codes and the entry points."""
    guard = f"NTSYM_{prefix.upper()}_H"
    dtype_enum = ",\n    ".join(f"NTSYM_{d.upper()} = {i}" for i, d in enumerate(DTYPES))
    status_enum = ",\n    ".join(f"{k} = {v}" for k, v in STATUS.items())
    return f"""/* {prefix}.h: ntsym kernel `{prefix}`, built ahead of time (generated; do not edit).
{doc}*/
#ifndef {guard}
#define {guard}

#include <stdint.h>

#ifndef NTSYM_TYPES_DEFINED
#define NTSYM_TYPES_DEFINED
/* Element types, as ntsym_tensor.dtype. */
enum ntsym_dtype {{
    {dtype_enum}
}};

/* Status of a launch; on anything but NTSYM_SUCCESS nothing was launched and
   <kernel>_message() says why. */
enum ntsym_status {{
    {status_enum}
}};

/* A tensor: device address of element 0, ndim sizes and strides (in
   elements, as torch gives them), the element type. */
typedef struct {{
    void *data;
    const int64_t *shape;
    const int64_t *strides;
    int32_t ndim;
    int32_t dtype;
}} ntsym_tensor;

/* A CUDA stream (CUstream), NULL for the default stream. */
typedef void *ntsym_stream;
#endif

#ifdef __cplusplus
extern "C" {{
#endif

int {prefix}_launch({entry_params});

/* Why the last launch of this thread failed ("" after a success). */
const char *{prefix}_message(void);

#ifdef __cplusplus
}}
#endif

#endif /* {guard} */
"""


_RUNTIME_C = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <cuda.h>

static __thread char ntsym_message_text[2048];

static int ntsym_fail(int status, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(ntsym_message_text, sizeof ntsym_message_text, format, args);
    va_end(args);
    return status;
}

static const char *ntsym_dtype_names[] = {{DTYPE_NAMES}};

static const char *ntsym_dtype_name(int32_t code) {
    return code >= 0 && code < (int32_t)(sizeof ntsym_dtype_names / sizeof *ntsym_dtype_names)
        ? ntsym_dtype_names[code] : "unknown";
}

static int ntsym_fail_s(int status, const char *format, const char *text) {
    return ntsym_fail(status, format, text);
}

static int64_t ntsym_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t ntsym_cdiv(int64_t a, int64_t b) { return -ntsym_floordiv(-a, b); }
static int64_t ntsym_mod(int64_t a, int64_t b) { return a - ntsym_floordiv(a, b) * b; }
static int64_t ntsym_max(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t ntsym_min(int64_t a, int64_t b) { return a < b ? a : b; }

static int64_t ntsym_numel(const ntsym_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
    return n;
}

/* Whether some element offset can reach 2**31 (runtime.needs_int64). */
static int ntsym_needs_int64(const ntsym_tensor *t) {
    int64_t extent = 0;
    for (int d = 0; d < t->ndim; ++d) {
        int64_t n = t->shape[d], st = t->strides[d];
        if (n > 0) extent += (n - 1) * (st >= 0 ? st : -st);
        if (n >= INT32_MAX) return 1;
    }
    return extent >= INT32_MAX;
}

/* Whether elements of t may share an address: with its dimensions of size > 1 taken by
   growing |stride|, some stride is at most the span of the smaller ones (the test
   writes.check_no_overlap makes first; a layout it cannot prove disjoint is refused). */
static int ntsym_overlapping(const ntsym_tensor *t) {
    int64_t span = 0, previous = -1;
    int previous_d = -1;
    if (ntsym_numel(t) <= 1) return 0;
    for (int k = 0; k < t->ndim; ++k) {
        int best = -1;
        int64_t best_st = 0;
        for (int d = 0; d < t->ndim; ++d) {
            int64_t st = t->strides[d] >= 0 ? t->strides[d] : -t->strides[d];
            if (t->shape[d] <= 1 || st < previous || (st == previous && d <= previous_d)) continue;
            if (best < 0 || st < best_st) { best = d; best_st = st; }
        }
        if (best < 0) break;
        if (best_st <= span) return 1;
        span += (t->shape[best] - 1) * best_st;
        previous = best_st;
        previous_d = best;
    }
    return 0;
}

/* torch's is_contiguous(): row-major strides over dimensions of size > 1. */
static int ntsym_contiguous(const ntsym_tensor *t) {
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; --d) {
        if (t->shape[d] == 0) return 1;
        if (t->shape[d] != 1 && t->strides[d] != expected) return 0;
        expected *= t->shape[d];
    }
    return 1;
}

static void ntsym_extent(const ntsym_tensor *t, int64_t *start, int64_t *end) {
    int64_t span = 1, size = ntsym_element_size(t->dtype);
    *start = (int64_t)(uintptr_t)t->data;
    for (int d = 0; d < t->ndim; ++d) {
        if (t->shape[d] == 0) { *end = *start; return; }
        span += (t->shape[d] - 1) * (t->strides[d] >= 0 ? t->strides[d] : -t->strides[d]);
    }
    *end = *start + span * size;
}

static int ntsym_overlap(const ntsym_tensor *a, const ntsym_tensor *b) {
    int64_t a0, a1, b0, b1;
    ntsym_extent(a, &a0, &a1);
    ntsym_extent(b, &b0, &b1);
    return a0 < b1 && b0 < a1;
}

static int ntsym_identical(const ntsym_tensor *a, const ntsym_tensor *b) {
    if (a->data != b->data || a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; ++d)
        if (a->shape[d] != b->shape[d] || a->strides[d] != b->strides[d]) return 0;
    return 1;
}

/* Whether tensors whose byte ranges overlap share an element, decided as the
   torch launcher decides it (codegen/overlap.py): a view whose dimensions,
   sorted by stride, each step past the span of the smaller ones ("nested",
   as every dense or sliced layout is) gives each offset at most one index,
   found greedily, so the other view's elements are tested one by one.
   Where neither view is nested (or their elements differ in width or are
   misaligned) they are taken to share one: refused, never guessed. */
#define NTSYM_MAX_DIMS 64

/* The dimensions of `t` that add elements, by increasing stride; whether it is nested. */
static int ntsym_nested(const ntsym_tensor *t, int *order, int *count) {
    int k = 0;
    int64_t span = 0;
    for (int d = 0; d < t->ndim; ++d) {
        if (t->shape[d] <= 1 || t->strides[d] == 0) continue;
        int j = k++;
        while (j > 0 && t->strides[order[j - 1]] > t->strides[d]) { order[j] = order[j - 1]; --j; }
        order[j] = d;
    }
    *count = k;
    for (int i = 0; i < k; ++i) {
        int64_t st = t->strides[order[i]];
        if (st < 0 || st <= span) return 0;
        span += (t->shape[order[i]] - 1) * st;
    }
    return 1;
}

/* Whether some element of `e`, whose element 0 is `base` elements past the
   nested `n`'s, is an element of `n`. */
static int ntsym_members(const ntsym_tensor *e, int64_t base, const ntsym_tensor *n, const int *order, int count) {
    int64_t index[NTSYM_MAX_DIMS] = {0};
    int64_t total = ntsym_numel(e);
    for (int64_t k = 0; k < total; ++k) {
        int64_t rest = base;
        for (int d = 0; d < e->ndim; ++d) rest += index[d] * e->strides[d];
        int found = rest >= 0;
        for (int i = count - 1; i >= 0 && found; --i) {
            int64_t st = n->strides[order[i]], q = rest / st;
            if (q >= n->shape[order[i]]) found = 0;
            rest -= q * st;
        }
        if (found && rest == 0) return 1;
        for (int d = e->ndim - 1; d >= 0 && ++index[d] == e->shape[d]; --d) index[d] = 0;
    }
    return 0;
}

static int ntsym_shared(const ntsym_tensor *a, const ntsym_tensor *b) {
    int64_t size = ntsym_element_size(a->dtype), numel_a = ntsym_numel(a), numel_b = ntsym_numel(b);
    int64_t delta = (int64_t)((intptr_t)b->data - (intptr_t)a->data);
    int order_a[NTSYM_MAX_DIMS], order_b[NTSYM_MAX_DIMS], count_a, count_b;
    if (numel_a == 0 || numel_b == 0) return 0;
    if (size != ntsym_element_size(b->dtype) || delta % size) return 1;
    if (a->ndim > NTSYM_MAX_DIMS || b->ndim > NTSYM_MAX_DIMS) return 1;
    int nested_a = ntsym_nested(a, order_a, &count_a), nested_b = ntsym_nested(b, order_b, &count_b);
    if (nested_b && (numel_a <= numel_b || !nested_a)) return ntsym_members(a, -delta / size, b, order_b, count_b);
    if (nested_a) return ntsym_members(b, delta / size, a, order_a, count_a);
    return 1;
}

/* The driver, loaded at the first launch: the library links no CUDA library. */
typedef CUresult (*ntsym_cuCtxGetCurrent_t)(CUcontext *);
typedef CUresult (*ntsym_cuCtxGetDevice_t)(CUdevice *);
typedef CUresult (*ntsym_cuModuleLoadData_t)(CUmodule *, const void *);
typedef CUresult (*ntsym_cuModuleGetFunction_t)(CUfunction *, CUmodule, const char *);
typedef CUresult (*ntsym_cuFuncSetAttribute_t)(CUfunction, CUfunction_attribute, int);
typedef CUresult (*ntsym_cuDeviceGetAttribute_t)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*ntsym_cuLaunchKernel_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                           unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*ntsym_cuGetErrorString_t)(CUresult, const char **);

static struct {
    int loaded;
    ntsym_cuCtxGetCurrent_t cuCtxGetCurrent;
    ntsym_cuCtxGetDevice_t cuCtxGetDevice;
    ntsym_cuModuleLoadData_t cuModuleLoadData;
    ntsym_cuModuleGetFunction_t cuModuleGetFunction;
    ntsym_cuFuncSetAttribute_t cuFuncSetAttribute;
    ntsym_cuDeviceGetAttribute_t cuDeviceGetAttribute;
    ntsym_cuLaunchKernel_t cuLaunchKernel;
    ntsym_cuGetErrorString_t cuGetErrorString;
} ntsym_cu;

static pthread_mutex_t ntsym_lock = PTHREAD_MUTEX_INITIALIZER;

static int ntsym_cuda_error(CUresult result, const char *what) {
    const char *text = "unknown error";
    if (ntsym_cu.cuGetErrorString) ntsym_cu.cuGetErrorString(result, &text);
    return ntsym_fail(NTSYM_ERROR_CUDA, "%s failed: %s (CUresult %d)", what, text, (int)result);
}

static int ntsym_load_driver(void) {
    if (ntsym_cu.loaded) return NTSYM_SUCCESS;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return ntsym_fail(NTSYM_ERROR_CUDA, "cannot load libcuda.so.1 (no CUDA driver): %s", dlerror());
#define NTSYM_SYM(name) \
    if (!(ntsym_cu.name = (ntsym_##name##_t)dlsym(lib, #name))) \
        return ntsym_fail(NTSYM_ERROR_CUDA, "libcuda has no %s", #name);
    NTSYM_SYM(cuCtxGetCurrent) NTSYM_SYM(cuCtxGetDevice) NTSYM_SYM(cuModuleLoadData)
    NTSYM_SYM(cuModuleGetFunction) NTSYM_SYM(cuFuncSetAttribute) NTSYM_SYM(cuDeviceGetAttribute)
    NTSYM_SYM(cuLaunchKernel) NTSYM_SYM(cuGetErrorString)
#undef NTSYM_SYM
    ntsym_cu.loaded = 1;
    return NTSYM_SUCCESS;
}

#define NTSYM_MAX_CONTEXTS 64

typedef struct {
    const unsigned char *cubin;
    const char *name;
    int shared;
    int num_warps;
    CUcontext contexts[NTSYM_MAX_CONTEXTS];
    CUfunction functions[NTSYM_MAX_CONTEXTS];
} ntsym_binary;

/* The variant's function in the current context, loaded once per context. */
static int ntsym_function(ntsym_binary *binary, CUfunction *function) {
    CUcontext context = NULL;
    CUresult r;
    int status = NTSYM_SUCCESS;
    pthread_mutex_lock(&ntsym_lock);
    if ((status = ntsym_load_driver()) != NTSYM_SUCCESS) goto done;
    if ((r = ntsym_cu.cuCtxGetCurrent(&context)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuCtxGetCurrent"); goto done; }
    if (context == NULL) { status = ntsym_fail(NTSYM_ERROR_CUDA, "no current CUDA context: initialise the device first"); goto done; }
    for (int i = 0; i < NTSYM_MAX_CONTEXTS; ++i) {
        if (binary->contexts[i] == context) { *function = binary->functions[i]; goto done; }
        if (binary->contexts[i] == NULL) {
            CUmodule module;
            CUdevice device;
            int optin = 0;
            if ((r = ntsym_cu.cuModuleLoadData(&module, binary->cubin)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuModuleLoadData"); goto done; }
            if ((r = ntsym_cu.cuModuleGetFunction(function, module, binary->name)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuModuleGetFunction"); goto done; }
            if (binary->shared > 49152) {
                if ((r = ntsym_cu.cuCtxGetDevice(&device)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuCtxGetDevice"); goto done; }
                ntsym_cu.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
                if (optin < binary->shared) { status = ntsym_fail(NTSYM_ERROR_CUDA, "the kernel needs %d bytes of shared memory, the device offers %d", binary->shared, optin); goto done; }
                if ((r = ntsym_cu.cuFuncSetAttribute(*function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, binary->shared)) != CUDA_SUCCESS) { status = ntsym_cuda_error(r, "cuFuncSetAttribute"); goto done; }
            }
            binary->functions[i] = *function;
            binary->contexts[i] = context;
            goto done;
        }
    }
    status = ntsym_fail(NTSYM_ERROR_CUDA, "more than %d CUDA contexts", NTSYM_MAX_CONTEXTS);
done:
    pthread_mutex_unlock(&ntsym_lock);
    return status;
}

static int ntsym_launch(ntsym_binary *binary, int64_t grid, CUstream stream, void **params) {
    CUfunction function;
    CUresult r;
    int status;
    if (grid > INT32_MAX) return ntsym_fail(NTSYM_ERROR_SHAPE, "the grid has %lld programs, more than 2**31 - 1", (long long)grid);
    if ((status = ntsym_function(binary, &function)) != NTSYM_SUCCESS) return status;
    r = ntsym_cu.cuLaunchKernel(function, (unsigned)grid, 1, 1, 32 * binary->num_warps, 1, 1, binary->shared,
                                stream, params, NULL);
    if (r != CUDA_SUCCESS) return ntsym_cuda_error(r, "cuLaunchKernel");
    return NTSYM_SUCCESS;
}
"""


def _element_sizes_c():
    cases = " ".join(f"case {i}: return {ELEMENT_SIZES[d]};" for i, d in enumerate(DTYPES))
    return f"static int64_t ntsym_element_size(int32_t code) {{ switch (code) {{ {cases} }} return 1; }}\n"


def _param_decl(p):
    if p.kind in ("tensor", "shape"):
        return f"ntsym_tensor {p.name}"
    return f"{p.ctype} {p.name}"


def launcher_c(plan_, static=True):
    """The C function of one plan: checks, choice of variant, launch."""
    lines = []
    for i, v in enumerate(plan_.variants):
        data = ", ".join(str(b) for b in v.cubin)
        lines.append(f"static const unsigned char {plan_.name}_cubin_{i}[{len(v.cubin)}] = {{{data}}};")
        lines.append(f"static ntsym_binary {plan_.name}_binary_{i} = {{{plan_.name}_cubin_{i}, "
                     f"{c_string(v.function)}, {v.shared}, {v.num_warps}, {{0}}, {{0}}}};")
    params = ", ".join(["ntsym_stream stream"] + [_param_decl(p) for p in plan_.params])
    lines.append(f"{'static ' if static else ''}int {plan_.name}_launch({params}) {{")
    body = ["ntsym_message_text[0] = 0;"] + list(plan_.prologue)
    for p in plan_.params:
        if p.kind == "scalar":
            body.append(f"float {p.name}_fp32 = (float){p.name}; double {p.name}_fp64 = (double){p.name}; "
                        f"int32_t {p.name}_i32 = (int32_t){p.name}; int64_t {p.name}_i64 = (int64_t){p.name};")
            body.append(f"(void){p.name}_fp32; (void){p.name}_fp64; (void){p.name}_i32; (void){p.name}_i64;")
        if p.kind == "tensor":
            body.append(f"CUdeviceptr {p.name}_data = (CUdeviceptr)(uintptr_t){p.name}.data;")
    body.append(f"int64_t ntsym_grid = {plan_.grid};")
    body.append("if (ntsym_grid <= 0) return NTSYM_SUCCESS;  /* an empty problem: nothing to run */")
    for ax in plan_.axes:
        if ax.kind == "aligned":
            # the most specialised variant whose preconditions hold (``planning._axes``)
            tests = [(ax.c, 1)] + ([(ax.c_partial, 2)] if ax.c_partial else [])
            tests += [(cond, 3 + i) for i, (_, cond) in enumerate(ax.c_transposed)]
            chain = " ".join(f"{cond} ? {value} :" for cond, value in tests)
            body.append(f"int64_t aligned_value = NTSYM_INT64_value ? 0 : {chain} 0;")
        else:
            body.append(f"int64_t {ax.name}_value = {ax.c};")
    for ax in plan_.axes:
        if ax.kind == "choice":
            allowed = " || ".join(f"{ax.name}_value == {v}" for v in ax.values)
            body.append(f"if (!({allowed})) " + f"return ntsym_fail(NTSYM_ERROR_NO_VARIANT, "
                        f"{c_string(f'{ax.name} (=%lld) has no compiled variant; the library was built for ' + ', '.join(map(str, ax.values)))}, "
                        f"(long long){ax.name}_value);")
    # 32-bit copies of sizes and strides (used by variants with 32-bit index math).
    declared = set()
    for v in plan_.variants:
        for local, ctype in v.launch_args:
            base, suffix = local.rsplit("_", 1)
            if suffix in ("i32", "i64") and local not in declared and base not in {p.name for p in plan_.params}:
                body.append(f"{ctype} {local} = ({ctype}){base};")
                declared.add(local)
    # The launcher's own locals are named ntsym_*, which no size symbol may take (planning.c_names).
    body.append("void *ntsym_params[64];")
    body.append("CUdeviceptr ntsym_scratch = 0;")
    body.append("int ntsym_count = 0;")
    for i, v in enumerate(plan_.variants):
        cond = " && ".join(f"{ax.name}_value == {v.assignment[ax.name]}" for ax in plan_.axes)
        pushes = " ".join(f"ntsym_params[ntsym_count++] = &{local};" for local, _ in v.launch_args)
        pushes += " ntsym_params[ntsym_count++] = &ntsym_scratch;" * v.scratch_args
        body.append(f"if ({cond}) {{ {pushes} (void)ntsym_count; return ntsym_launch(&{plan_.name}_binary_{i}, "
                    f"ntsym_grid, (CUstream)stream, ntsym_params); }}")
    body.append("return ntsym_fail(NTSYM_ERROR_NO_VARIANT, \"no compiled variant for this call\");")
    lines += ["    " + b for b in body]
    lines.append("}")
    return "\n".join(lines)


def library_c(prefix, plans, dispatch=None):
    """The whole C source: the runtime helpers, every plan's launcher, and the
    entry point ``<prefix>_launch`` (one plan's, or ``dispatch`` over several)."""
    names = ", ".join(c_string(d) for d in DTYPES)
    parts = [f'/* {prefix}.c: ntsym kernel `{prefix}`, built ahead of time (generated; do not edit). */',
             f'#include "{prefix}.h"',
             _RUNTIME_C.replace("{{DTYPE_NAMES}}", "{" + names + "}").replace(
                 "static void ntsym_extent", _element_sizes_c() + "\nstatic void ntsym_extent")]
    for p in plans:
        parts.append(launcher_c(p))
    parts.append(f"const char *{prefix}_message(void) {{ return ntsym_message_text; }}")
    parts.append(dispatch)
    return "\n\n".join(parts) + "\n"


def single_dispatch(prefix, plan_):
    params = ["ntsym_stream stream"] + [_param_decl(p) for p in plan_.params]
    call = ", ".join(["stream"] + [p.name for p in plan_.params])
    return f"int {prefix}_launch({', '.join(params)}) {{\n    return {plan_.name}_launch({call});\n}}", \
        ", ".join(params)


def config_dispatch(prefix, plans, keys, config_names, guards=None):
    """An entry point that takes the configuration's values after the
    kernel's arguments and calls the plan built for them: the first whose
    key matches and whose guard (a C condition on the arguments, or None)
    holds."""
    first = plans[0]
    for p in plans[1:]:
        if [(q.name, q.kind) for q in p.params] != [(q.name, q.kind) for q in first.params]:
            raise AotError(f"`{prefix}`: the configurations make kernels with different parameters "
                           f"({[q.name for q in first.params]} and {[q.name for q in p.params]}); one library "
                           "dispatches over kernels of one signature")
    params = ["ntsym_stream stream"] + [_param_decl(p) for p in first.params] + [f"int64_t {n}" for n in config_names]
    call = ", ".join(["stream"] + [p.name for p in first.params])
    body = ["ntsym_message_text[0] = 0;"]
    for plan_, key, guard in zip(plans, keys, guards or [None] * len(plans)):
        cond = " && ".join([f"{n} == {v}" for n, v in zip(config_names, key)] + ([f"({guard})"] if guard else []))
        body.append(f"if ({cond or '1'}) return {plan_.name}_launch({call});")
    shown = " ".join(f"{n}=%lld" for n in config_names)
    args = "".join(f", (long long){n}" for n in config_names)
    body.append(f"return ntsym_fail(NTSYM_ERROR_CONFIG, {c_string(f'no configuration was built for {shown}')}{args});")
    text = f"int {prefix}_launch({', '.join(params)}) {{\n" + "\n".join("    " + b for b in body) + "\n}"
    return text, ", ".join(params)
