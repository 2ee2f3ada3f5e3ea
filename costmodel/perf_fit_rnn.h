/*
 * perf_fit_rnn.h - recurrence constants of the latency model, fitted by
 * bench/latency/fit_rnn.py (generated: do not edit; regenerate with
 *   bench/latency/fit_rnn.py --write costmodel/perf_fit_rnn.h).
 *
 * Source: DeepBench's measured FP32 recurrent layers (LSTM and GRU, one
 * unidirectional layer, recurrence only: CUDNN_SKIP_INPUT), in
 * tests/reference/deepbench_rnn.csv (tests/reference/gen_deepbench_rnn.py);
 * fitted on gtx-1080-ti, p100-pcie-16gb, v100-16gb, the Titan Xp held out.
 * One timestep (N batch, H hidden, G gates) costs
 *   STEP_S + max(G*H*H*4 / (bandwidth * PF_MEM_EFF), 2*N*G*H*H / (fp32 peak * EFF))
 *
 *  PF_RNN_STEP_S      fixed GPU time of one forward step (the step's
 *                     kernels, the small GEMM's prologue)   [DeepBench]
 *  PF_RNN_EFF         fraction of the FP32 peak the step's GEMM reaches
 *                                                           [DeepBench]
 *  PF_RNN_BWD_STEP_S  the same two for a backward-data step [DeepBench]
 *  PF_RNN_BWD_EFF
 *
 * Check (median signed %, MdAPE %; backward wrt weights as one GEMM at
 * perf_model.c's FP32 GEMM efficiency 0.83):
 *   gtx-1080-ti     41 rows  fwd -18.1 22.1  bwd-data -39.1 50.0  bwd-weights  +7.0 11.2  (fit)
 *   p100-pcie-16gb  41 rows  fwd -31.2 31.9  bwd-data -44.5 50.8  bwd-weights  +7.5 12.6  (fit)
 *   v100-16gb       41 rows  fwd +34.5 34.5  bwd-data +112.5 112.5  bwd-weights  +7.1 13.1  (fit)
 *   titan-xp        41 rows  fwd -31.3 31.4  bwd-data -44.8 48.3  bwd-weights  -5.8  5.8  (held out)
 */
#ifndef DN_PERF_FIT_RNN_H
#define DN_PERF_FIT_RNN_H

#define PF_RNN_STEP_S      5.544e-05
#define PF_RNN_EFF         0.5733
#define PF_RNN_BWD_STEP_S  5.971e-05
#define PF_RNN_BWD_EFF     0.2939

#endif
