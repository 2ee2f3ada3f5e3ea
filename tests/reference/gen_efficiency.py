#!/usr/bin/python3
"""Derive achieved-fraction-of-peak ("efficiency") factors from DeepBench.

How to rerun (from the repository root, standard-library Python only):

    /usr/bin/python3 tests/reference/gen_efficiency.py > tests/reference/deepbench_efficiency.json

Options: the first positional argument is the DeepBench directory (default
../shared/reference-data/deepbench relative to the repository root, i.e. the
folder holding convolution.csv, dense_matrix_multiplication.csv and specs.csv);
--devices PATH picks the device catalog (default schemas/devices.json);
--out PATH writes the JSON there instead of stdout. The device mapping and a
short summary go to stderr. The output is deterministic for the same inputs.

What it computes
----------------
For every DeepBench row (one kernel call on one GPU in one precision) the
efficiency is   measured TFLOPS column / catalog peak for that precision.
DeepBench's TFLOPS count 2 FLOPs per multiply-accumulate, as does the catalog.
  GEMM:        TERAFLOPS                      (op "gemm")
  convolution: fwd_tflops, bwd_inputs_tflops, bwd_params_tflops
               (ops "conv_fwd", "conv_bwd_inputs", "conv_bwd_params";
                "conv_bwd" pools the two backward passes)
Work (for the large/small split) is computed from the shapes:
  GEMM 2*M*N*K;  conv 2*N*K*C*R*S*P*Q with P = (H+2*pad_h-R)//stride_h + 1,
  Q = (W+2*pad_w-S)//stride_w + 1 (the same work for all three passes).
"large" = work >= 1e9 FLOP (1 GFLOP) per call, "small" = below.

Precision of each `sheet` value (decided from the DeepBench README):
  "Results FP32", "Results - FP32", "FP32"  -> fp32, peak = peak_flops.fp32
  "Results - FP16 ip, Mixed math" (V100, T4 training)
        -> fp16 inputs on tensor cores, FP32 accumulate; peak = peak_flops.fp16
  "Results - Psuedo FP16" (P100 training)
        -> fp16 inputs/outputs but FP32 math (README: "inputs and outputs are
           16 bit but still use 32 bit compute"); peak = peak_flops.fp32
  "Results - Mixed Precision" (inference_* files: T4, 1080 Ti, Titan X Pascal,
        Titan Xp) -> 8-bit multiply, 32-bit accumulate (README "Server
        Deployment": GEMM and conv run int8 on NVIDIA); peak = peak_flops.int8
An unknown sheet value stops the script: decide its precision first.

Recommended factors (the "recommended" block), exact rule:
  for op class gemm, conv_fwd and conv_bwd (= conv_bwd_inputs and
  conv_bwd_params pooled): take every row with work >= 1 GFLOP from the
  tensor-core training sheets -- precision "fp16_tensor", i.e. sheet
  "Results - FP16 ip, Mixed math", on the devices whose catalog entry has
  compute capability >= 7.0 (V100 and T4 in this data) -- compute its
  efficiency against the catalog fp16 tensor peak, pool the rows of all
  those devices, and take the median (statistics.median), rounded to 3
  decimals. int8 inference rows and fp32 rows are reported but not used.
  memory_bound_efficiency = 0.8 is an ASSUMPTION (DeepBench has no
  elementwise/streaming kernels); the GEMV-like rows below are reported only
  as a cross-check, not used for it.
"""

import argparse
import csv
import json
import os
import statistics
import sys

LARGE_FLOP = 1e9

# DeepBench device_file suffix (after "_DeepBench_NV_") -> catalog id, and why.
DEVICE_MAP = {
    "V100": ("v100-16gb",
             "specs.csv: 'NVIDIA V100' on a Xeon E5-2698 v4 host (DGX-1 class), so SXM2; "
             "its best SGEMM (14.8 TFLOPS) exceeds the PCIe card's 14.0 peak. 16 vs 32 GB "
             "is unknown; the peaks used here are identical for both."),
    "P100": ("p100-pcie-16gb",
             "specs.csv: 'NVIDIA Tesla P100' in an ASUS X99-E WS workstation board (PCIe only); "
             "best SGEMM 9.12 TFLOPS fits the PCIe peak of 9.3. 12 vs 16 GB unknown; same peaks."),
    "T4": ("t4", "specs.csv: 'NVIDIA T4'."),
    "1080Ti": ("gtx-1080-ti", "specs.csv: 'NVIDIA GTX 1080 Ti' / 'Nvidia 1080Ti'."),
    "TitanXp": ("titan-xp", "specs.csv: 'NVIDIA GTX TitanXp' / 'Nvidia TitanXp'."),
    "TitanX_Pascal": ("titan-x-pascal", "specs.csv: 'Nvidia TitanX Pascal'."),
    "M40": ("m40-12gb", "specs.csv: 'Nvidia Tesla M40' (12 vs 24 GB unknown; same peak)."),
    "TitanX": ("titan-x-maxwell",
               "specs.csv: 'Nvidia TitanX' with CUDA 7.5 / cuDNN 5 (2015), i.e. the Maxwell GTX TITAN X."),
}

SHEET_PRECISION = {
    "Results FP32": "fp32",
    "Results - FP32": "fp32",
    "FP32": "fp32",
    "Results - FP16 ip, Mixed math": "fp16_tensor",
    "Results - Psuedo FP16": "fp16_storage_fp32_math",
    "Results - Mixed Precision": "int8",
}

# precision -> (catalog peak key, bytes per input element, bytes per output element)
PRECISION_PEAK = {
    "fp32": ("fp32", 4, 4),
    "fp16_tensor": ("fp16", 2, 2),
    "fp16_storage_fp32_math": ("fp32", 2, 2),
    "int8": ("int8", 1, 4),
}

PRECISION_MEANING = {
    "fp32": "FP32 inputs and math on CUDA cores; divided by peak_flops.fp32",
    "fp16_tensor": "FP16 inputs, tensor-core math with FP32 accumulate (sheet 'Results - FP16 ip, Mixed math'); divided by peak_flops.fp16",
    "fp16_storage_fp32_math": "DeepBench 'Psuedo FP16' on P100: FP16 inputs/outputs, FP32 math; divided by peak_flops.fp32",
    "int8": "DeepBench inference 'Mixed Precision': int8 multiply, int32 accumulate (DP4A on Pascal; on T4 tensor cores for conv, apparently DP4A for GEMM, see caveats); divided by peak_flops.int8",
}


def repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fnum(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if v == v and v > 0 else None


def rnd(x, nd=4):
    return None if x is None else round(x, nd)


def summarize(effs):
    """count, median, p25, p75, min, max of a list of efficiencies."""
    n = len(effs)
    if n == 0:
        return {"count": 0}
    s = sorted(effs)
    if n == 1:
        q1 = q3 = s[0]
    else:
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
    return {"count": n, "median": rnd(statistics.median(s)), "p25": rnd(q1),
            "p75": rnd(q3), "min": rnd(s[0]), "max": rnd(s[-1])}


def summarize_split(rows):
    """rows: list of (eff, work). Overall + large/small medians."""
    out = summarize([e for e, _ in rows])
    large = [e for e, w in rows if w >= LARGE_FLOP]
    small = [e for e, w in rows if w < LARGE_FLOP]
    out["large"] = {"count": len(large), "median": rnd(statistics.median(large)) if large else None}
    out["small"] = {"count": len(small), "median": rnd(statistics.median(small)) if small else None}
    out["count_above_1"] = sum(1 for e, _ in rows if e > 1.0)
    return out


def load_catalog(path):
    with open(path) as f:
        doc = json.load(f)
    by_id = {}
    for d in doc["devices"]:
        for ident in [d["name"]] + d.get("aliases", []):
            by_id[ident] = d
    return by_id


def map_device(device_file, catalog):
    suffix = device_file.split("_NV_", 1)[-1]
    if suffix not in DEVICE_MAP:
        return None, None
    ident, why = DEVICE_MAP[suffix]
    return catalog.get(ident), why


def main():
    root = repo_root()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("deepbench_dir", nargs="?",
                    default=os.path.join(root, "..", "shared", "reference-data", "deepbench"))
    ap.add_argument("--devices", default=os.path.join(root, "schemas", "devices.json"))
    ap.add_argument("--out", default=None, help="write JSON here instead of stdout")
    args = ap.parse_args()
    ddir = os.path.normpath(args.deepbench_dir)
    catalog = load_catalog(args.devices)

    def read(name):
        with open(os.path.join(ddir, name), newline="") as f:
            return list(csv.DictReader(f))

    gemm_rows = read("dense_matrix_multiplication.csv")
    conv_rows = read("convolution.csv")
    specs = {r["device_file"]: r for r in read("specs.csv")}

    # ---- device mapping -------------------------------------------------
    device_files = sorted({r["device_file"] for r in gemm_rows + conv_rows} | set(specs))
    mapping = {}
    unmapped = []
    for df in device_files:
        dev, why = map_device(df, catalog)
        gpu_model = specs.get(df, {}).get("GPU Model", "")
        if dev is None:
            unmapped.append(df)
            print("unmapped: %-45s (%s)" % (df, gpu_model), file=sys.stderr)
            continue
        mapping[df] = {"device": dev["name"], "gpu_model_in_specs": gpu_model,
                       "cuda": specs.get(df, {}).get("CUDA Version", ""),
                       "cudnn": specs.get(df, {}).get("Cudnn Version", ""),
                       "why": why}
        print("mapped:   %-45s -> %-16s (%s)" % (df, dev["name"], gpu_model), file=sys.stderr)

    sheets = sorted({r["sheet"] for r in gemm_rows + conv_rows})
    for s in sheets:
        if s not in SHEET_PRECISION:
            sys.exit("unknown DeepBench sheet value %r: decide its precision in SHEET_PRECISION" % s)

    # ---- per-row efficiencies ---------------------------------------------
    # groups[(device, precision, op)] = list of (eff, work)
    groups = {}
    sources = {}  # (device, precision) -> set of device_file/sheet
    mismatch_rows = 0
    gemv_like = {}  # (device, precision) -> list of bandwidth fractions
    skipped_non_numeric = 0

    def add(dev, prec, op, eff, work, df, sheet):
        groups.setdefault((dev, prec, op), []).append((eff, work))
        sources.setdefault((dev, prec), set()).add("%s / %s" % (df, sheet))

    for r in gemm_rows:
        df = r["device_file"]
        if df not in mapping:
            continue
        dev = catalog[mapping[df]["device"]]
        prec = SHEET_PRECISION[r["sheet"]]
        key, bin_, bout = PRECISION_PEAK[prec]
        peak = dev["peak_flops"].get(key, 0)
        if not peak:
            sys.exit("catalog device %s has no %s peak" % (dev["name"], key))
        tf = fnum(r["TERAFLOPS"])
        if tf is None:
            skipped_non_numeric += 1
            continue
        M, N, K = int(r["M"]), int(r["N"]), int(r["K"])
        work = 2.0 * M * N * K
        add(dev["name"], prec, "gemm", tf * 1e12 / peak, work, df, r["sheet"])
        # GEMV-like cross-check for memory-bound behaviour: ideal traffic (each
        # operand read/written once); keep rows far below the machine balance and
        # whose operands are >= 4x the L2 so caching cannot inflate the figure.
        ms = fnum(r["Time (msec)"])
        traffic = bin_ * (M * K + K * N) + bout * M * N
        bw = dev["memory_bandwidth_bytes_per_s"]
        if ms and traffic >= 4 * dev.get("l2_cache_bytes", 0) and work / traffic < 0.25 * peak / bw:
            gemv_like.setdefault((dev["name"], prec), []).append((traffic / (ms * 1e-3)) / bw)

    conv_cols = [("fwd_tflops", "fwd_ms", "conv_fwd"),
                 ("bwd_inputs_tflops", "bwd_inputs_ms", "conv_bwd_inputs"),
                 ("bwd_params_tflops", "bwd_params_ms", "conv_bwd_params")]
    for r in conv_rows:
        df = r["device_file"]
        if df not in mapping:
            continue
        dev = catalog[mapping[df]["device"]]
        prec = SHEET_PRECISION[r["sheet"]]
        key = PRECISION_PEAK[prec][0]
        peak = dev["peak_flops"].get(key, 0)
        W, H, C, N, K = (int(r[k]) for k in ("W", "H", "C", "N", "K"))
        S, R = int(r["S_filter_w"]), int(r["R_filter_h"])
        pw, ph, sw, sh = (int(r[k]) for k in ("pad_w", "pad_h", "stride_w", "stride_h"))
        P = (H + 2 * ph - R) // sh + 1
        Q = (W + 2 * pw - S) // sw + 1
        work = 2.0 * N * K * C * R * S * P * Q
        if not peak:
            sys.exit("catalog device %s has no %s peak" % (dev["name"], key))
        for tcol, mcol, op in conv_cols:
            tf = fnum(r[tcol])
            if tf is None:
                if not df.startswith("inference"):
                    skipped_non_numeric += 1
                continue
            ms = fnum(r[mcol])
            if ms and abs(work / (ms * 1e-3) / (tf * 1e12) - 1) > 0.02:
                mismatch_rows += 1
            add(dev["name"], prec, op, tf * 1e12 / peak, work, df, r["sheet"])

    # ---- per device / precision / op summaries ----------------------------
    results = []
    for (dev, prec) in sorted(sources):
        entry = {"device": dev, "precision": prec,
                 "peak_key": PRECISION_PEAK[prec][0],
                 "peak_flops": catalog[dev]["peak_flops"][PRECISION_PEAK[prec][0]],
                 "deepbench_sources": sorted(sources[(dev, prec)]),
                 "ops": {}}
        for op in ("gemm", "conv_fwd", "conv_bwd_inputs", "conv_bwd_params"):
            rows = groups.get((dev, prec, op))
            if rows:
                entry["ops"][op] = summarize_split(rows)
        bwd = groups.get((dev, prec, "conv_bwd_inputs"), []) + groups.get((dev, prec, "conv_bwd_params"), [])
        if bwd:
            entry["ops"]["conv_bwd"] = summarize_split(bwd)
        if (dev, prec) in gemv_like:
            entry["gemv_like_bandwidth_fraction"] = summarize(gemv_like[(dev, prec)])
        results.append(entry)

    # ---- recommended factors ----------------------------------------------
    def is_tensor_core(devname):
        cc = catalog[devname].get("compute_capability", "0.0")
        return float(cc) >= 7.0

    def pooled(prec, ops, dev_filter):
        effs, devs = [], set()
        for (dev, p, op), rows in groups.items():
            if p == prec and op in ops and dev_filter(dev):
                devs.add(dev)
                effs += [e for e, w in rows if w >= LARGE_FLOP]
        return effs, sorted(devs)

    op_classes = {"gemm": ("gemm",), "conv_fwd": ("conv_fwd",),
                  "conv_bwd": ("conv_bwd_inputs", "conv_bwd_params")}
    recommended = {
        "rule": ("For each op class, the median (statistics.median, rounded to 3 decimals) of the per-call "
                 "efficiency (measured TFLOPS / catalog dense peak) over all DeepBench rows with work >= 1 GFLOP "
                 "in precision fp16_tensor (sheet 'Results - FP16 ip, Mixed math': FP16 inputs, tensor cores, "
                 "FP32 accumulate; peak = peak_flops.fp16) on tensor-core devices (catalog compute capability "
                 ">= 7.0), rows of all those devices pooled. conv_bwd pools conv_bwd_inputs and conv_bwd_params. "
                 "int8 inference rows and fp32 rows are not used (see 'alternatives')."),
    }
    for cls, ops in op_classes.items():
        effs, devs = pooled("fp16_tensor", ops, is_tensor_core)
        recommended[cls] = round(statistics.median(effs), 3) if effs else None
        recommended.setdefault("basis", {})[cls] = {
            "devices": devs, "count": len(effs),
            "p25": rnd(statistics.quantiles(effs, n=4, method="inclusive")[0]) if len(effs) > 1 else None,
            "p75": rnd(statistics.quantiles(effs, n=4, method="inclusive")[2]) if len(effs) > 1 else None}
    gl = [x for (d, p), v in gemv_like.items() for x in v if p in ("fp32", "fp16_tensor")]
    recommended["memory_bound_efficiency"] = 0.8
    recommended["memory_bound_efficiency_source"] = (
        "ASSUMPTION, to be measured later: DeepBench (GEMM/conv only) has no elementwise or streaming kernel "
        "measurements. 0.8 of catalog peak DRAM bandwidth is a typical figure for large streaming kernels on "
        "NVIDIA GPUs. Cross-check only (not used): GEMV-like DeepBench GEMMs (arithmetic intensity < 1/4 of "
        "the machine balance, operands >= 4x L2) reach a median of %s of peak bandwidth over %d fp32/fp16 "
        "training rows, a different (and harder) access pattern than elementwise ops; per-device values are "
        "under results[*].gemv_like_bandwidth_fraction."
        % (rnd(statistics.median(gl), 3) if gl else "n/a", len(gl)))

    alternatives = {"rule": "Same as 'recommended' but for another precision / device set; informational."}
    for name, prec, filt in (("fp32_all_devices", "fp32", lambda d: True),
                             ("fp32_tensor_core_devices", "fp32", is_tensor_core),
                             ("fp32_pre_volta_devices", "fp32", lambda d: not is_tensor_core(d)),
                             ("int8_inference_all_devices", "int8", lambda d: True)):
        alt = {"precision": prec}
        for cls, ops in op_classes.items():
            effs, devs = pooled(prec, ops, filt)
            alt[cls] = round(statistics.median(effs), 3) if effs else None
            alt.setdefault("counts", {})[cls] = len(effs)
            alt["devices"] = sorted(set(alt.get("devices", [])) | set(devs))
        alternatives[name] = alt

    out = {
        "generated_by": "tests/reference/gen_efficiency.py",
        "rerun": "/usr/bin/python3 tests/reference/gen_efficiency.py > tests/reference/deepbench_efficiency.json",
        "inputs": {
            "deepbench": ["convolution.csv", "dense_matrix_multiplication.csv", "specs.csv"],
            "deepbench_origin": "baidu-research/DeepBench results (see reference-data/README.md)",
            "device_catalog": "schemas/devices.json",
        },
        "definitions": {
            "efficiency": "measured TFLOPS (DeepBench column, 2 FLOPs per MAC) / catalog dense peak of the matching precision",
            "work": "GEMM 2*M*N*K; conv 2*N*K*C*R*S*P*Q with integer output size P, Q",
            "large": "work >= 1 GFLOP per kernel call; small: below",
            "quantiles": "statistics.quantiles(method='inclusive'); median = statistics.median",
            "precisions": PRECISION_MEANING,
            "sheet_to_precision": SHEET_PRECISION,
        },
        "device_mapping": mapping,
        "unmapped_device_files": unmapped,
        "caveats": [
            "Convolution efficiencies can exceed 1: cuDNN picks Winograd/FFT algorithms for 3x3/5x5 filters, "
            "which do fewer multiplies than the direct convolution DeepBench (and this cost model) counts. This "
            "is the right quantity for a model that counts direct-convolution FLOPs; it is most visible for FP32 "
            "on Pascal/Maxwell.",
            "GeForce/TITAN cards boost above their nominal boost clock, so even GEMM efficiency can slightly "
            "exceed 1 against the catalog peak.",
            "T4 is limited to 70 W and rarely sustains its 1590 MHz boost: its efficiencies are low against the "
            "datasheet peak (and pull the pooled tensor-core median down; V100 alone is listed per device).",
            "The inference 'Mixed Precision' sheet is int8 (DeepBench README, server deployment); for the T4 "
            "inference file this is an inference from the data too: its best forward conv (72 TFLOPS) exceeds "
            "the T4 FP16 tensor peak (65), so it cannot be FP16.",
            "P100 'Psuedo FP16' uses FP32 math, so it is divided by the FP32 peak, not the 18.7 TFLOPS half2 rate.",
            "The T4 int8 GEMMs reach at most 24 TOPS, 0.19 of the T4 int8 tensor-core peak but about 0.75 of "
            "its DP4A CUDA-core rate (4 x 8.1 = 32.4 TOPS): cuBLAS (CUDA 10.1 cublasGemmEx) apparently ran them "
            "on CUDA cores. Its int8 convolutions (cuDNN) do reach tensor-core speeds. Neither feeds 'recommended'.",
            "%d convolution values disagree by > 2%% with 2*N*K*C*R*S*P*Q / time: in the 1080 Ti, P100 and "
            "Titan Xp training sheets DeepBench computed some output sizes without flooring (6.5 where "
            "floor((H + 2*pad - R) / stride) + 1 = 7). The TFLOPS column is used as is." % mismatch_rows,
            "%d training TFLOPS cells are 'N/A' / 'N/A*' or empty (configurations DeepBench did not run) and "
            "are skipped; the inference files have no backward columns." % skipped_non_numeric,
        ],
        "recommended": recommended,
        "alternatives": alternatives,
        "results": results,
    }

    text = json.dumps(out, indent=2, sort_keys=False) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)

    print("recommended: gemm %s conv_fwd %s conv_bwd %s memory_bound %s"
          % (recommended["gemm"], recommended["conv_fwd"], recommended["conv_bwd"],
             recommended["memory_bound_efficiency"]), file=sys.stderr)


if __name__ == "__main__":
    main()
