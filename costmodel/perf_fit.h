/*
 * perf_fit.h - latency constants fitted by bench/latency/fit_latency.py
 * (generated: do not edit; regenerate with
 *   bench/latency/fit_latency.py --write costmodel/perf_fit.h).
 *
 * Sources: measured inference latency of all 15,625 NAS-Bench-201 cells,
 * ../shared/reference-data/help_nb201_latency_pascal.csv (HELP, MIT), fitted
 * on the gtx-1080-ti columns (batch 1, 32, 256; 150 sampled cells, seed 201),
 * minimising the squared log error of perf_model.c's queue model; the
 * other GPU is held out. Eager PyTorch, FP32, no tensor cores. With them,
 * at weight 0.01 a row, 336 measured FP32 convolution forward times of
 * DeepBench (../shared/reference-data/deepbench/convolution.csv: GTX 1080 Ti,
 * P100, V100, T4; at least 16 input channels), which pin how efficiency
 * grows with the channels where NAS-Bench-201 (16-64) has no data.
 *
 *  PF_HOST_KERNEL_S  host time to issue one kernel (Python module call,
 *                    dispatcher, cudaLaunchKernel)             [HELP]
 *  PF_HOST_LIB_S     extra host time of a cuDNN/cuBLAS call (descriptors,
 *                    algorithm lookup)                         [HELP]
 *  PF_MEM_EFF        achieved fraction of the datasheet memory bandwidth
 *                                                              [HELP]
 *  PF_CONV_EFF_1X1   fraction of the FP32 peak a 1x1 convolution's MACs
 *                    reach over whole 128 x 64 tiles    [HELP, DeepBench]
 *  PF_CONV_EFF_KXK   the same for larger kernels (Winograd and FFT, counted
 *                    against the direct MACs, can pass 1) [HELP, DeepBench]
 *  PF_CONV_TILE_FIXED  fixed cost of one tile output, in MACs of the 1x1
 *                    rate (operand prologue, the store)  [HELP, DeepBench]
 *  PF_CONV_BWD_SLOW  backward (input + weight gradients) over twice the
 *                    forward: DeepBench's median ratio          [DeepBench]
 *
 * Check (Kendall tau, MdAPE %, median signed error %, FLOPs' tau):
 *   gtx-1080-ti b1   tau 0.934  MdAPE  3.0  signed  -2.9  FLOPs tau 0.636  (fit)
 *   gtx-1080-ti b32  tau 0.908  MdAPE  3.8  signed  +3.2  FLOPs tau 0.653  (fit)
 *   gtx-1080-ti b256 tau 0.965  MdAPE  2.8  signed  +0.6  FLOPs tau 0.521  (fit)
 *   titan-xp    b1   tau 0.902  MdAPE  2.7  signed  -0.8  FLOPs tau 0.635  (held out)
 *   titan-xp    b32  tau 0.909  MdAPE  7.7  signed  +7.6  FLOPs tau 0.649  (held out)
 *   titan-xp    b256 tau 0.977  MdAPE  1.6  signed  -0.8  FLOPs tau 0.512  (held out)
 * DeepBench FP32 convolutions (median signed %, MdAPE %; forward fitted,
 * backward through PF_CONV_BWD_SLOW):
 *   gtx-1080-ti      84 rows  forward +12.9  25.0   backward  +7.4  38.4
 *   p100-pcie-16gb   84 rows  forward  +4.3  33.8   backward  +6.7  32.8
 *   t4               84 rows  forward -15.4  21.4   backward -18.1  29.0
 *   v100-16gb        84 rows  forward  -1.3  29.8   backward +20.2  30.5
 */
#ifndef DN_PERF_FIT_H
#define DN_PERF_FIT_H

#define PF_HOST_KERNEL_S   3.349e-05
#define PF_HOST_LIB_S      2.836e-05
#define PF_MEM_EFF         0.6843
#define PF_CONV_EFF_1X1    0.5938
#define PF_CONV_EFF_KXK    1.388
#define PF_CONV_TILE_FIXED 30.98
#define PF_CONV_BWD_SLOW   1.419

#endif
