"""Warm calls matched without their call key (``runtime.quick``): a call shape
met again is recognised by torch's tensor guards, and only where the call key
would have matched too.  Every call below is checked against torch, and
against what the call key alone decides."""

import pytest
import torch

import ntsym
from ntsym import Tensor
from ntsym_codegen import runtime


def _add_kernel():
    def arrangement(x, y, z, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), y.tile((BLOCK,)), z.tile((BLOCK,))

    def application(x, y, z):
        z = x + y  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))


@pytest.fixture
def keys(monkeypatch):
    """Counts the call keys built."""
    built = []
    real = runtime.call_key

    def counting(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(runtime, "call_key", counting)
    return built


def _warm(kernel, n=40, dtype=torch.float32):
    x, y, z = (torch.randn(n, dtype=dtype) for _ in range(3))
    for _ in range(2):  # the first call validates, the second is found by its key and learned
        kernel(x, y, z)
    return x, y, z


def test_a_warm_call_is_matched_without_its_key(keys):
    kernel = _add_kernel()
    x, y, z = _warm(kernel)
    assert len(kernel.calls.quick) == 1
    keys.clear()
    a, b, c = torch.randn(40), torch.randn(40), torch.empty(40)
    kernel(a, b, c)
    assert keys == []
    torch.testing.assert_close(c, a + b)
    # keywords or options: the key decides
    kernel(a, b, c, ntsym_options={"num_warps": 4})
    assert keys == [1]


def _cases():
    base = torch.randn(82)
    return {
        "another length": (torch.randn(41), torch.randn(41), torch.empty(41)),
        "strided": (base[:80:2], torch.randn(40), torch.empty(40)),
        "another dtype": (torch.randn(40, dtype=torch.float64), torch.randn(40, dtype=torch.float64),
                          torch.empty(40, dtype=torch.float64)),
        "a negative view": (torch._neg_view(torch.randn(40)), torch.randn(40), torch.empty(40)),
        "a misaligned pointer": (base[1:41], torch.randn(40), torch.empty(40)),
        "a parameter": (torch.nn.Parameter(torch.randn(40), requires_grad=False), torch.randn(40),
                        torch.empty(40)),
    }


@pytest.mark.parametrize("case", list(_cases()))
def test_what_the_key_tells_apart_the_quick_match_tells_apart(case, keys):
    kernel = _add_kernel()
    _warm(kernel)
    x, y, z = _cases()[case]
    expected = x + y
    keys.clear()
    if case == "a negative view":  # refused, as the key's path refuses it
        with pytest.raises(ntsym.LaunchError, match="negative bit"):
            kernel(x, y, z)
    else:
        kernel(x, y, z)
        torch.testing.assert_close(z, expected)
    assert keys[:1] == [1]  # not matched quickly: the key was built


def test_one_tensor_given_twice_is_not_matched_quickly(keys):
    kernel = _add_kernel()
    _warm(kernel)
    x, y = torch.randn(40), torch.randn(40)
    expected = x + y
    keys.clear()
    kernel(x, y, x)  # in place: x is read and written
    assert keys == [1]
    torch.testing.assert_close(x, expected)
    # an output overlapping an input without being the same view: refused as through the key
    base = torch.randn(41)
    with pytest.raises(ntsym.LaunchError):
        kernel(base[:40], torch.randn(40), base[1:])


def test_a_written_tensor_that_requires_grad_is_refused_after_quick_matching():
    kernel = _add_kernel()
    _warm(kernel)
    out = torch.empty(40, requires_grad=True)
    with pytest.raises(ntsym.LaunchError, match="grad"):
        kernel(torch.randn(40), torch.randn(40), out)


def test_a_quick_match_bumps_the_written_tensor_s_version(keys):
    kernel = _add_kernel()
    _warm(kernel)
    x, y, z = torch.randn(40), torch.randn(40), torch.empty(40)
    before = z._version
    keys.clear()
    kernel(x, y, z)
    assert keys == [] and z._version == before + 1


def test_quick_matches_follow_several_call_shapes(keys):
    kernel = _add_kernel()
    for n in (16, 40, 100):
        _warm(kernel, n)
    assert len(kernel.calls.quick) == 3
    keys.clear()
    for n in (100, 16, 40):
        x, y, z = torch.randn(n), torch.randn(n), torch.empty(n)
        kernel(x, y, z)
        torch.testing.assert_close(z, x + y)
    assert keys == []


def _scaled_kernel():
    """A scalar and a compile-time flag between the tensors."""

    def arrangement(x, alpha, negate, z, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), alpha, negate, z.tile((BLOCK,))

    def application(x, alpha, negate, z):
        if negate:
            z = -x * alpha  # noqa: F841
        else:
            z = x * alpha  # noqa: F841

    return ntsym.make(arrangement, application, (Tensor(1), Tensor(0), Tensor(0, constexpr=True), Tensor(1)))


def test_scalars_and_compile_time_values_are_matched_by_type_and_value(keys):
    kernel = _scaled_kernel()
    x, z = torch.randn(40), torch.empty(40)
    for _ in range(2):
        kernel(x, 2.0, False, z)
    assert len(kernel.calls.quick) == 1
    keys.clear()
    kernel(x, 3.0, False, z)  # another scalar value: the same call shape
    assert keys == []
    torch.testing.assert_close(z, x * 3.0)
    kernel(x, 3.0, True, z)  # another compile-time value: another kernel
    assert keys == [1]
    torch.testing.assert_close(z, -x * 3.0)
    keys.clear()
    kernel(x, 3, False, z)  # an int for the float: keyed by its type
    assert keys == [1]
    torch.testing.assert_close(z, x * 3)
    keys.clear()
    kernel(x, 2.0, 1, z)  # 1 for True is another compile-time value
    assert keys == [1]


def test_a_call_shape_with_a_tensor_as_its_scalar_does_not_hide_the_others(keys):
    """A one-element tensor given as its own scalar makes a call shape whose
    tensors are at other places; a later call with a number there is still
    matched by the shape it has, not sent to its key."""
    kernel = _scaled_kernel()
    x, z = torch.randn(40), torch.empty(40)
    for _ in range(2):
        kernel(x, 2.0, False, z)
    one, out = torch.tensor([2.5]), torch.empty(1)
    for _ in range(2):
        kernel(one, one, False, out)  # learned in front, its tensors at 0, 1 and 3
    torch.testing.assert_close(out, one * 2.5)
    assert len(kernel.calls.quick) == 2
    keys.clear()
    kernel(x, 3.0, False, z)
    assert keys == []
    torch.testing.assert_close(z, x * 3.0)


def test_block_sizes_given_by_keyword_are_matched_by_type_and_value(keys):
    """As NineToothed's calls give their constexpr block sizes: ``kernel(x, y, z, BLOCK=64)``."""
    kernel = _add_kernel()
    x, y, z = torch.randn(300), torch.randn(300), torch.empty(300)
    for _ in range(2):
        kernel(x, y, z, BLOCK=64)
    keys.clear()
    kernel(x, y, z, BLOCK=64)
    assert keys == []
    torch.testing.assert_close(z, x + y)
    for other in ({"BLOCK": 128}, {"BLOCK": 64.0}, {}, {"BLOCK": 64, "ntsym_options": {"num_warps": 4}}):
        keys.clear()
        z.zero_()
        kernel(x, y, z, **other)  # another value, type, none given, options: the key decides
        assert keys == [1], other
        torch.testing.assert_close(z, x + y)


def test_a_nested_tensor_after_quick_matching_is_refused_as_through_the_key():
    kernel = _add_kernel()
    _warm(kernel)
    nested = torch.nested.nested_tensor([torch.randn(40)])
    with pytest.raises(ntsym.LaunchError, match="nested"):
        kernel(nested, torch.randn(40), torch.empty(40))


def test_a_negative_view_is_refused_while_a_thread_excludes_the_negative_key():
    """The guards see the negative bit as a dispatch key, which a thread's
    state may exclude; the quick match reads the bit itself, as the key does."""
    kernel = _add_kernel()
    _warm(kernel)
    x = torch._neg_view(torch.arange(40, dtype=torch.float32))
    negative = torch._C.DispatchKeySet(torch._C.DispatchKey.Negative)
    with torch._C._ExcludeDispatchKeyGuard(negative), pytest.raises(ntsym.LaunchError, match="negative bit"):
        kernel(x, torch.ones(40), torch.empty(40))


@pytest.mark.parametrize("path", ["first call", "call key", "quick match"])
def test_a_tensor_whose_storage_was_freed_is_refused(path):
    kernel = _add_kernel()
    if path != "first call":
        _warm(kernel)
    if path == "call key":
        kernel.calls.quick.clear()
    x = torch.randn(40)
    x.untyped_storage().resize_(0)  # as FSDP frees a parameter's storage
    with pytest.raises(ntsym.LaunchError, match="storage"):
        kernel(x, torch.randn(40), torch.empty(40))
    short = torch.randn(40)
    short.untyped_storage().resize_(64)
    with pytest.raises(ntsym.LaunchError, match="storage, which holds 64 bytes"):
        _add_kernel()(short, torch.randn(40), torch.empty(40))
    for _ in range(3):  # empty tensors (a null data pointer) still launch
        kernel(torch.randn(0), torch.randn(0), torch.empty(0))


@pytest.mark.parametrize("path", ["call key", "quick match"])
@pytest.mark.parametrize("which", [0, 2])
def test_a_warm_call_on_a_storage_resized_smaller_is_refused(path, which):
    """A storage shrunk, not freed, keeps a data pointer: the warm call
    compares its bytes with those the call shape spans."""
    kernel = _add_kernel()
    _warm(kernel)
    if path == "call key":
        kernel.calls.quick.clear()
    args = [torch.randn(40), torch.randn(40), torch.zeros(40)]
    args[which].untyped_storage().resize_(64)
    with pytest.raises(ntsym.LaunchError, match="storage, which holds 64 bytes"):
        kernel(*args)
    x, y, z = torch.randn(80)[40:], torch.randn(40), torch.zeros(40)  # a view at an offset in its storage
    kernel(x, y, z)
    assert torch.equal(z, x + y)


@pytest.mark.parametrize("learned_in", ["inference mode", "normal mode"])
def test_an_inference_tensor_written_outside_inference_mode_is_refused(learned_in):
    """As torch refuses to update one in place, whichever mode the warm call
    shape was learned in."""
    kernel = _add_kernel()
    if learned_in == "inference mode":
        with torch.inference_mode():
            _warm(kernel)
    else:
        _warm(kernel)
    with torch.inference_mode():
        out = torch.empty(40)
        kernel(torch.randn(40), torch.randn(40), out)  # inside the mode: written as torch would
    with pytest.raises(ntsym.LaunchError, match="inference tensor"):
        kernel(torch.randn(40), torch.randn(40), out)


def test_minus_zero_is_another_compile_time_value(keys):
    """x * -0.0 is -0.0 for a positive x: the call key and the quick match
    keep -0.0 apart from 0.0, so that a warm kernel of 0.0 reaches the
    refusal of -0.0 (Triton keeps one kernel for both)."""

    def arrangement(x, c, z, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), c, z.tile((BLOCK,))

    def application(x, c, z):
        z = x * c  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(0, constexpr=True), Tensor(1)))
    x, z = torch.rand(40) + 1, torch.empty(40)
    for _ in range(2):
        kernel(x, 0.0, z)
    keys.clear()
    kernel(x, 0.0, z)
    assert keys == []  # matched quickly
    with pytest.raises(ntsym.LaunchError, match="-0.0"):
        kernel(x, -0.0, z)
    assert keys  # not matched as 0.0: its key was built


@pytest.mark.parametrize("interpreting", [True, False])
def test_minus_zero_as_a_compile_time_value_is_refused(interpreting):
    import dataclasses

    def arrangement(c, x, BLOCK=ntsym.block_size()):
        return c, x.tile((BLOCK,))

    def application(c, x):
        x = x * c  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(0, constexpr=True), Tensor(1)))
    compiled = dataclasses.replace(kernel.spec, interpreting=interpreting)
    with pytest.raises(ntsym.LaunchError, match="-0.0"):
        runtime.check_arguments(compiled, (-0.0, torch.randn(8)))
    try:  # 0.0 passes (on a CPU, on to the next check: kernels compiled natively want a GPU's tensors)
        runtime.check_arguments(compiled, (0.0, torch.randn(8)))
    except ntsym.LaunchError as error:
        assert "-0.0" not in str(error)


def test_a_refused_call_is_not_learned(keys):
    """A call shape is learned once a launch found by its key went through:
    a refused call, repeated, is refused again."""
    kernel = _add_kernel()
    kernel(torch.randn(40), torch.randn(40), torch.empty(40))  # validated
    with torch.inference_mode():
        out = torch.empty(40)
    for _ in range(3):
        with pytest.raises(ntsym.LaunchError, match="inference tensor"):
            kernel(torch.randn(40), torch.randn(40), out)
    assert kernel.calls.quick == []


def test_the_last_learned_call_shapes_are_kept(keys):
    """A decode loop's growing cache makes a new shape every step: the newest
    shapes are matched quickly, the oldest forgotten."""
    from ntsym_codegen.runtime import quick

    kernel = _add_kernel()
    for n in range(1, quick.LIMIT + 5):
        _warm(kernel, n)
    assert len(kernel.calls.quick) == quick.LIMIT
    keys.clear()
    n = quick.LIMIT + 4
    x, y, z = torch.randn(n), torch.randn(n), torch.empty(n)
    kernel(x, y, z)
    assert keys == []
    torch.testing.assert_close(z, x + y)
    kernel(torch.randn(1), torch.randn(1), torch.empty(1))  # forgotten: through the key
    assert keys == [1]


def test_a_forgotten_call_shape_is_matched_quickly_again(keys, monkeypatch):
    """A generation replays its cache lengths: a shape forgotten since is put
    back in front at the call its key finds (its guards kept, not rebuilt),
    and the calls after it match without a key; that forgets the oldest
    again, which are offered again in turn."""
    from ntsym_codegen.runtime import quick

    kernel = _add_kernel()
    for n in range(1, quick.LIMIT + 5):  # 1 to 4 forgotten
        _warm(kernel, n)
    made = []
    real = quick.Quick
    monkeypatch.setattr(quick, "Quick", lambda *a, **k: made.append(1) or real(*a, **k))
    for n in (1, 2, 3, 5):  # 5 was forgotten when 1 came back
        keys.clear()
        for _ in range(3):
            x, y, z = torch.randn(n), torch.randn(n), torch.empty(n)
            kernel(x, y, z)
            torch.testing.assert_close(z, x + y)
        assert keys == [1], n
    assert made == [] and len(kernel.calls.quick) == quick.LIMIT


def test_a_kernel_with_an_untouched_tensor_is_matched_quickly(keys):
    def arrangement(x, unused, z, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), unused.tile((BLOCK,)), z.tile((BLOCK,))

    def application(x, unused, z):
        z = x * 2  # noqa: F841

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1), Tensor(1)))
    for _ in range(3):
        x, z = torch.randn(40), torch.empty(40)
        kernel(x, torch.empty(40), z)
        torch.testing.assert_close(z, x * 2)
    keys.clear()
    x, z = torch.randn(40), torch.empty(40)
    kernel(x, torch.empty(40), z)
    assert keys == []
    torch.testing.assert_close(z, x * 2)


def test_in_place_calls_are_matched_quickly_and_checked(keys):
    """One tensor for an input and the output, where in-place use is proved
    safe: matched by the same object at the same places, launched without
    the full aliasing check; a call of other views still gets it."""
    kernel = _add_kernel()
    x = torch.randn(40)
    y = torch.randn(40)
    for _ in range(2):
        kernel(x, y, x)
    assert len(kernel.calls.quick) == 1
    keys.clear()
    x, y = torch.randn(40), torch.randn(40)
    expected, before = x + y, x._version
    kernel(x, y, x)
    assert keys == []
    torch.testing.assert_close(x, expected)
    assert x._version == before + 1
    # the same shapes, output a separate tensor: not this entry's repeats
    z = torch.empty(40)
    kernel(x, y, z)
    assert keys == [1]
    torch.testing.assert_close(z, x + y)
    # an output overlapping an input by one element: refused, whichever path
    base = torch.randn(41)
    with pytest.raises(ntsym.LaunchError, match="share memory"):
        kernel(base[:40], y, base[1:])


def test_in_place_where_a_program_reads_after_writing_stays_refused():
    def arrangement(x, y, BLOCK=ntsym.block_size()):
        return x.tile((BLOCK,)), y.tile((BLOCK,))

    def application(x, y):
        y = x + 1  # noqa: F841
        y = y + x  # noqa: F841  (reads x after writing y)

    kernel = ntsym.make(arrangement, application, (Tensor(1), Tensor(1)))
    for _ in range(3):
        kernel(torch.randn(40), torch.empty(40))
    x = torch.randn(40)
    for _ in range(3):
        with pytest.raises(ntsym.LaunchError, match="share memory"):
            kernel(x, x)
