import torch, ntsym
from ntsym import Tensor, block_size
B = block_size(lower_bound=1)
def arrangement(input, output, B=B):
    n = input.shape[1]
    return (input.flatten().tile((B,), strides=(B * (n + 1),), dilation=(n + 1,)), output.tile((B,)))
def application(input, output):
    output = input
k = ntsym.make(arrangement, application, (Tensor(2), Tensor(1)))
print([c.relation for c in k.ir.checks])
for shape in [(6, 4), (8, 3), (5,4)]:
    x = torch.randn(shape)
    for Bv in (1, 2, 4):
        out = torch.full((min(shape),), float("nan"))
        try:
            k(x, out, B=Bv)
            print(shape, Bv, torch.equal(out, torch.diag(x)), out, torch.diag(x))
        except Exception as e:
            print(shape, Bv, type(e).__name__, str(e)[:400])
