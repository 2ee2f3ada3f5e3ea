/*
 * perf_fit_rnn.h - recurrence constants of the latency model, fitted by
 * bench/latency/fit_rnn.py (generated: do not edit; regenerate with
 *   bench/latency/fit_rnn.py --write costmodel/perf_fit_rnn.h).
 *
 * Source: DeepBench's measured FP32 recurrent layers (LSTM and GRU, one
 * unidirectional layer, recurrence only: CUDNN_SKIP_INPUT), in
 * tests/reference/deepbench_rnn.csv (tests/reference/gen_deepbench_rnn.py).
 * Per device class: _SM6 before Volta (compute capability below 7; fitted
 * on the GTX 1080 Ti and P100, the Titan Xp held out), _SM7 from Volta on
 * (fitted on the V100, the only one measured).
 * One timestep (N batch, H hidden, G gates) costs
 *   STEP_S + max(G*H*H*4 / (bandwidth * PF_MEM_EFF), 2*N*G*H*H / (fp32 peak * EFF))
 *
 *  PF_RNN_STEP_S_*      fixed GPU time of one forward step (the step's
 *                       kernels, the small GEMM's prologue)   [DeepBench]
 *  PF_RNN_EFF_*         fraction of the FP32 peak the step's GEMM reaches
 *                                                             [DeepBench]
 *  PF_RNN_BWD_STEP_S_*  the same two for a backward-data step [DeepBench]
 *  PF_RNN_BWD_EFF_*
 *
 * Check (median signed %, MdAPE %; backward wrt weights as one GEMM at
 * perf_model.c's FP32 GEMM efficiency 0.83):
 *   gtx-1080-ti     41 rows  fwd  -1.1 14.8  bwd-data -10.7 37.3  bwd-weights  +7.0 11.2  (fit)
 *   p100-pcie-16gb  41 rows  fwd  -4.5 20.2  bwd-data -18.1 35.8  bwd-weights  +7.5 12.6  (fit)
 *   titan-xp        41 rows  fwd -14.7 19.3  bwd-data -19.1 41.5  bwd-weights  -5.8  5.8  (held out)
 *   v100-16gb       41 rows  fwd  +7.5 13.0  bwd-data  +6.4 12.0  bwd-weights  +7.1 13.1  (fit)
 */
#ifndef DN_PERF_FIT_RNN_H
#define DN_PERF_FIT_RNN_H

#define PF_RNN_STEP_S_SM6     6.356e-05
#define PF_RNN_EFF_SM6        0.3894
#define PF_RNN_BWD_STEP_S_SM6 8.387e-05
#define PF_RNN_BWD_EFF_SM6    0.1981
#define PF_RNN_STEP_S_SM7     3.565e-05
#define PF_RNN_EFF_SM7        0.8116
#define PF_RNN_BWD_STEP_S_SM7 3.593e-05
#define PF_RNN_BWD_EFF_SM7    0.8844

#endif
