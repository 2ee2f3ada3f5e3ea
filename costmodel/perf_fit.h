/*
 * perf_fit.h - latency constants fitted by bench/latency/fit_latency.py
 * (generated: do not edit; regenerate with
 *   bench/latency/fit_latency.py --write costmodel/perf_fit.h).
 *
 * Source: measured inference latency of all 15,625 NAS-Bench-201 cells,
 * ../shared/reference-data/help_nb201_latency_pascal.csv (HELP, MIT), fitted
 * on the gtx-1080-ti columns (batch 1, 32, 256; 150 sampled cells, seed 201),
 * minimising the squared log error of perf_model.c's queue model; the
 * other GPU is held out. Eager PyTorch, FP32, no tensor cores.
 *
 *  PF_HOST_KERNEL_S  host time to issue one kernel (Python module call,
 *                    dispatcher, cudaLaunchKernel)
 *  PF_HOST_LIB_S     extra host time of a cuDNN/cuBLAS call (descriptors,
 *                    algorithm lookup)
 *  PF_MEM_EFF        achieved fraction of the datasheet memory bandwidth
 *  PF_CONV_EFF_1X1   fraction of the FP32 peak a 1x1 convolution reaches
 *  PF_CONV_EFF_KXK   the same for larger kernels
 *
 * Check (Kendall tau, MdAPE %, median signed error %, FLOPs' tau):
 *   gtx-1080-ti b1   tau 0.919  MdAPE  3.0  signed  -2.9  FLOPs tau 0.636  (fit)
 *   gtx-1080-ti b32  tau 0.894  MdAPE  3.8  signed  +3.2  FLOPs tau 0.653  (fit)
 *   gtx-1080-ti b256 tau 0.963  MdAPE  2.3  signed  +0.8  FLOPs tau 0.521  (fit)
 *   titan-xp    b1   tau 0.888  MdAPE  2.7  signed  -0.8  FLOPs tau 0.635  (held out)
 *   titan-xp    b32  tau 0.894  MdAPE  7.7  signed  +7.6  FLOPs tau 0.649  (held out)
 *   titan-xp    b256 tau 0.955  MdAPE  1.6  signed  -1.0  FLOPs tau 0.512  (held out)
 */
#ifndef DN_PERF_FIT_H
#define DN_PERF_FIT_H

#define PF_HOST_KERNEL_S   3.349e-05
#define PF_HOST_LIB_S      2.836e-05
#define PF_MEM_EFF         0.6951
#define PF_CONV_EFF_1X1    0.09249
#define PF_CONV_EFF_KXK    0.4553

#endif
