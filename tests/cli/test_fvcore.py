#!/usr/bin/python3
"""tests/cli/test_fvcore.py - dnnsat's "fvcore" MACs convention against
fvcore's own FlopCountAnalysis, run on the same models in PyTorch
(tests/reference/fvcore_reference.csv, written by
tests/reference/gen_fvcore_reference.py from fvcore's source): torchvision
CNNs and ViTs, the Hugging Face BERT, GPT-2 and LLaMA mirrors with eager
attention, timm's Xception and NAS-Bench-201 cells, in eval and train mode
(batch norm counts 1-2 per element in eval mode, 4-5 in train mode).

Checks: for every row, `dnnsat estimate --convention fvcore` (with
--inference for the eval-mode rows and the row's attention kernel) answers
MACs equal to fvcore's total, exactly, and its flops_counting note says
they are fvcore's count. Prints "N passed, N failed".
"""
import csv
import os

from clitest import TOP, check, estimate_json, report


def args_of(row):
    kind, name = row["model"].split(":", 1)
    flag = {"preset": "--preset", "template": "--template", "model": "--model"}[kind]
    if kind == "model":
        name = os.path.join(TOP, name)
    args = [flag, name, *row["config"].split(), "--convention", "fvcore"]
    if row["mode"] == "inference":
        args.append("--inference")
    if row["attention"]:
        args += ["--attention", row["attention"]]
    return args


def main():
    with open(os.path.join(TOP, "tests", "reference", "fvcore_reference.csv")) as f:
        rows = list(csv.DictReader(f))
    check("the table has rows", len(rows) >= 20, str(len(rows)))
    for row in rows:
        name = "%s %s %s" % (row["model"], row["config"], row["mode"])
        d, err = estimate_json(*args_of(row))
        if d is None:
            check(name, False, err.strip())
            continue
        got, want = d["costs"]["macs"], int(row["fvcore_total"])
        print("%-40s %-9s fvcore %15d  dnnsat %15d  %+d" % (row["model"], row["mode"], want, got, got - want))
        check(name, got == want, "dnnsat %d, fvcore %d (%s)" % (got, want, row["fvcore_by_operator"]))
        check(name + ": the note names the convention", "fvcore" in d["costs"].get("flops_counting", ""),
              d["costs"].get("flops_counting"))
    return report()


if __name__ == "__main__":
    raise SystemExit(main())
