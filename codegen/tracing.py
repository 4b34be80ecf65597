"""Whether a call's tensors are fake: torch.compile, torch.export and
FakeTensor propagation call kernels with tensors that have shapes and strides
but no data.  Read by ``runtime`` (which records such a launch instead of
running it) and ``tuning`` (which keys choices without data pointers); imports
neither."""


def is_fake(tensor):
    """Whether ``tensor`` (or the tensor a functional wrapper holds) is fake."""
    from torch._subclasses.fake_tensor import is_fake as fake

    return fake(tensor)


def traced(tensors):
    """Whether the call is being traced with fake tensors."""
    import torch

    return any(type(t) is not torch.Tensor and is_fake(t) for t in tensors)
