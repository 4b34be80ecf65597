"""ntsym's generated sdpa kernel (pow2 head) with one difference from the Triton baseline toggled at a time."""
import math, sys, os, torch, triton, triton.language as tl
from benchmarks.lab._rounds import interleaved, ratio_table
sys.path.insert(0, os.getcwd())


@triton.jit
def k_var(q_ptr, k_ptr, v_ptr, scale, o_ptr, q_size_3: tl.constexpr, q_stride_0, q_stride_1, q_stride_2, q_stride_3, k_size_1, k_size_2, k_stride_0, k_stride_1, k_stride_2, k_stride_3, v_stride_0, v_stride_1, v_stride_2, v_stride_3, o_size_2, o_stride_0, o_stride_1, o_stride_2, o_stride_3, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, REMAINDER: tl.constexpr, FUSED: tl.constexpr, KT: tl.constexpr):
    pid = tl.program_id(0)
    pid_2 = pid % ((BLOCK_SIZE_M + o_size_2 - 1) // BLOCK_SIZE_M)
    rest_2 = pid // ((BLOCK_SIZE_M + o_size_2 - 1) // BLOCK_SIZE_M)
    pid_1 = rest_2 % k_size_1
    pid_0 = rest_2 // k_size_1
    q_t0 = tl.arange(0, BLOCK_SIZE_M)[:, None]
    q_t1 = tl.arange(0, q_size_3)[None, :]
    k_t0 = tl.arange(0, BLOCK_SIZE_N)[:, None]
    k_t1 = tl.arange(0, q_size_3)[None, :]
    v_t0 = tl.arange(0, BLOCK_SIZE_N)[:, None]
    v_t1 = tl.arange(0, q_size_3)[None, :]
    q_tile = tl.load(q_ptr + (q_stride_3 * q_t1 + pid_0 * q_stride_0 + pid_1 * q_stride_1 + q_stride_2 * (pid_2 * BLOCK_SIZE_M + q_t0)), mask=pid_2 * BLOCK_SIZE_M + q_t0 < o_size_2, other=0)
    scale_log2 = scale * 1.4426950408889634
    acc = tl.zeros((BLOCK_SIZE_M, q_size_3), dtype=tl.float32)
    m = tl.full((BLOCK_SIZE_M,), float('-inf'), dtype=tl.float32)
    l = tl.zeros((BLOCK_SIZE_M,), dtype=tl.float32)
    if KT:
        k_base_0 = k_stride_2 * tl.trans(k_t0) + k_stride_3 * tl.trans(k_t1) + pid_0 * k_stride_0 + pid_1 * k_stride_1
    else:
        k_base_0 = k_stride_2 * k_t0 + k_stride_3 * k_t1 + pid_0 * k_stride_0 + pid_1 * k_stride_1
    v_base_1 = v_stride_2 * v_t0 + v_stride_3 * v_t1 + pid_0 * v_stride_0 + pid_1 * v_stride_1
    for i in range(k_size_2 // BLOCK_SIZE_N):
        if KT:
            s = tl.dot(q_tile, tl.load(k_ptr + (k_base_0 + i * k_stride_2 * BLOCK_SIZE_N))) * scale_log2
        else:
            s = tl.dot(q_tile, tl.trans(tl.load(k_ptr + (k_base_0 + i * k_stride_2 * BLOCK_SIZE_N)))) * scale_log2
        m_new = tl.maximum(m, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m - m_new)
        if FUSED:
            acc = acc * alpha[:, None]
            acc = tl.dot(p.to(v_ptr.dtype.element_ty), tl.load(v_ptr + (v_base_1 + i * v_stride_2 * BLOCK_SIZE_N)), acc)
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v_ptr.dtype.element_ty), tl.load(v_ptr + (v_base_1 + i * v_stride_2 * BLOCK_SIZE_N)))
        l = l * alpha + tl.sum(p, 1)
        m = m_new
    if REMAINDER:
        for i in range(k_size_2 // BLOCK_SIZE_N, (BLOCK_SIZE_N + k_size_2 - 1) // BLOCK_SIZE_N):
            key = (i * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N))[None, :]
            s = tl.dot(q_tile, tl.trans(tl.load(k_ptr + (k_stride_2 * k_t0 + k_stride_3 * k_t1 + pid_0 * k_stride_0 + pid_1 * k_stride_1 + i * k_stride_2 * BLOCK_SIZE_N), mask=i * BLOCK_SIZE_N + k_t0 < k_size_2, other=0))) * scale_log2
            s = tl.where(key < k_size_2, s, float('-inf'))
            m_new = tl.maximum(m, tl.max(s, 1))
            p = tl.exp2(s - m_new[:, None])
            alpha = tl.exp2(m - m_new)
            acc = acc * alpha[:, None] + tl.dot(p.to(v_ptr.dtype.element_ty), tl.load(v_ptr + (v_base_1 + i * v_stride_2 * BLOCK_SIZE_N), mask=i * BLOCK_SIZE_N + v_t0 < k_size_2, other=0))
            l = l * alpha + tl.sum(p, 1)
            m = m_new
    o_t0 = tl.arange(0, BLOCK_SIZE_M)[:, None]
    o_t1 = tl.arange(0, q_size_3)[None, :]
    tl.store(o_ptr + (o_stride_3 * o_t1 + pid_0 * o_stride_0 + pid_1 * o_stride_1 + o_stride_2 * (pid_2 * BLOCK_SIZE_M + o_t0)), acc / l[:, None], mask=pid_2 * BLOCK_SIZE_M + o_t0 < o_size_2)


def launch(q, k, v, o, bm, bn, w, s, rem, fused, kt):
    B, H, S, D = q.shape
    grid = (B * H * triton.cdiv(S, bm),)
    k_var[grid](q, k, v, 1 / math.sqrt(D), o, D, *q.stride(), H, k.shape[2], *k.stride(), *v.stride(), S, *o.stride(),
                bm, bn, rem, fused, kt, num_warps=w, num_stages=s)


cpu = "--cpu" in sys.argv
dev = "cpu" if cpu else "cuda"
shape = (1, 2, 64, 16) if cpu else (4, 48, 1024, 64)
dt = torch.float32 if cpu else torch.float16
q, k, v = (torch.randn(shape, device=dev, dtype=dt) for _ in range(3))
ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float()).to(dt)
o = torch.empty_like(q)
fns = {}
if not cpu:
    from benchmarks import triton_baselines as tb
    fns["triton baseline"] = lambda: tb.sdpa(q, k, v)
cfgs = [(16, 16, 4, 2)] if cpu else [(64, 64, 4, 3), (128, 64, 8, 3)]
for cfg in cfgs:
    for rem, fused, kt in ((True, False, False), (False, False, False), (True, True, False), (True, False, True), (False, True, True)):
        name = f"{cfg} remainder={rem} fused_acc={fused} kT_direct={kt}"
        f = lambda cfg=cfg, rem=rem, fused=fused, kt=kt: launch(q, k, v, o, *cfg, rem, fused, kt)
        try:
            o.fill_(float("nan")); f()
            torch.testing.assert_close(o, ref, atol=1e-2, rtol=1e-2)
            fns[name] = f
            print("ok", name)
        except Exception as e:
            print(name, "failed", str(e).splitlines()[0][:200])
if not cpu:
    print(ratio_table(interleaved(fns), "triton baseline"))
