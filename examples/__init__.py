"""ntsym example kernels: the paper's ten compute kernels, arrange-and-apply style."""
