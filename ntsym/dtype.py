"""Element types under NineToothed's names (``ntsym.float16``, ``ntsym.int32``,
...), for ``Tensor(..., dtype=...)``.

They are Triton's dtypes, the ones ``ntsym.language`` exports, so the same
objects are valid inside an application (``x.to(ntsym.float32)``).  As in
NineToothed, a declared dtype documents the tensor: the kernel is compiled
for the dtypes of the tensors passed."""

import triton.language as _tl

int8 = _tl.int8
int16 = _tl.int16
int32 = _tl.int32
int64 = _tl.int64

uint8 = _tl.uint8
uint16 = _tl.uint16
uint32 = _tl.uint32
uint64 = _tl.uint64

float16 = _tl.float16
bfloat16 = _tl.bfloat16
float32 = _tl.float32
float64 = _tl.float64
