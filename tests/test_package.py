"""The package as users see it: error types by the names they import."""

import pickle
import traceback

import pytest

import ntsym
from codegen import errors


@pytest.mark.parametrize("name", ["NtsymError", "MetaOperationError", "ArrangementError", "ApplicationError",
                                  "LaunchError", "CodegenError"])
def test_errors_are_shown_as_ntsym_names(name):
    cls = getattr(ntsym, name)
    assert cls is getattr(errors, name)  # one class: except clauses of either name catch it
    error = cls("what went wrong")
    shown = "".join(traceback.format_exception_only(type(error), error))
    assert shown.startswith(f"ntsym.{name}: what went wrong")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls and str(again) == "what went wrong"


def test_a_launch_error_from_a_kernel_is_an_ntsym_launch_error():
    from examples import add
    import torch

    with pytest.raises(ntsym.LaunchError) as caught:
        add.kernel(torch.zeros(4), torch.zeros(3), torch.zeros(4))
    assert isinstance(caught.value, ValueError)
    assert "".join(traceback.format_exception_only(caught.type, caught.value)).startswith("ntsym.LaunchError: ")
