#!/usr/bin/python3
"""extract.py - writes the columns the AutoML payoff benchmark reads from the
shared public tables (../shared, or DNNSAT_SHARED) into this folder, so the
benchmark runs from a clone alone. Values are copied, never changed:
  nb201.csv          NAS-Bench-201 (Dong & Yang 2020) as merged in
                     shared/benchmarks/nb201_merged_15625.csv: arch_str,
                     CIFAR-10 test accuracy (200 epochs, seed mean), training
                     seconds (200 epochs; empty for 150 cells), MFLOPs; with
                     HELP's measured batch-1 latency on a GTX 1080 Ti (ms,
                     shared/reference-data/help_nb201_latency_pascal.csv,
                     HayeonLee/HELP, MIT)
  cbm_resnet.csv,    Channel-Bench-Macro (Su et al. 2021) as in
  cbm_mobilenet.csv  shared/benchmarks/channel_bench_macro_*.csv: ch0..ch6,
                     mean CIFAR-10 test accuracy of 3 seeds, params, FLOPs
"""
import csv
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("DNNSAT_SHARED", os.path.join(HERE, "..", "..", "..", "..", "shared"))


def main():
    lat = {r["arch_str"]: r["1080ti_1"] for r in
           csv.DictReader(open(os.path.join(SHARED, "reference-data", "help_nb201_latency_pascal.csv")))}
    with open(os.path.join(HERE, "nb201.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arch_str", "c10_test_acc_200ep", "c10_train_time_200ep_s", "c10_flops_M", "latency_1080ti_b1_ms"])
        for r in csv.DictReader(open(os.path.join(SHARED, "benchmarks", "nb201_merged_15625.csv"))):
            w.writerow([r["arch_str"], r["c10_test_acc_200ep"], r["c10_train_time_200ep_s"], r["c10_flops_M"],
                        lat[r["arch_str"]]])
    for kind in ("resnet", "mobilenet"):
        with open(os.path.join(HERE, "cbm_%s.csv" % kind), "w", newline="") as f:
            w = csv.writer(f)
            cols = ["ch%d" % i for i in range(7)] + ["mean_acc", "params", "flops"]
            w.writerow(cols)
            for r in csv.DictReader(open(os.path.join(SHARED, "benchmarks", "channel_bench_macro_%s.csv" % kind))):
                w.writerow([r[c] for c in cols])


if __name__ == "__main__":
    main()
