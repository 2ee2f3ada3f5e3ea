#!/usr/bin/python3
"""Export the ONNX fixtures `dnnsat import` is tested on, and PyTorch's own numbers for them.

Run with Debian's python3-torch (1.13, CPU) and python3-onnx:

    /usr/bin/python3 tests/data/onnx/gen_onnx_fixtures.py [--big] OUTDIR

Writes OUTDIR/NAME.onnx for every model and OUTDIR/reference.json with, per model, the
parameter count (sum of p.numel()) and the forward MACs at batch 1 (and sequence length
`seq` for the transformers) counted by tests/reference/gen_torch_reference.py's count_macs:
conv and linear layers by forward hooks, plus the two attention matmuls; and the bytes autograd
saves for backward at two batch sizes (and two sequence lengths), dropout as on CUDA. The small models
(tiny_cnn, tiny_decoder, bert_tiny, gpt_tiny, vit_tiny: under 1 MB each) are committed in tests/data/onnx/; --big
adds torchvision's resnet18, resnet50 and mobilenet_v2 (randomly initialised, weights=None,
tens of MB each), which tests export at test time when python3-torch is present.

Every export is in training mode (batch norm and dropout kept) with dynamic axes, so the batch size (and the sequence length) stay symbolic
in the ONNX file (dim_param "batch", "seq"):
  tiny_cnn   conv-BN-ReLU-maxpool, conv-BN-ReLU, global average pool, flatten, linear; opset 13
  bert_tiny  the BERT of gen_torch_reference.py at hidden 64, 2 layers, 4 heads; opset 14
             (LayerNorm exported as ReduceMean/Sub/Pow/Sqrt/Div, GELU as its Erf expansion)
  gpt_tiny   the GPT-2 LM of gen_torch_reference.py at 64, 2 layers, 4 heads; opset 17
             (LayerNormalization as one node)
  tiny_decoder  linear to 32x4x4, three ConvTranspose2d (stride 2 / padding 1; stride 2 with
             output_padding 1; dilation 2 with groups 2), a 1x1 conv, sigmoid; opset 13
  vit_tiny   torchvision's VisionTransformer at 32x32, patch 8, 2 layers, 4 heads, 64 wide;
             opset 14. Its attention is nn.MultiheadAttention, whose projections and matmuls
             forward hooks do not see, so its MACs are counted from the architecture instead:
             the patch conv, per layer 4*L*E*E (q, k, v, out) + 2*L*L*E (QK^T, PV) + 2*L*E*M
             (MLP), and the head E*C, with L = 17 tokens (16 patches and the class token);
             and peft's all-linear LoRA count at r 8 (peft_all_linear)
  text_tiny  TextTiny: nn.TransformerEncoder (batch first) between an embedding and x.mean(1)
             (ReduceMean over the tokens); opset 14; MACs from the architecture as vit_tiny's,
             at L = 16 tokens
  densenet_tiny  torchvision's DenseNet, one block of 11 layers, growth 4, 32x32: a Concat of
             12 tensors; opset 13
  mbv3_tiny  torchvision's MobileNetV3 (the small configuration at width 0.25, 10 classes, 64x64):
             HardSwish, HardSigmoid; opset 13
  decoder_tiny  DecoderTiny: nn.TransformerDecoder, its cross-attention by slices of
             in_proj_weight; opset 14; no MACs reference
  embed_head EmbedHead: an MLP and F.normalize (ReduceL2, Clip, Expand, Div); opset 14
  textcnn_tiny  TextCNN: Conv1d over an embedding, LayerNorm, x.max(1).values (ReduceMax); opset 14;
             the Conv1d's MACs by hand (count_macs hooks 2-d convolutions)
  layer_zoo  LayerZoo: GroupNorm, LeakyReLU, InstanceNorm2d, ELU, PReLU, Mish, Softplus,
             PixelShuffle (DepthToSpace CRD), 16x16; opset 14
  convnext_tiny_eval, effnet_tiny_eval  torchvision's ConvNeXt (two stages of one block, 16 and
             32 wide) and EfficientNet (B0's configuration at width and depth 0.25), 64x64,
             exported from eval mode (TrainingMode.PRESERVE: deduplicated initializers as
             Identity nodes; SiLU as Mul(x, Sigmoid(x))); opset 14; the references from train
             mode
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torchvision.models as tvm
from torchvision.models.convnext import CNBlockConfig as cnx_block
from torchvision.models.efficientnet import _efficientnet_conf as effnet_conf
from torchvision.models.mobilenetv3 import _mobilenet_v3_conf as mbv3_conf
from torchvision.models.vision_transformer import VisionTransformer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference"))
import gen_torch_reference as ref  # noqa: E402


def peft_all_linear(m, r):
    """The trainable parameters peft's LoRA with target_modules="all-linear" adds at rank r to a
    model that is not a transformers PreTrainedModel (no output embeddings left out): r * (in +
    out) per nn.Linear module (peft's _maybe_include_all_linear_layers; Conv1D is transformers').
    nn.MultiheadAttention's in_proj_weight is a parameter, not a module, so it is not counted."""
    return sum(r * (mod.in_features + mod.out_features) for mod in m.modules() if isinstance(mod, nn.Linear))


class TextTiny(nn.Module):
    """A text classifier as people write one in torch.nn: token embeddings, nn.TransformerEncoder
    (batch first, post-norm, ReLU, no dropout), the mean over the tokens, a linear head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(64, 2)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)).mean(1))


class LayerZoo(nn.Module):
    """torch.nn layers that image-to-image and GAN models use, one block each: GroupNorm and
    LeakyReLU, InstanceNorm2d (affine) and ELU, PReLU (per channel), Mish and Softplus, and
    PixelShuffle."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.LeakyReLU(0.1),
            nn.Conv2d(16, 16, 3, padding=1), nn.InstanceNorm2d(16, affine=True), nn.ELU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.PReLU(16), nn.Mish(), nn.Softplus(),
            nn.Conv2d(16, 12, 3, padding=1), nn.PixelShuffle(2), nn.Conv2d(3, 3, 3, padding=1))

    def forward(self, x):
        return self.body(x)


class TextCNN(nn.Module):
    """A text CNN: token embeddings, Conv1d over the sequence, LayerNorm over the channels, the
    max over time (x.max(1).values: ReduceMax), a linear head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(500, 16)
        self.conv = nn.Conv1d(16, 32, 5, padding=2)
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 2)

    def forward(self, ids):
        h = self.conv(self.embed(ids).transpose(1, 2)).transpose(1, 2)
        return self.head(torch.relu(self.norm(h)).max(1).values)


class EmbedHead(nn.Module):
    """A contrastive projection head (SimCLR, CLIP): linear, ReLU, linear, F.normalize (ReduceL2,
    Clip, Expand, Div)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))

    def forward(self, x):
        return nn.functional.normalize(self.proj(x), dim=-1)


class DecoderTiny(nn.Module):
    """nn.TransformerDecoder (batch first, one layer, no dropout) on token embeddings, its memory
    the same embeddings: its cross-attention multiplies by slices of in_proj_weight."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True), 1)
        self.head = nn.Linear(32, 100)

    def forward(self, ids):
        x = self.embed(ids)
        return self.head(self.decoder(x, x))


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class TinyDecoder(nn.Module):
    """An upsampler (a DCGAN-style generator): latent -> linear -> 32x4x4 -> transposed convolutions
    (stride 2 with padding 1; stride 2 with output_padding 1; dilation 2 with groups 2) -> 3x16x16."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32 * 4 * 4)
        self.up = nn.Sequential(
            nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(8, 8, 3, padding=2, dilation=2, groups=2), nn.ReLU(),
            nn.Conv2d(8, 3, 1), nn.Sigmoid())

    def forward(self, z):
        return self.up(self.fc(z).view(z.size(0), 32, 4, 4))


class BertTiny(ref.BertConfig):
    vocab_size = 1000
    hidden_size = 64
    num_hidden_layers = 2
    num_attention_heads = 4
    intermediate_size = 128
    max_position_embeddings = 128


class GptTiny(ref.GPT2Config):
    vocab_size = 500
    n_positions = 128
    n_embd = 64
    n_layer = 2
    n_head = 4


def export(model, inp, path, names, axes, opset):
    # training mode: batch norm stays a node of its own (an eval export folds it into the
    # conv's bias) and dropout stays; dnnsat prices training
    model.train()
    torch.onnx.export(model, inp, path, input_names=names, dynamic_axes=axes, opset_version=opset,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)


def export_eval(model, inp, path, names, axes, opset):
    # PRESERVE on an eval model: batch norm stays a node (EVAL, the default, folds it into the
    # convolutions, which dnnsat import warns of), initializers are deduplicated as in EVAL
    model.eval()
    torch.onnx.export(model, inp, path, input_names=names, dynamic_axes=axes, opset_version=opset,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)


def record(refs, name, model, inp, **extra):
    macs, by = ref.count_macs(model, inp)
    refs[name] = dict(params=sum(p.numel() for p in model.parameters()), macs=macs, macs_ops=by, **extra)


def global_pool(fn):
    """Whether mean node fn averages a 4-d or 5-d input over every spatial axis: a global average
    pool (AdaptiveAvgPool2d(1) runs as such a mean in ATen, as x.mean((2, 3)) does)."""
    self = fn._saved_self
    dims = {(d - 2 ** 64 if d >= 2 ** 63 else d) % self.dim() for d in fn._saved_dim}
    return self.dim() >= 4 and dims == set(range(2, self.dim()))


def mean_input_bytes(model, inp):
    """The bytes of the storages only torch.mean's backward keeps in one train-mode forward, but
    a global average pool's: PyTorch 1.13 (this generator's) keeps mean.dim's input
    (MeanBackward1._saved_self), where PyTorch 2.x keeps only its sizes (derivatives.yaml:
    mean_backward(grad, self.sym_sizes(), ...)), which dnnsat's mean models; dnnsat's
    adaptive_avgpool2d keeps its input as 1.13 did (docs/memory-accuracy.md), so a global
    pool's input is not counted here. 0 where the model takes no such mean."""
    savers = {}     # storage pointer -> (bytes, the names of the nodes that keep it)

    def walk(fn, seen):
        if fn is None or fn in seen:
            return
        seen.add(fn)
        for a in dir(fn):
            if a.startswith("_saved_"):
                t = getattr(fn, a)
                if isinstance(t, torch.Tensor) and t.numel() > 0:
                    b, who = savers.setdefault(ref._sptr(t), (ref._snbytes(t), set()))
                    kind = type(fn).__name__
                    who.add("pool" if kind.startswith("MeanBackward") and global_pool(fn) else kind)
        for nxt, _ in fn.next_functions:
            walk(nxt, seen)

    model.train()
    seen = set()
    for t in ref._tensors(model(inp)):
        walk(t.grad_fn, seen)
    return sum(b for b, who in savers.values() if who and all(w.startswith("MeanBackward") for w in who))


def record_saved(refs, name, model, make_input, sizes):
    """Bytes autograd saves in one train-mode forward (gen_torch_reference.measure_saved) with
    every nn.Dropout as torch.native_dropout (a bool mask, as on CUDA, which dnnsat prices),
    at each (batch, seq) of sizes (seq None for images); where a mean keeps its input
    (mean_input_bytes), those bytes too, as mean_input_bytes."""
    ref.with_native_dropout(model)
    refs[name]["saved"] = []
    for batch, seq in sizes:
        torch.manual_seed(1)
        res = ref.measure_saved(model, make_input(batch, seq), False)
        row = dict(batch=batch, seq=seq, bytes=res["saved_activation_bytes"])
        torch.manual_seed(1)
        mean = mean_input_bytes(model, make_input(batch, seq))
        if mean:
            row["mean_input_bytes"] = mean
        refs[name]["saved"].append(row)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    big = "--big" in sys.argv
    out = args[0] if args else HERE
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    refs = {}
    img = {"x": {0: "batch"}}
    m = TinyCNN()
    x = torch.randn(1, 3, 32, 32)
    export(m, x, os.path.join(out, "tiny_cnn.onnx"), ["x"], img, 13)
    record(refs, "tiny_cnn", m, x, resolution=32)
    record_saved(refs, "tiny_cnn", m, lambda b, s: torch.randn(b, 3, 32, 32), [(2, None), (8, None)])
    seq = 16
    ids = torch.randint(0, 500, (1, seq))
    tok = {"input_ids": {0: "batch", 1: "seq"}}
    m = ref.BertModel(BertTiny)
    export(m, ids, os.path.join(out, "bert_tiny.onnx"), ["input_ids"], tok, 14)
    record(refs, "bert_tiny", m, ids, seq=seq)
    tok_sizes = [(2, 16), (8, 16), (2, 64)]
    record_saved(refs, "bert_tiny", m, lambda b, s: torch.randint(0, 1000, (b, s)), tok_sizes)
    m = ref.GPT2LMHeadModel(GptTiny)
    export(m, ids, os.path.join(out, "gpt_tiny.onnx"), ["input_ids"], tok, 17)
    record(refs, "gpt_tiny", m, ids, seq=seq)
    record_saved(refs, "gpt_tiny", m, lambda b, s: torch.randint(0, 500, (b, s)), tok_sizes)
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
                          num_classes=10)
    x = torch.randn(1, 3, 32, 32)
    export(m, x, os.path.join(out, "vit_tiny.onnx"), ["x"], img, 14)
    conv, _ = ref.count_macs(m, x)
    tokens, width, mlp = 17, 64, 128
    layer = 4 * tokens * width * width + 2 * tokens * tokens * width + 2 * tokens * width * mlp
    conv = 3 * 64 * 8 * 8 * 16  # patch embedding: 16 patches of 3x8x8 into 64 channels
    refs["vit_tiny"] = dict(params=sum(p.numel() for p in m.parameters()), resolution=32,
                            macs=conv + 2 * layer + width * 10,
                            macs_ops={"conv2d": conv, "layers": 2 * layer, "head": width * 10},
                            lora_r8_all_linear=peft_all_linear(m, 8))
    record_saved(refs, "vit_tiny", m, lambda b, s: torch.randn(b, 3, 32, 32), [(2, None), (8, None)])
    m = TinyDecoder()
    z = torch.randn(1, 16)
    export(m, z, os.path.join(out, "tiny_decoder.onnx"), ["z"], {"z": {0: "batch"}}, 13)
    macs, by = ref.count_macs(m, z)
    # count_macs hooks nn.Conv2d for "conv2d"; the 1x1 output conv is counted there
    refs["tiny_decoder"] = dict(params=sum(p.numel() for p in m.parameters()), macs=macs, macs_ops=by)
    record_saved(refs, "tiny_decoder", m, lambda b, s: torch.randn(b, 16), [(2, None), (8, None)])
    # last, so that the fixtures above keep their random weights
    m = TextTiny()
    export(m, ids, os.path.join(out, "text_tiny.onnx"), ["ids"], {"ids": {0: "batch", 1: "seq"}}, 14)
    tokens, width, ffn = seq, 64, 128
    layer = 4 * tokens * width * width + 2 * tokens * tokens * width + 2 * tokens * width * ffn
    refs["text_tiny"] = dict(params=sum(p.numel() for p in m.parameters()), seq=seq, macs=2 * layer + width * 2,
                             macs_ops={"layers": 2 * layer, "head": width * 2},
                             lora_r8_all_linear=peft_all_linear(m, 8))
    record_saved(refs, "text_tiny", m, lambda b, s: torch.randint(0, 1000, (b, s)), tok_sizes)
    # torchvision's own classes, small: DenseNet's torch.cat of every earlier layer's features
    # (12 tensors at the block's end) and MobileNetV3's Hardswish and Hardsigmoid
    # (MobileNetV3 at 64 px: its last stage is 2 x 2, where batch norm trains at batch 1)
    for name, res, m in (("densenet_tiny", 32, tvm.DenseNet(growth_rate=4, block_config=(11,), num_init_features=8,
                                                            bn_size=2, num_classes=10)),
                         ("mbv3_tiny", 64, tvm.MobileNetV3(*mbv3_conf("mobilenet_v3_small", width_mult=0.25),
                                                           num_classes=10))):
        x = torch.randn(1, 3, res, res)
        export(m, x, os.path.join(out, name + ".onnx"), ["x"], img, 13)
        record(refs, name, m, x, resolution=res)
        record_saved(refs, name, m, lambda b, s, r=res: torch.randn(b, 3, r, r), [(2, None), (8, None)])
    # exported from an eval-mode model, where torch's exporter keeps one
    # initializer of parameters with equal values (fresh LayerNorm weights: all ones) and gives the
    # others as Identity nodes, and nn.SiLU is Mul(x, Sigmoid(x)); neither has dropout or
    # stochastic depth, so the training-mode references hold
    for name, m in (("convnext_tiny_eval", tvm.ConvNeXt([cnx_block(16, 32, 1), cnx_block(32, None, 1)],
                                                       stochastic_depth_prob=0.0, num_classes=10)),
                    ("effnet_tiny_eval", tvm.EfficientNet(effnet_conf("efficientnet_b0", width_mult=0.25,
                                                                       depth_mult=0.25)[0], dropout=0.0,
                                                          stochastic_depth_prob=0.0, num_classes=10))):
        x = torch.randn(1, 3, 64, 64)
        export_eval(m, x, os.path.join(out, name + ".onnx"), ["x"], img, 14)
        m.train()
        record(refs, name, m, x, resolution=64)
        record_saved(refs, name, m, lambda b, s: torch.randn(b, 3, 64, 64), [(2, None), (8, None)])
    m = LayerZoo()
    x = torch.randn(1, 3, 16, 16)
    export(m, x, os.path.join(out, "layer_zoo.onnx"), ["x"], img, 14)
    record(refs, "layer_zoo", m, x, resolution=16)
    record_saved(refs, "layer_zoo", m, lambda b, s: torch.randn(b, 3, 16, 16), [(2, None), (8, None)])
    m = TextCNN()
    export(m, ids, os.path.join(out, "textcnn_tiny.onnx"), ["ids"], {"ids": {0: "batch", 1: "seq"}}, 14)
    record(refs, "textcnn_tiny", m, ids, seq=seq)
    # count_macs hooks nn.Conv2d only: the Conv1d's seq x 32 x 16 x 5 added by hand
    refs["textcnn_tiny"]["macs_ops"]["conv1d"] = seq * 32 * 16 * 5
    refs["textcnn_tiny"]["macs"] += seq * 32 * 16 * 5
    record_saved(refs, "textcnn_tiny", m, lambda b, s: torch.randint(0, 500, (b, s)), tok_sizes)
    m = EmbedHead()
    x = torch.randn(1, 32)
    export(m, x, os.path.join(out, "embed_head.onnx"), ["x"], {"x": {0: "batch"}}, 14)
    record(refs, "embed_head", m, x)
    record_saved(refs, "embed_head", m, lambda b, s: torch.randn(b, 32), [(2, None), (8, None)])
    m = DecoderTiny()
    export(m, ids % 100, os.path.join(out, "decoder_tiny.onnx"), ["ids"], {"ids": {0: "batch", 1: "seq"}}, 14)
    refs["decoder_tiny"] = dict(params=sum(p.numel() for p in m.parameters()), seq=seq,
                                lora_r8_all_linear=peft_all_linear(m, 8))
    record_saved(refs, "decoder_tiny", m, lambda b, s: torch.randint(0, 100, (b, s)), tok_sizes)
    if big:
        import torchvision.models as tv
        for name in ("resnet18", "resnet50", "mobilenet_v2"):
            m = getattr(tv, name)(weights=None)
            x = torch.randn(1, 3, 224, 224)
            export(m, x, os.path.join(out, name + ".onnx"), ["x"], img, 13)
            record(refs, name, m, x, resolution=224)
            record_saved(refs, name, m, lambda b, s: torch.randn(b, 3, 224, 224), [(2, None), (8, None)])
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(refs, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
