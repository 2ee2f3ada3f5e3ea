#!/usr/bin/python3
"""Extract DeepBench's recurrent-layer timings into a CSV.

How to rerun (standard-library Python only; DeepBench's results are .xlsx
workbooks, read here with zipfile and xml.etree):

    git clone https://github.com/baidu-research/DeepBench   # commit da81ba7
    /usr/bin/python3 tests/reference/gen_deepbench_rnn.py DeepBench \
        > tests/reference/deepbench_rnn.csv

What it keeps: every row of the "Recurrent Layers - Vanilla / LSTM / GRU"
tables of the FP32 training sheets of the NVIDIA GPUs that
../shared/reference-data/deepbench/ also covers (results/train/
DeepBench_NV_{1080Ti,TitanXp,P100,V100}.xlsx; the T4 workbook's
FP32 recurrent cells are empty, so it adds no rows). DeepBench's rnn_bench.cu
times one unidirectional layer with cudnnRNNForwardTraining (forward),
cudnnRNNBackwardData (backward wrt inputs) and cudnnRNNBackwardWeights
(backward wrt weights), averaged over 100 calls after a warm-up, with
CUDNN_SKIP_INPUT: the layer has no input projection, so each time is the
recurrence alone (hidden units H, batch N, timesteps T; each step multiplies
the N x H state by the G*H x H recurrent weights, G = 1, 4, 3 gates).
Times are in milliseconds as the workbooks give them.
"""
import csv
import re
import sys
import zipfile
import xml.etree.ElementTree as ET

MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
FILES = {
    "gtx-1080-ti": "results/train/DeepBench_NV_1080Ti.xlsx",
    "titan-xp": "results/train/DeepBench_NV_TitanXp.xlsx",
    "p100-pcie-16gb": "results/train/DeepBench_NV_P100.xlsx",
    "v100-16gb": "results/train/DeepBench_NV_V100.xlsx",
}
GATES = {"Vanilla": 1, "LSTM": 4, "GRU": 3}


def text_of(node):
    return "".join(t.text or "" for t in node.iter(MAIN + "t"))


def read_sheets(path):
    """{sheet name: [ {column letter: cell text} per row ]}"""
    z = zipfile.ZipFile(path)
    strings = []
    if "xl/sharedStrings.xml" in z.namelist():
        strings = [text_of(si) for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall(MAIN + "si")]
    rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
    target = {r.get("Id"): r.get("Target") for r in rels}
    sheets = {}
    for s in ET.fromstring(z.read("xl/workbook.xml")).find(MAIN + "sheets"):
        t = target[s.get(REL)]
        t = t if t.startswith("xl/") else "xl/" + t.lstrip("/")
        rows = []
        for row in ET.fromstring(z.read(t)).iter(MAIN + "row"):
            cells = {}
            for c in row.findall(MAIN + "c"):
                col = re.match("[A-Z]+", c.get("r")).group(0)
                v = c.find(MAIN + "v")
                if v is None:
                    inline = c.find(MAIN + "is")
                    cells[col] = text_of(inline) if inline is not None else None
                else:
                    cells[col] = strings[int(v.text)] if c.get("t") == "s" else v.text
            rows.append(cells)
        sheets[s.get("name")] = rows
    return sheets


def rnn_rows(path):
    for name, rows in read_sheets(path).items():
        if "FP32" not in name:
            continue
        kind = None
        for r in rows:
            a = r.get("A") or ""
            if a.startswith("Recurrent Layers"):
                kind = a.split("-")[-1].strip()
                continue
            if a:
                kind = None
            if kind is None or not r.get("C") or not r.get("G"):
                continue
            try:
                h, n, t = (int(float(r[k])) for k in "CDE")
                fwd = float(r["G"])
            except (ValueError, KeyError):
                continue

            def ms(col):
                try:
                    return "%.4g" % float(r.get(col))
                except (TypeError, ValueError):
                    return ""
            yield name, kind, r.get("B") or "", h, n, t, "%.4g" % fwd, ms("H"), ms("I")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_deepbench_rnn.py DEEPBENCH_CHECKOUT > deepbench_rnn.csv")
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(["device", "sheet", "cell", "gates", "app", "hidden", "batch", "timesteps",
                "fwd_ms", "bwd_inputs_ms", "bwd_params_ms"])
    for dev, rel in FILES.items():
        for sheet, kind, app, h, n, t, f, bi, bp in rnn_rows(sys.argv[1] + "/" + rel):
            w.writerow([dev, sheet, kind.lower(), GATES[kind], app, h, n, t, f, bi, bp])


if __name__ == "__main__":
    main()
