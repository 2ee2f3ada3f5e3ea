#!/usr/bin/python3
"""Quantized base weights (QLoRA's 4-bit, LLM.int8()) on the reference llama: weight storage and
saved activations.

bitsandbytes needs CUDA and is not a Debian package, so this emulates, in plain torch on the CPU,
what bitsandbytes 0.45's Linear4bit and Linear8bitLt allocate and what their autograd functions
keep, as its source states them (functional.py quantize_4bit / dequantize_4bit /
quantize_blockwise; nn/modules.py Linear4bit, Linear8bitLt, Int8Params; autograd/_functions.py
MatMul4Bit, MatMul8bitLt; backends/cuda/ops.py int8_vectorwise_quant, int8_mixed_scaled_mm) and as
transformers' replace_with_bnb_linear picks the modules (every nn.Linear but the output embedding,
lm_head: get_keys_to_not_convert):

4-bit (nf4, nf4-dq):

  storage   the weight of n values packed two 4-bit codes a byte: (n + 1) // 2 uint8 (an
            nn.Parameter, requires_grad=False); its QuantState: absmax, an fp32 per block of 64
            values, and code, the 16-value fp32 table of the type (a tensor per layer). With
            double quantization (compress_statistics) absmax, less its mean (offset, an fp32
            scalar tensor), is quantized blockwise to uint8 (256 values a block) with one fp32
            absmax per block (state2); state2's 256-value dynamic code is one cached tensor for
            the whole model (not counted per layer).
  forward   Linear4bit casts the input to the compute dtype (here fp32, bitsandbytes' default,
            so no copy) and calls MatMul4Bit: the weight dequantized (NF4: each code's value
            times its block's absmax), F.linear, the result cast back to the input's dtype.
  backward  MatMul4Bit keeps the packed weight as a ctx attribute (not save_for_backward: the
            saved-tensor hooks do not see it, and it is a parameter anyway) and nothing of the
            input; it dequantizes again for the input's gradient. The weight takes no gradient.

8-bit (int8: load_in_8bit, llm_int8_threshold 6.0, has_fp16_weights False):
  storage   Int8Params: CB, the weight as int8 [out, in] (round(w * 127 / the row's absmax)), and
            SCB, the fp32 absmax of each output row (a tensor of its own).
  forward   MatMul8bitLt: the input's outlier columns (any |x| >= 6) found, the input quantized per
            row to int8 with those columns zeroed, the int8 product dequantized (times both rows'
            scales / 127^2), the outlier columns multiplied in floating point and added (subA, the
            input's outlier columns). The result has the input's dtype.
  backward  MatMul8bitLt keeps, where the input needs a gradient, the input itself and subA (its
            ctx.tensors: the emulation saves them with save_for_backward, so that the hooks count
            them: the same storages); the weight is dequantized again for the input's gradient.
            This llama's activations stay below the threshold: the rows assert no outlier column,
            so subA is empty.

Rows: the llama of gen_torch_reference_llm.py (LORA_BASE: vocab 512, hidden 128, 2 layers),
quantized (nf4, nf4-dq, int8) and then given peft-style LoRA (its apply_lora), as a QLoRA run loads the
4-bit model first: LoRA on every linear wraps lm_head unquantized. Columns: params (the model's own,
adapters excluded, as dnnsat counts them), trainable_params, weight_bytes (every parameter and
QuantState tensor, numel * element_size) and weight_alloc_bytes (each rounded up to 512 bytes,
the CUDA caching allocator's smallest block: every tensor here is under its 1 MiB small-pool
limit), saved_activation_bytes (gen_torch_reference.measure_saved: one train-mode forward,
each storage once, parameters and buffers excluded). The rotary inv_freq buffer is not a weight.

Rerun (from the repository root; a few seconds):
    /usr/bin/python3 tests/reference/gen_qlora_reference.py
It writes tests/reference/qlora_reference.csv next to this script.
"""

import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_torch_reference as ref  # noqa: E402
import gen_torch_reference_llm as llm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK = 64            # bitsandbytes' default 4-bit blocksize (BitsAndBytesConfig, Linear4bit)
NESTED_BLOCK = 256    # quantize_blockwise(absmax, blocksize=256) under double quantization
# the NF4 table (QLoRA's Appendix E; bitsandbytes get_4bit_type("nf4")): the quantiles of N(0, 1)
# normalised to [-1, 1], 8 positive and 7 negative values and 0
NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0]


def quantize_nf4(w, double):
    """The tensors quantize_4bit returns for weight w: packed codes and the QuantState's."""
    flat = w.detach().reshape(-1).float()
    n = flat.numel()
    blocks = -(n // -BLOCK)
    padded = torch.zeros(blocks * BLOCK)
    padded[:n] = flat
    absmax = padded.view(blocks, BLOCK).abs().amax(dim=1)
    scaled = padded.view(blocks, BLOCK) / absmax.clamp_min(1e-12)[:, None]
    table = torch.tensor(NF4)
    codes = (scaled.reshape(-1, 1) - table).abs().argmin(dim=1)[:n].to(torch.uint8)
    if n % 2:
        codes = torch.cat([codes, torch.zeros(1, dtype=torch.uint8)])
    packed = (codes[0::2] << 4) | codes[1::2]                 # (n + 1) // 2 bytes
    state = {"code": table.clone(), "blocks": blocks}
    if not double:
        state["absmax"] = absmax
        return packed, state
    offset = absmax.mean()
    centred = absmax - offset
    nb = -(blocks // -NESTED_BLOCK)
    pad2 = torch.zeros(nb * NESTED_BLOCK)
    pad2[:blocks] = centred
    absmax2 = pad2.view(nb, NESTED_BLOCK).abs().amax(dim=1)
    q = torch.round(pad2.view(nb, NESTED_BLOCK) / absmax2.clamp_min(1e-12)[:, None] * 127).to(torch.int8)
    state.update({"absmax": q.reshape(-1)[:blocks].view(torch.uint8).clone(), "absmax2": absmax2,
                  "offset": offset.reshape(())})
    return packed, state


def dequantize_nf4(packed, state, shape):
    n = shape[0] * shape[1]
    codes = torch.stack([packed >> 4, packed & 15], dim=1).reshape(-1)[:n].long()
    if "absmax2" in state:
        nb = state["absmax2"].numel()
        q = torch.zeros(nb * NESTED_BLOCK, dtype=torch.int8)
        q[:state["blocks"]] = state["absmax"].view(torch.int8)
        absmax = (q.view(nb, NESTED_BLOCK).float() / 127 * state["absmax2"][:, None]).reshape(-1)
        absmax = absmax[:state["blocks"]] + state["offset"]
    else:
        absmax = state["absmax"]
    vals = state["code"][codes]
    scale = absmax.repeat_interleave(BLOCK)[:n]
    return (vals * scale).view(shape)


class MatMul4Bit(torch.autograd.Function):
    """bitsandbytes' MatMul4Bit: keeps the packed weight as an attribute, nothing of the input."""

    @staticmethod
    def forward(ctx, x, packed, state, shape):
        ctx.packed, ctx.state, ctx.shape = packed, state, shape
        return torch.nn.functional.linear(x, dequantize_nf4(packed, state, shape).to(x.dtype))

    @staticmethod
    def backward(ctx, grad):
        w = dequantize_nf4(ctx.packed, ctx.state, ctx.shape).to(grad.dtype)
        return grad @ w, None, None, None


class Linear4bit(nn.Linear):
    """An nn.Linear, as bitsandbytes' (so that peft's LoRA wraps it), holding the packed weight."""

    def __init__(self, lin, double):
        nn.Module.__init__(self)
        self.in_features, self.out_features = lin.in_features, lin.out_features
        packed, self.state = quantize_nf4(lin.weight, double)
        self.weight = nn.Parameter(packed, requires_grad=False)
        self.bias = None if lin.bias is None else nn.Parameter(lin.bias.detach().clone(), requires_grad=False)
        self.shape = (lin.out_features, lin.in_features)

    def quant_state_tensors(self):
        return [v for v in self.state.values() if torch.is_tensor(v)]

    def forward(self, x):
        out = MatMul4Bit.apply(x, self.weight, self.state, self.shape)
        return out if self.bias is None else out + self.bias


THRESHOLD = 6.0       # transformers' BitsAndBytesConfig llm_int8_threshold default
OUTLIER_COLS = [0]    # outlier columns met by the int8 rows' forwards (asserted 0)


def quantize_int8_rows(w):
    """int8_vectorwise_quant: int8 values and the fp32 absmax of each row."""
    absmax = w.detach().float().abs().amax(dim=1)
    return torch.round(w.detach().float() * (127.0 / absmax.clamp_min(1e-12))[:, None]).to(torch.int8), absmax


class MatMul8bitLt(torch.autograd.Function):
    """bitsandbytes' MatMul8bitLt with a frozen int8 weight: keeps the input and its outlier
    columns where the input needs a gradient."""

    @staticmethod
    def forward(ctx, x, cb, scb):
        a = x.reshape(-1, x.shape[-1])
        cols = torch.argwhere((a.abs() >= THRESHOLD).any(dim=0)).view(-1)
        OUTLIER_COLS[0] += cols.numel()
        inlier = a.clone()
        inlier[:, cols] = 0
        ca, sca = quantize_int8_rows(inlier)
        out = (ca.float() @ cb.float().t()) * (sca[:, None] * scb[None, :] / (127.0 * 127.0))
        sub_a = a[:, cols].contiguous()
        if cols.numel():
            sub_b = (cb[:, cols].float() * (scb[:, None] / 127.0)).t()
            out = out.addmm(sub_a.float(), sub_b)
        ctx.cb, ctx.scb, ctx.shape = cb, scb, x.shape
        if ctx.needs_input_grad[0]:
            ctx.save_for_backward(x, sub_a)
        return out.to(x.dtype).view(*x.shape[:-1], cb.shape[0])

    @staticmethod
    def backward(ctx, grad):
        w = ctx.cb.to(grad.dtype) * (ctx.scb[:, None] / 127.0).to(grad.dtype)
        return (grad.reshape(-1, grad.shape[-1]) @ w).view(ctx.shape), None, None


class Linear8bitLt(nn.Linear):
    """An nn.Linear, as bitsandbytes' (so that peft's LoRA wraps it), holding CB and SCB."""

    def __init__(self, lin):
        nn.Module.__init__(self)
        self.in_features, self.out_features = lin.in_features, lin.out_features
        cb, self.scb = quantize_int8_rows(lin.weight)
        self.weight = nn.Parameter(cb, requires_grad=False)
        self.bias = None if lin.bias is None else nn.Parameter(lin.bias.detach().clone(), requires_grad=False)

    def quant_state_tensors(self):
        return [self.scb]

    def dequantized(self):
        return self.weight.float() * (self.scb[:, None] / 127.0)

    def forward(self, x):
        out = MatMul8bitLt.apply(x, self.weight, self.scb)
        return out if self.bias is None else out + self.bias


QUANTIZED = (Linear4bit, Linear8bitLt)


def quantize_model(model, mode, skip=("lm_head",)):
    """replace_with_bnb_linear, at load time (before peft): every nn.Linear but the output
    embedding."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear and name not in skip:
                setattr(parent, name, Linear8bitLt(child) if mode == "int8" else
                        Linear4bit(child, mode.endswith("-dq")))


def rounded(b):
    return -(b // -512) * 512


def weight_bytes(model):
    tensors = [p for p in model.parameters()]
    for m in model.modules():
        if isinstance(m, QUANTIZED):
            tensors += m.quant_state_tensors()
    raw = sum(t.numel() * t.element_size() for t in tensors)
    alloc = sum(rounded(t.numel() * t.element_size()) for t in tensors)
    assert max(t.numel() * t.element_size() for t in tensors) <= 1 << 20, "a tensor above the small pool"
    return raw, alloc


COLS = ["model", "batch", "seq_len", "vocab", "hidden", "intermediate", "layers", "heads", "kv_heads", "lora_r",
        "lora_targets", "quantize", "params", "trainable_params", "quantized_linears", "weight_bytes",
        "weight_alloc_bytes", "saved_activation_bytes"]


def main():
    torch.set_num_threads(2)
    rows = []
    qv = (("q_proj", "v_proj"), "attention.q+attention.v")
    for (targets, label), rank, mode in ((qv, 16, "nf4"), (qv, 16, "nf4-dq"), ((None, "linear"), 4, "nf4-dq"),
                                         (qv, 16, "int8"), ((None, "linear"), 4, "int8")):
        m, cfg, inp, batch = llm.llama_model(llm.LORA_BASE)
        params = sum(p.numel() for p in m.parameters())
        originals = {n: x.weight.detach().clone() for n, x in m.named_modules() if type(x) is nn.Linear}
        quantize_model(m, mode)
        llm.apply_lora(m, rank, targets)
        # the emulation computes: each dequantized weight within its block's quantization step
        for n, x in m.named_modules():
            if isinstance(x, QUANTIZED):
                o = originals[n.replace(".base_layer", "")]
                w = x.dequantized() if isinstance(x, Linear8bitLt) else dequantize_nf4(x.weight, x.state, x.shape)
                err = (w - o).abs().max().item()
                assert err <= (0.2 if isinstance(x, Linear4bit) else 0.01) * o.abs().max().item(), (n, err)
        trainable = sum(p.numel() for p in m.parameters() if p.requires_grad)
        raw, alloc = weight_bytes(m)
        torch.manual_seed(0)
        OUTLIER_COLS[0] = 0
        saved = ref.measure_saved(m, inp(batch), False)["saved_activation_bytes"]
        assert OUTLIER_COLS[0] == 0, "outlier columns: subA would be kept too"
        row = {"model": "llama-qlora", "batch": batch, **cfg, "lora_r": rank, "lora_targets": label, "quantize": mode,
               "params": params, "trainable_params": trainable,
               "quantized_linears": sum(1 for x in m.modules() if isinstance(x, QUANTIZED)),
               "weight_bytes": raw, "weight_alloc_bytes": alloc, "saved_activation_bytes": saved}
        ref.log("%s %s r %d %s: weights %d (%d allocated), saved %d" % (row["model"], mode, rank, label, raw, alloc,
                                                                         saved))
        rows.append(row)
    llm.write_csv(os.path.join(HERE, "qlora_reference.csv"), COLS, rows)


if __name__ == "__main__":
    main()
