#!/usr/bin/python3
"""What fvcore's FlopCountAnalysis itself counts for the models dnnsat builds, so that
dnnsat's "fvcore" MACs convention (costmodel/cm_macs.c) is checked against the real counter and
not only against formulas restated from its source.

For each row the model is built in PyTorch as the other generators build it (torchvision for the
CNNs and ViT; the plain-torch mirrors of Hugging Face's eager BertModel and GPT2LMHeadModel in
gen_torch_reference.py, of LlamaForCausalLM in gen_torch_reference_llm.py, of timm's legacy
Xception and NAS-Bench-201's TinyNetwork in gen_torch_reference_choices.py; the U-Net of
tests/data/onnx/gen_torch_unet.py, whose row names its ONNX export), put in eval mode
("inference") or train mode ("training": batch norm then counts as normalising with batch
statistics), and traced by fvcore.nn.FlopCountAnalysis with its default handles. fvcore's total
(its "flops", one per multiply-accumulate) and its split by operator are written; the operators
it skips (relu, add, max_pool2d, softmax, ...) count 0, as fvcore's own total does.

Output: tests/reference/fvcore_reference.csv with columns
  model      dnnsat's model: "preset:NAME", "template:NAME" or "model:PATH" (a model file)
  config     the hyperparameters, NAME=VALUE separated by spaces, as dnnsat estimate takes them
  mode       inference | training
  attention  the attention kernel of the traced code (eager: matmul, softmax, matmul), or empty
  fvcore_total      FlopCountAnalysis(model, input).total()
  fvcore_by_operator  by_operator(), "op=count" separated by spaces
tests/cli/test_fvcore.py runs `dnnsat estimate --convention fvcore` on every row and asserts the
MACs equal fvcore_total.

fvcore is not a Debian package and PyPI is out of reach here, so the counter is run from its
source: a checkout of github.com/facebookresearch/fvcore (this table: commit 3378afe, "fix
formatting for values <1000 (#157)", version 0.1.6) and of its dependency iopath at tag v0.1.9
(the later ones need aiofiles), with Debian's python3-termcolor, python3-tabulate,
python3-portalocker, python3-tqdm and python3-torch 1.13 / python3-torchvision 0.14. Rerun (from
the repository root, about a minute on two cores):
    mkdir -p /tmp/fv && git -C FVCORE_CHECKOUT archive HEAD fvcore | tar x -C /tmp/fv &&
    git -C IOPATH_CHECKOUT archive v0.1.9 iopath | tar x -C /tmp/fv
    PYTHONPATH=/tmp/fv /usr/bin/python3 tests/reference/gen_fvcore_reference.py
"""

import csv
import logging
import os
import sys

import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen_torch_reference as ref                    # noqa: E402  BERT, GPT-2
import gen_torch_reference_choices as choices        # noqa: E402  Xception, NAS-Bench-201
import gen_torch_reference_llm as llm                # noqa: E402  LLaMA

from fvcore.nn import FlopCountAnalysis              # noqa: E402

COLS = ["model", "config", "mode", "attention", "fvcore_total", "fvcore_by_operator"]


def image(b, r):
    return torch.randn(b, 3, r, r, generator=torch.Generator().manual_seed(0))


def tokens(b, t, vocab):
    return torch.randint(0, vocab, (b, t), generator=torch.Generator().manual_seed(0))


def count(model, inp, training):
    # with autograd on, as a training script calls it: under torch.no_grad() torch 1.13's
    # nn.MultiheadAttention takes its fused fast path in eval mode, one aten op fvcore skips
    model.train(training)
    fl = FlopCountAnalysis(model, inp)
    fl.unsupported_ops_warnings(False)
    fl.uncalled_modules_warnings(False)
    total = fl.total()
    by_op = " ".join("%s=%d" % kv for kv in sorted(fl.by_operator().items()))
    return total, by_op


def cnn_rows():
    # (torchvision name, dnnsat preset, batch)
    for name, preset, batch in [("alexnet", "alexnet", 2), ("vgg11", "vgg11", 1), ("vgg11_bn", "vgg11_bn", 2),
                                ("resnet18", "resnet18", 2), ("resnet50", "resnet50", 1),
                                ("mobilenet_v2", "mobilenet_v2", 2)]:
        torch.manual_seed(0)
        m = getattr(torchvision.models, name)(weights=None)
        for training in (False, True):
            yield ("preset:" + preset, "batch_size=%d" % batch, training, "", m, image(batch, 224))


def vit_rows():
    # vit_b_16 at 224 runs eagerly on the CPU in a few seconds; a small one checks the batch
    torch.manual_seed(0)
    m = torchvision.models.vit_b_16(weights=None)
    yield ("preset:vit_b_16", "batch_size=1", False, "eager", m, image(1, 224))
    v = llm.VIT
    torch.manual_seed(0)
    m = torchvision.models.vision_transformer.VisionTransformer(**v)
    cfg = "batch_size=2 image_size=%d patch=%d hidden=%d layers=%d heads=%d mlp_dim=%d num_classes=%d" % (
        v["image_size"], v["patch_size"], v["hidden_dim"], v["num_layers"], v["num_heads"], v["mlp_dim"],
        v["num_classes"])
    for training in (False, True):
        yield ("template:vit", cfg, training, "eager", m, image(2, v["image_size"]))


def transformer_rows():
    torch.manual_seed(0)
    m = ref.BertModel(ref.BertConfig)
    for training in (False, True):
        yield ("preset:bert-base", "batch_size=1 seq_len=128", training, "eager", m,
               tokens(1, 128, ref.BertConfig.vocab_size))
    torch.manual_seed(0)
    m = ref.GPT2LMHeadModel(ref.GPT2Config)
    for training in (False, True):
        yield ("preset:gpt2", "batch_size=1 seq_len=64", training, "eager", m,
               tokens(1, 64, ref.GPT2Config.vocab_size))
    for i, size in enumerate(llm.LLAMA_SIZES):
        m, cfg, inp, batch = llm.llama_model(size)
        conf = "batch_size=%d " % batch + " ".join("%s=%s" % kv for kv in cfg.items())
        for training in (False, True) if i == 0 else (False,):
            yield ("template:llama", conf, training, "eager", m, inp(batch))


def choice_rows():
    for middle, batch in [(8, 1), (2, 2)]:
        torch.manual_seed(0)
        m = choices.Xception(middle)
        for training in (False, True):
            yield ("model:examples/models/xception.json", "middle_blocks=%d batch_size=%d resolution=224" % (
                middle, batch), training, "", m, image(batch, 224))
    for cells, edges, batch in choices.NB201_CASES:
        torch.manual_seed(0)
        m = choices.TinyNetwork(choices.NB201_C, cells, edges, choices.NB201_CLASSES)
        conf = "cells_per_stage=%d batch_size=%d " % (cells, batch) + " ".join(
            "edge%d=%s" % (i, e) for i, e in enumerate(edges))
        for training in (False, True):
            yield ("preset:cifar10", conf, training, "", m, image(batch, choices.NB201_RES))


def upsample_rows():
    # the U-Net fixture of tests/data/onnx/gen_torch_unet.py (nn.Upsample nearest and bilinear,
    # F.interpolate bilinear): fvcore's upsample_nearest2d and upsample_bilinear2d handles; dnnsat
    # reads the ONNX export itself
    sys.path.insert(0, os.path.join(HERE, "..", "data", "onnx"))
    from gen_torch_unet import TinyUNet
    torch.manual_seed(0)
    m = TinyUNet()
    for training in (False, True):
        yield ("model:tests/data/onnx/torch_unet.onnx", "batch=2 h=16 w=16", training, "", m,
               torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0)))


def main():
    torch.set_num_threads(2)
    logging.getLogger("fvcore").setLevel(logging.ERROR)
    rows = []
    for gen in (cnn_rows, vit_rows, transformer_rows, choice_rows, upsample_rows):
        for model, conf, training, attn, m, inp in gen():
            total, by_op = count(m, inp, training)
            mode = "training" if training else "inference"
            print("%-40s %-60s %-9s %14d  %s" % (model, conf[:60], mode, total, by_op), file=sys.stderr)
            rows.append({"model": model, "config": conf, "mode": mode, "attention": attn, "fvcore_total": total,
                         "fvcore_by_operator": by_op})
    with open(os.path.join(HERE, "fvcore_reference.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
