"""``eval``, ``subs``, ``simulate_arrangement`` and the other tools NineToothed
users call.  ``eval`` must give NineToothed's array exactly: the expected
arrays in golden/ninetoothed_eval.json were computed by NineToothed 0.26 from
the same cases (refresh with NTSYM_UPDATE_GOLDEN=1 where ``ninetoothed`` is
installed); where it is installed, each case is also compared live."""

import importlib
import json
import os
import pathlib

import numpy as np
import pytest
import torch

import ntsym
from ntsym import Tensor

GOLDEN = pathlib.Path(__file__).parent / "golden" / "ninetoothed_eval.json"


def _case_tile(nt):
    x = nt.Tensor(2)
    return x.tile((2, 4)), {x: {"shape": (5, 6)}}


def _case_block_symbol(nt):
    x = nt.Tensor(1)
    block = nt.Symbol("BLOCK", constexpr=True)
    return x.tile((block,)), {x: {"shape": (10,)}, block: 4}


def _case_rows(nt):
    x = nt.Tensor(2)
    arranged = x.tile((1, -1))
    arranged.dtype = arranged.dtype.squeeze(0)
    return arranged, {x: {"shape": (3, 5)}}


def _case_matmul_input(nt):
    a, c = nt.Tensor(2), nt.Tensor(2)
    c_tiled = c.tile((2, 2))
    a_tiled = a.tile((2, 3)).tile((1, -1)).expand((-1, c_tiled.shape[1]))
    a_tiled.dtype = a_tiled.dtype.squeeze(0)
    return a_tiled, {a: {"shape": (3, 7)}, c: {"shape": (3, 4)}}


def _case_window(nt):
    x = nt.Tensor(1)
    return x.tile((3,), strides=(2,), dilation=(2,)), {x: {"shape": (11,)}}


def _case_flatten(nt):
    x = nt.Tensor(3)
    return x.flatten(start_dim=1).tile((2, 4)), {x: {"shape": (2, 3, 2)}}


def _case_permute(nt):
    x = nt.Tensor(2)
    return x.permute((1, 0)).tile((2, 3)), {x: {"shape": (4, 3)}}


def _case_pad(nt):
    x = nt.Tensor(2)
    return x.pad(((1, 1), (0, 2))).tile((2, 2)), {x: {"shape": (2, 3)}}


def _case_unsqueeze_expand(nt):
    x = nt.Tensor(1)
    return x.unsqueeze(0).expand((3, -1)).tile((2, 2)), {x: {"shape": (3,)}}


def _case_conv_like(nt):
    x = nt.Tensor(2)
    arranged = x.tile((2, 2), strides=(1, 1))
    arranged = arranged.ravel().flatten(end_dim=2).flatten(start_dim=1)
    return arranged, {x: {"shape": (3, 4)}}


CASES = {name[len("_case_"):]: fn for name, fn in globals().items() if name.startswith("_case_")}


def _ninetoothed():
    os.environ.setdefault("TRITON_INTERPRET", "1")
    try:
        return importlib.import_module("ninetoothed")
    except Exception:
        return None


def _golden():
    if os.environ.get("NTSYM_UPDATE_GOLDEN"):
        nt = _ninetoothed()
        if nt is not None:
            data = {}
            for name, case in CASES.items():
                arranged, subs = case(nt)
                data[name] = nt.eval(arranged, subs).tolist()
            GOLDEN.write_text(json.dumps(data) + "\n")
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_eval_equals_ninetoothed(name):
    arranged, subs = CASES[name](ntsym)
    result = ntsym.eval(arranged, subs)
    expected = np.array(_golden()[name])
    assert result.dtype == np.intp
    assert result.shape == expected.shape
    assert np.array_equal(result, expected)
    assert np.array_equal(arranged.eval(subs), result)


@pytest.mark.parametrize("name", sorted(CASES))
def test_eval_equals_ninetoothed_live(name):
    nt = _ninetoothed()
    if nt is None:
        pytest.skip("ninetoothed is not installed")
    arranged, subs = CASES[name](nt)
    mine, my_subs = CASES[name](ntsym)
    assert np.array_equal(ntsym.eval(mine, my_subs), nt.eval(arranged, subs))


def test_eval_of_a_concrete_tensor_and_of_a_scalar():
    x = Tensor(shape=(5, 6))
    table = x.tile((2, 4)).eval()
    assert table.shape == (3, 2, 2, 4)
    assert table[2, 1].tolist() == [[28, 29, -1, -1], [-1, -1, -1, -1]]
    assert ntsym.eval(Tensor(0)) == 0


def test_eval_with_strides():
    """Strides given in ``subs`` are used (NineToothed 0.26 takes contiguous
    ones whatever is given; later versions read them)."""
    x = Tensor(2)
    table = x.tile((2, 2)).eval({x: {"shape": (3, 4), "strides": (1, 3)}})
    assert table[0, 1].tolist() == [[6, 9], [7, 10]]
    assert table[1, 0].tolist() == [[2, 5], [-1, -1]]
    assert np.array_equal(x.tile((2, 2)).eval({x: torch.empty(3, 4)}), x.tile((2, 2)).eval({x: {"shape": (3, 4)}}))


def test_subs_fills_in_sizes_and_block_sizes():
    x = Tensor(1)
    block = ntsym.Symbol("BLOCK", constexpr=True)
    arranged = x.tile((block,))
    concrete = ntsym.subs(arranged, {x: {"shape": (10,)}, block: 4})
    assert concrete.shape == (3,) and concrete.dtype.shape == (4,)
    assert arranged.subs({"BLOCK": 4}).dtype.shape == (4,)  # names work too
    assert np.array_equal(concrete.eval(), ntsym.eval(arranged, {x: {"shape": (10,)}, block: 4}))


def test_simulate_arrangement():
    def arrangement(input, other, output):
        return input.tile((1, 2)), other.tile((1, 2)), output.tile((1, 2))

    tensors = (torch.empty(2, 3), torch.empty(2, 3), torch.empty(2, 3))
    sources, targets = ntsym.debugging.simulate_arrangement(arrangement, tensors, device="cpu")
    assert [s.tolist() for s in sources] == [[[0, 1, 2], [3, 4, 5]]] * 3
    assert targets[0].shape == (4, 1, 2)
    assert targets[0].tolist() == [[[0, 1]], [[2, -1]], [[3, 4]], [[5, -1]]]


def test_subs_of_untiled_and_permuted_tensors():
    x = Tensor(2)
    assert x.subs({x: {"shape": (2, 3)}}).eval().tolist() == [[0, 1, 2], [3, 4, 5]]
    permuted = x.permute((1, 0)).subs({x: {"shape": (2, 3)}})
    assert permuted.shape == (3, 2)
    assert permuted.eval().tolist() == [[0, 3], [1, 4], [2, 5]]
    # Strides given in subs are taken (a transposed source).
    assert x.subs({x: {"shape": (2, 3), "strides": (1, 2)}}).eval().tolist() == [[0, 2, 4], [1, 3, 5]]


def test_simulate_arrangement_of_ntsym_tensors_of_concrete_shape():
    def arrangement(input, output):
        return input.tile((1, 2)), output.tile((1, 2))

    tensors = (Tensor(shape=(2, 3)), Tensor(shape=(2, 3)))
    sources, targets = ntsym.debugging.simulate_arrangement(arrangement, tensors, device="cpu")
    expected_sources, expected_targets = ntsym.debugging.simulate_arrangement(
        arrangement, (torch.empty(2, 3), torch.empty(2, 3)), device="cpu")
    assert [s.tolist() for s in sources] == [s.tolist() for s in expected_sources] == [[[0, 1, 2], [3, 4, 5]]] * 2
    assert targets[1].tolist() == expected_targets[1].tolist() == [[[0, 1]], [[2, -1]], [[3, 4]], [[5, -1]]]
    with pytest.raises(ntsym.MetaOperationError, match="is not concrete"):
        ntsym.debugging.simulate_arrangement(arrangement, (Tensor(2), Tensor(2)), device="cpu")


def test_innermost_names_and_version():
    x = Tensor(2)
    block = ntsym.block_size()
    arranged = x.tile((block, 4)).tile((1, -1))
    assert arranged.innermost().shape == (block, 4)
    assert {s.name for s in arranged.names()} >= {block.name, x.shape[0].name, x.stride(1).name}
    assert isinstance(ntsym.__version__, str) and ntsym.__version__[0].isdigit()


def test_make_writes_the_module_to_output_dir(tmp_path):
    def application(x, y):
        y = x  # noqa: F841

    kernel = ntsym.make(lambda x, y: (x.tile((16,)), y.tile((16,))), application, (Tensor(1), Tensor(1)),
                        kernel_name="copy16", output_dir=tmp_path)
    written = tmp_path / "copy16.py"
    assert written.read_text() == kernel.source
    x = torch.randn(20)
    y = torch.empty(20)
    kernel(x, y)
    assert torch.equal(x, y)
