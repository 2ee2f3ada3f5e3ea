/*
 * mem_profile.c - the memory behaviour of PyTorch's CUDA caching allocator
 * and runtime on one device, as constants with their sources. These are
 * framework and driver facts, never fitted per model.
 *
 *  - round_bytes 512, small_limit 1 MiB, large_round 2 MiB: PyTorch
 *    c10/cuda/CUDACachingAllocator.cpp (kMinBlockSize, kSmallSize,
 *    kRoundLarge); confirmed by pytorch_memlab's examples in
 *    ../shared/reference-data/pytorch_memlab_readme_examples.csv.
 *  - library_bytes: cuBLAS's workspace, which PyTorch allocates through the
 *    caching allocator on the first matmul (aten/src/ATen/cuda/
 *    CublasHandlePool.cpp, default CUBLAS_WORKSPACE_CONFIG): ":4096:2:16:8"
 *    = 2 x 4 MiB + 8 x 16 KiB = 8.125 MiB before compute capability 9.0,
 *    which the allocator carves from a 20 MiB segment (kLargeBuffer: requests
 *    of 1 to 10 MiB), so the device holds 20 MiB; ":4096:8" = 32 MiB on
 *    9.0 (Hopper) and later, a segment of its own.
 *  - context_bytes / context_upper_bytes: see context_figures below.
 *  - reserve_fraction: 0, the reserve is modelled in mem_plan.c.
 */
#include "mem_plan.h"

#include <string.h>

#define MiB (1LL << 20)

/*
 * The CUDA context with PyTorch's kernels as nvidia-smi counts it, in MiB
 * (nvidia-smi and pynvml figures are MiB; so are these constants).
 *
 * Expected: HF_CONTEXT_MIB, the only published figure taken with PyTorch's
 * kernels loaded: Hugging Face Transformers docs, "Model training anatomy"
 * (torch.ones((1, 1)).to("cuda") on a V100) prints "GPU memory occupied:
 * 1343 MB." from print(f"... {info.used//1024**2} MB."), pynvml's used
 * bytes divided by 1024**2: 1343 MiB = 1408237568 bytes (dnnsat read it as
 * 1343e6 bytes until cost model 1.4.1, 62 MiB low). No figure under the
 * same conditions is published for the other generations, so every
 * generation uses it; the startup figures below show it is not low for
 * CUDA >= 11.7 (lazy loading).
 *
 * Upper bound (the safe estimate): no published nvidia-smi figure of a
 * context after a training step exists for any generation, so this is an
 * upper bound composed of published parts:
 *   the expected context (1343 MiB, which loads PyTorch's own kernels)
 *   + EAGER_KERNELS_MIB for cuDNN's and cuBLAS's kernels, which the first
 *     convolution and matmul load into the context: with eager loading
 *     (CUDA < 11.7) all kernels "took >1000MB" (ptrblck, pytorch/pytorch
 *     issue #107667; in the same thread he prints torch.cuda figures
 *     divided by 1024**2 as "MB", so read as 1000 MiB, the larger and safe
 *     reading), and cudaMemGetInfo showed 666,632,192 vs 287,047,680 bytes
 *     used for a bare tensor (pytorch/pytorch pull request #86509): lazy
 *     loading saves about 362 MiB of kernel images at startup and up to
 *     1000 MiB in all; that 1000 MiB bounds the kernel images loaded later
 *   + the local-memory (stack) reservation, which the driver sizes for
 *     every thread the device can hold: sm_count x max_threads_per_sm x
 *     the per-thread stack; 1 KiB is the default cudaLimitStackSize
 *     (CUDA Runtime API, cudaDeviceSetLimit), and kernels needing more
 *     make the driver grow it; the bound counts 2 KiB per thread.
 * A catalog entry may give its own figures (cuda_context_bytes,
 * cuda_context_upper_bytes) where they were measured.
 */
#define HF_CONTEXT_MIB 1343LL
#define EAGER_KERNELS_MIB 1000LL
#define STACK_BYTES_PER_THREAD 2048LL

static void
context_figures(const struct cm_device *dev, int64_t *expected, int64_t *upper)
{
	int64_t threads = (int64_t)dev->sm_count * (dev->max_threads_per_sm > 0 ? dev->max_threads_per_sm : 2048);

	*expected = HF_CONTEXT_MIB * MiB;
	*upper = *expected + EAGER_KERNELS_MIB * MiB + threads * STACK_BYTES_PER_THREAD;
	if (dev->context_bytes > 0)
		*expected = dev->context_bytes;
	if (dev->context_upper_bytes > 0)
		*upper = dev->context_upper_bytes;
	if (*upper < *expected)
		*upper = *expected;
}

void
mem_profile_pytorch(const struct cm_device *dev, struct mem_profile *p)
{
	memset(p, 0, sizeof *p);
	p->name = "pytorch";
	p->round_bytes = 512;
	p->small_limit = 1 << 20;
	p->large_round = 2 << 20;
	/* cuBLAS workspace as the allocator holds it (see the top) */
	p->library_bytes = dev->cc_major >= 9 ? 32 * MiB : 20 * MiB;
	context_figures(dev, &p->context_bytes, &p->context_upper_bytes);
	/* the caching allocator keeps freed blocks; see mem_plan.c */
	p->reserve_fraction = 0.0;
}
