/*
 * mem_profile.c - the memory behaviour of PyTorch's CUDA caching allocator
 * and runtime, as constants with their sources. These are framework facts,
 * never fitted per model.
 *
 *  - round_bytes 512, small_limit 1 MiB, large_round 2 MiB: PyTorch
 *    c10/cuda/CUDACachingAllocator.cpp (kMinBlockSize, kSmallSize,
 *    kRoundLarge); confirmed by pytorch_memlab's examples in
 *    ../shared/reference-data/pytorch_memlab_readme_examples.csv.
 *  - context_bytes: see mem_profile_pytorch below.
 *  - reserve_fraction: see mem_profile_pytorch below.
 */
#include "mem_plan.h"

const struct mem_profile *
mem_profile_pytorch(void)
{
	static const struct mem_profile p = {
		.name = "pytorch",
		.round_bytes = 512,
		.small_limit = 1 << 20,
		.large_round = 2 << 20,
		/* CUDA context with PyTorch's kernels loaded: 1343 MB, measured
		 * by Hugging Face (Transformers docs, "Model training anatomy":
		 * torch.ones((1, 1)).to("cuda") on a V100). DNNMem measured
		 * 0.37 GB for TensorFlow's context alone. */
		.context_bytes = 1343LL * 1000 * 1000,
		/* the caching allocator keeps freed blocks; see mem_plan.c */
		.reserve_fraction = 0.0,
	};

	return &p;
}
