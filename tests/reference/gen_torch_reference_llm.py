#!/usr/bin/python3
"""Saved-activation references for the llama and vit templates and for LoRA (issue 15).

A sibling of gen_torch_reference.py: the same measurement (its measure_saved and count_macs:
saved_tensors_hooks, each storage once, parameters and buffers excluded, CPU, fp32,
torch.manual_seed(0), torch 1.13.1 / torchvision 0.14.1 from Debian) on three more families:

  llama    a decoder written in plain torch.nn that follows Hugging Face's eager LlamaModel /
           LlamaForCausalLM op sequence (transformers 4.40 modeling_llama.py, attention
           "eager"): embedding; per layer LlamaRMSNorm as HF writes it in Python
           (to(float32), pow(2).mean(-1, keepdim), rsqrt, mul, weight * x.to(input_dtype)),
           q/k/v/o projections without bias, cos/sin computed ONCE per forward by the model's
           rotary embedding and applied per layer with rotate_half, repeat_kv for grouped-query
           attention, eager attention (matmul, / sqrt(d), causal mask add, softmax in fp32
           then cast, dropout p=0, matmul), SwiGLU MLP (silu(gate) * up, down), residual adds;
           final norm; lm_head (logits, no loss).
  vit      torchvision.models.vision_transformer.VisionTransformer at reduced size (the class
           vit_b_16 builds; dropout 0 as vit_b_16's defaults), batch 2 and 8.
  frozen   the llama above with its embedding frozen (requires_grad=False), as dnnsat's
           --freeze embedding.
  lora     the llama above with peft-style lora.Linear wrappers (frozen base Linear, lora_A
           Linear(in, r, bias=False), lora_B Linear(r, out, bias=False), * scaling,
           lora_dropout: nn.Identity for 0 as peft, else nn.Dropout(p) taken through
           torch.native_dropout, the op F.dropout runs on CUDA, which keeps a bool mask;
           gen_torch_reference.NativeDropout), every non-LoRA parameter
           requires_grad=False (peft's get_peft_model), targets q_proj+v_proj or every Linear
           (lm_head included, as dnnsat's "linear" selector), r in {4, 16}, dropout 0, and
           0.05 / 0.1 (the values QLoRA's and peft's examples use); and the same with DoRA
           (peft's use_dora=True: DoraLinear below), the rows with use_dora 1.
  embed    LoRA on the llama's token embedding (peft's lora.Embedding: LoraEmbedding below), alone
           at r 8 and beside q and v at r 4.
  conv     LoRA on convolutions (peft's lora.Conv2d: LoraConv2d below): torchvision's resnet18
           (10 classes, 64 x 64) with every Conv2d adapted, r 4 and r 8 at dropout 0.1.

params excludes peft's adapters and DoRA's magnitudes (as dnnsat's params does); trainable_params is the sum of numel over parameters with requires_grad. MACs are counted at
batch 1 by count_macs (Linear/Conv2d hooks and the attention matmuls); for the vit, whose
nn.MultiheadAttention calls F.linear / bmm inside torch (no module hooks fire for its in/out
projections nor the attention matmuls), those are added in closed form per block:
tokens * 4 * hidden^2 + 2 * tokens^2 * hidden.

Rerun (from the repository root; about ten seconds):
    /usr/bin/python3 tests/reference/gen_torch_reference_llm.py > tests/reference/torch_reference_llm.json
It writes the JSON to stdout and torch_reference_llm.csv next to this script.
"""

import csv
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_torch_reference as ref  # noqa: E402

GENERATOR = "tests/reference/gen_torch_reference_llm.py"
HERE = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------------------------
# LLaMA (Hugging Face modeling_llama.py, eager attention)
class LlamaConfig:
    def __init__(self, vocab, hidden, intermediate, layers, heads, kv_heads):
        self.vocab_size = vocab
        self.hidden_size = hidden
        self.intermediate_size = intermediate
        self.num_hidden_layers = layers
        self.num_attention_heads = heads
        self.num_key_value_heads = kv_heads
        self.rms_norm_eps = 1e-6
        self.rope_theta = 10000.0
        self.attention_dropout = 0.0


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.hidden_size = c.hidden_size
        self.num_heads = c.num_attention_heads
        self.head_dim = c.hidden_size // c.num_attention_heads
        self.num_key_value_heads = c.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.attention_dropout = c.attention_dropout
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.hidden_size, self.hidden_size, bias=False)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        kt = key_states.transpose(2, 3)
        ref._count_matmul(query_states, kt)
        attn_weights = torch.matmul(query_states, kt) / math.sqrt(self.head_dim)
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_weights = F.dropout(attn_weights, p=self.attention_dropout, training=self.training)
        ref._count_matmul(attn_weights, value_states)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = LlamaRMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(c.hidden_size, eps=c.rms_norm_eps)

    def forward(self, hidden_states, attention_mask, position_embeddings):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, attention_mask, position_embeddings)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c.num_hidden_layers)])
        self.norm = LlamaRMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(c.hidden_size // c.num_attention_heads, c.rope_theta)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        bsz, seq = input_ids.shape
        position_ids = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        # HF _update_causal_mask: a float (batch, 1, q, kv) mask of 0 / finfo.min, no grad
        min_dtype = torch.finfo(inputs_embeds.dtype).min
        causal = torch.full((seq, seq), min_dtype, dtype=inputs_embeds.dtype, device=input_ids.device)
        causal = torch.triu(causal, diagonal=1)[None, None, :, :].expand(bsz, 1, -1, -1)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, causal, position_embeddings)
        hidden_states = self.norm(hidden_states)
        return self.lm_head(hidden_states).float()


# --------------------------------------------------------------------------------------------
# peft's LoraLayer with one adapter: base_layer(x) + lora_B(lora_A(lora_dropout(x))) * alpha / r
# (lora_dropout=0 -> Identity, else Dropout: here CUDA's native_dropout)
class LoraLayer(nn.Module):
    def __init__(self, base, lora_A, lora_B, r, alpha, dropout):
        super().__init__()
        self.base_layer = base
        self.lora_dropout = ref.NativeDropout(dropout) if dropout > 0 else nn.Identity()
        self.lora_A = lora_A
        self.lora_B = lora_B
        self.scaling = alpha / r
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        result = self.base_layer(x)
        return result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


# peft's lora.Linear: Linear(in, r) and Linear(r, out), without bias
class LoraLinear(LoraLayer):
    def __init__(self, base, r, alpha, dropout=0.0):
        super().__init__(base, nn.Linear(base.in_features, r, bias=False), nn.Linear(r, base.out_features, bias=False),
                         r, alpha, dropout)


# peft's DoRA (LoraConfig(use_dora=True): tuners/lora/dora.py DoraLinearLayer, called by
# variants.DoraLinearVariant.forward), from its source:
#   magnitude   a trainable [out] vector, ||W + s * B @ A|| per output row when made (fp32, as
#               peft's autocast_adapter_dtype upcasts every adapter)
#   forward     result = base_layer(x); x = lora_dropout(x) where it is not the identity;
#               lora_weight = lora_B(lora_A(eye(in))).T, used only detached, so its graph is
#               dropped when the forward returns: computed here under no_grad, which keeps the
#               same tensors at the end of the forward;
#               weight_norm = ||W + s * lora_weight|| per row, detached;
#               mag_norm_scale = (magnitude / weight_norm).view(1, -1);
#               base_result = result (less the bias) when the dropout is the identity, else
#               F.linear(dropped x, W) again;
#               result + (mag_norm_scale - 1) * base_result + mag_norm_scale * lora_B(lora_A(x)) * s
class DoraLinear(LoraLinear):
    def __init__(self, base, r, alpha, dropout=0.0):
        super().__init__(base, r, alpha, dropout)
        with torch.no_grad():
            w = base.weight + self.scaling * (self.lora_B.weight @ self.lora_A.weight)
        self.lora_magnitude_vector = nn.Parameter(torch.linalg.norm(w, dim=1))

    def forward(self, x):
        result = self.base_layer(x)
        identity = isinstance(self.lora_dropout, nn.Identity)
        xd = x if identity else self.lora_dropout(x)
        with torch.no_grad():
            eye = torch.eye(self.lora_A.in_features, dtype=x.dtype)
            lora_weight = self.lora_B(self.lora_A(eye)).T
            weight_norm = torch.linalg.norm(self.base_layer.weight + self.scaling * lora_weight, dim=1)
        mag_norm_scale = (self.lora_magnitude_vector / weight_norm).view(1, -1)
        lora_result = self.lora_B(self.lora_A(xd))
        if not identity:
            base_result = F.linear(xd, self.base_layer.weight)
        elif self.base_layer.bias is not None:
            base_result = result - self.base_layer.bias
        else:
            base_result = result
        return result + ((mag_norm_scale - 1) * base_result + mag_norm_scale * lora_result * self.scaling)


# peft's lora.Conv2d (tuners/lora/layer.py _ConvNd): lora_A the base's kind with its kernel, stride
# and padding (no dilation, no groups), lora_B a 1x1 with the base's groups, both without bias
class LoraConv2d(LoraLayer):
    def __init__(self, base, r, alpha, dropout=0.0):
        super().__init__(base, nn.Conv2d(base.in_channels, r, base.kernel_size, base.stride, base.padding, bias=False),
                         nn.Conv2d(r, base.out_channels, 1, 1, groups=base.groups, bias=False), r, alpha, dropout)


# peft's DoRA on a convolution (tuners/lora/dora.py _DoraConvNdLayer, called by
# variants._DoraConvNdVariant.forward), from its source:
#   magnitude   a trainable [1, out, 1, 1] tensor, ||W + s * lora_weight|| over (in, kh, kw)
#   forward     result = base_layer(x); x = lora_dropout(x) where it is not the identity;
#               lora_weight = mm(lora_B.weight.view(-1, r), lora_A.weight.view(r, -1)), reshaped
#               as W: used only detached (computed here under no_grad: the same tensors are
#               kept at the end of the forward);
#               weight_norm = ||W + s * lora_weight|| over (in, kh, kw), detached, [1, out, 1, 1];
#               mag_norm_scale = magnitude / weight_norm;
#               base_result = result (less the bias) when the dropout is the identity, else
#               conv(dropped x, W) again, without bias;
#               result + (mag_norm_scale - 1) * base_result + mag_norm_scale * lora_B(lora_A(x)) * s
class DoraConv2d(LoraConv2d):
    def __init__(self, base, r, alpha, dropout=0.0):
        super().__init__(base, r, alpha, dropout)
        with torch.no_grad():
            self.lora_magnitude_vector = nn.Parameter(self.weight_norm())

    def weight_norm(self):
        r = self.lora_A.weight.shape[0]
        w = self.base_layer.weight
        lora_weight = torch.mm(self.lora_B.weight.view([-1, r]), self.lora_A.weight.view([r, -1])).reshape(w.shape)
        return (w + self.scaling * lora_weight).norm(p=2, dim=(1, 2, 3), keepdim=True).transpose(1, 0)

    def forward(self, x):
        result = self.base_layer(x)
        identity = isinstance(self.lora_dropout, nn.Identity)
        xd = x if identity else self.lora_dropout(x)
        with torch.no_grad():
            weight_norm = self.weight_norm()
        mag_norm_scale = self.lora_magnitude_vector / weight_norm
        b = self.base_layer
        if not identity:
            base_result = F.conv2d(xd, b.weight, None, b.stride, b.padding, b.dilation, b.groups)
        elif b.bias is not None:
            base_result = result - b.bias.view(1, -1, 1, 1)
        else:
            base_result = result
        return result + ((mag_norm_scale - 1) * base_result +
                         mag_norm_scale * self.lora_B(self.lora_A(xd)) * self.scaling)


def apply_lora_conv(model, r, dropout=0.0, dora=False):
    """Wraps every nn.Conv2d in LoraConv2d (DoraConv2d with dora; dnnsat's "conv2d" target),
    then freezes every parameter but the adapters'."""
    for p in model.parameters():
        p.requires_grad_(False)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Conv2d):
                setattr(parent, name, (DoraConv2d if dora else LoraConv2d)(child, r, 2 * r, dropout))
    return model


def conv_closed_form_macs(model, image):
    """DoRA's products on convolutions that no module hook sees, at batch 1: lora_weight's mm
    (W's elements x r per adapted conv) and, with a dropout, the base convolution again on the
    dropped input (its output's elements x in / groups x kernel)."""
    macs, hooks = 0, []

    def conv_again(m, inp, out):
        nonlocal macs
        if isinstance(m.lora_dropout, nn.Identity):
            return
        k = m.base_layer.kernel_size
        macs += out.numel() * m.base_layer.in_channels // m.base_layer.groups * k[0] * k[1]

    for m in model.modules():
        if isinstance(m, DoraConv2d):
            macs += m.base_layer.weight.numel() * m.lora_A.weight.shape[0]
            hooks.append(m.register_forward_hook(conv_again))
    with torch.no_grad():
        model(image)
    for h in hooks:
        h.remove()
    return macs


def conv_lora_row(name, model, image, rank, dropout, dora):
    """A CNN (10 classes) with every Conv2d adapted (apply_lora_conv), measured at batch 2 on
    image x image inputs: its row and detail."""
    m = apply_lora_conv(model, rank, dropout, dora)
    cfg = {"image_size": image, "num_classes": 10, "lora_r": rank, "lora_targets": "conv2d",
           "lora_dropout": dropout, "use_dora": int(dora)}
    m.eval()
    extra = conv_closed_form_macs(m, torch.randn(1, 3, image, image))
    m.train()
    return measure(name, "lora", m, lambda b: torch.randn(b, 3, image, image), 2, cfg, extra)


def closed_form_macs(model, tokens):
    """The adapters' products no module hook sees, added in closed form: DoRA with a dropout runs
    the base layer's F.linear again on the dropped input (tokens * in * out per such layer),
    LoRA on an embedding multiplies after_A by B.T (tokens * r * dim), and DoRA on an embedding
    makes lora_weight = A.T @ B.T (num * r * dim, at any batch)."""
    return (sum(tokens * m.base_layer.in_features * m.base_layer.out_features for m in model.modules()
                if isinstance(m, DoraLinear) and not isinstance(m.lora_dropout, nn.Identity)) +
            sum(tokens * m.lora_embedding_B.numel() for m in model.modules() if isinstance(m, LoraEmbedding)) +
            sum(m.base_layer.weight.numel() * m.lora_embedding_A.shape[0] for m in model.modules()
                if isinstance(m, DoraEmbedding)))


# peft's lora.Embedding: A [r, num] and B [dim, r] parameters; F.embedding(ids, A.T) @ B.T * scaling
# added to the frozen lookup (its lora_dropout is never called)
class LoraEmbedding(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base_layer = base
        self.lora_embedding_A = nn.Parameter(torch.zeros(r, base.num_embeddings))
        self.lora_embedding_B = nn.Parameter(torch.randn(base.embedding_dim, r))
        self.scaling = alpha / r

    def forward(self, x):
        result = self.base_layer(x)
        after_A = F.embedding(x, self.lora_embedding_A.T)
        return result + (after_A @ self.lora_embedding_B.T) * self.scaling


# peft's DoRA on an embedding (tuners/lora/dora.py DoraEmbeddingLayer, called by
# variants.DoraEmbeddingVariant.forward), from its source:
#   magnitude   a trainable [dim] vector, ||W.T + s * lora_weight|| per row of W.T
#   forward     result = base_layer(x); lora_weight = (A.T @ B.T).T ([dim, num]), used only
#               detached (here under no_grad); weight_norm = ||W.T + s * lora_weight|| per row,
#               detached; mag_norm_scale = magnitude / weight_norm;
#               dora_result = mag_norm_scale * (F.embedding(x, A.T) @ B.T) * s;
#               mag_norm_scale * result + dora_result
class DoraEmbedding(LoraEmbedding):
    def __init__(self, base, r, alpha):
        super().__init__(base, r, alpha)
        with torch.no_grad():
            self.lora_magnitude_vector = nn.Parameter(self.weight_norm())

    def weight_norm(self):
        lora_weight = (self.lora_embedding_A.T @ self.lora_embedding_B.T).T
        return torch.linalg.norm(self.base_layer.weight.T + self.scaling * lora_weight, dim=1)

    def forward(self, x):
        result = self.base_layer(x)
        with torch.no_grad():
            weight_norm = self.weight_norm()
        mag_norm_scale = self.lora_magnitude_vector / weight_norm
        after_A = F.embedding(x, self.lora_embedding_A.T)
        dora_result = mag_norm_scale * (after_A @ self.lora_embedding_B.T) * self.scaling
        return mag_norm_scale * result + dora_result


def apply_lora(model, r, targets, dropout=0.0, dora=False):
    """Wraps every nn.Linear whose attribute name is in targets (None: every Linear) in
    LoraLinear (DoraLinear with dora), and every nn.Embedding whose name is in targets in
    LoraEmbedding (DoraEmbedding with dora), then freezes every parameter but the adapters'."""
    for p in model.parameters():
        p.requires_grad_(False)
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear) and (targets is None or name in targets):
                setattr(parent, name, (DoraLinear if dora else LoraLinear)(child, r, 2 * r, dropout))
            elif isinstance(child, nn.Embedding) and targets is not None and name in targets:
                setattr(parent, name, (DoraEmbedding if dora else LoraEmbedding)(child, r, 2 * r))
    return model


# --------------------------------------------------------------------------------------------
def vit_attention_macs(tokens, hidden, layers):
    return layers * (tokens * 4 * hidden * hidden + 2 * tokens * tokens * hidden)


def measure(name, family, model, make_input, batch, cfg, extra_macs=0):
    torch.manual_seed(0)
    # the model's own parameters: peft's adapters (lora_A, lora_B) are in trainable_params only,
    # as dnnsat's "params" excludes them
    params = sum(p.numel() for n, p in model.named_parameters() if ".lora_" not in n)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    macs, macs_by = ref.count_macs(model, make_input(1))
    macs += extra_macs
    if extra_macs:
        macs_by["closed_form"] = extra_macs
    res = ref.measure_saved(model, make_input(batch), False)
    row = {"model": name, "family": family, "batch": batch, **cfg, "params": params,
           "trainable_params": trainable, "macs_batch1": macs,
           "saved_activation_bytes": res["saved_activation_bytes"],
           "saved_input_bytes": res["saved_input_bytes"]}
    ref.log("%-22s batch %d %s saved %d" % (name, batch, cfg, res["saved_activation_bytes"]))
    return row, {"row": row, "macs_by_op": macs_by, **res}


LLAMA_SIZES = [  # vocab, hidden, intermediate, layers, heads, kv_heads, seq, batch
    (256, 64, 172, 2, 4, 4, 16, 2),
    (512, 128, 344, 2, 4, 2, 32, 2),
    (1000, 256, 688, 2, 4, 2, 64, 1),
    (512, 128, 344, 2, 4, 1, 32, 2),      # multi-query: groups of 4
]
VIT = dict(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=128, mlp_dim=256,
           num_classes=10)
# LoRA on the multi-head llama (kv_heads = heads); grouped-query rows are in LLAMA_SIZES
LORA_BASE = (512, 128, 344, 2, 4, 4, 32, 2)
CSV_COLS = ["model", "family", "batch", "seq_len", "image_size", "vocab", "hidden", "intermediate",
            "layers", "heads", "kv_heads", "patch", "mlp_dim", "num_classes", "lora_r",
            "lora_targets", "lora_dropout", "use_dora", "frozen", "params", "trainable_params", "macs_batch1", "saved_activation_bytes",
            "saved_input_bytes"]


def llama_model(size):
    vocab, hidden, inter, layers, heads, kv, seq, batch = size
    torch.manual_seed(0)
    m = LlamaForCausalLM(LlamaConfig(vocab, hidden, inter, layers, heads, kv))
    cfg = {"seq_len": seq, "vocab": vocab, "hidden": hidden, "intermediate": inter, "layers": layers,
           "heads": heads, "kv_heads": kv}
    return m, cfg, (lambda b: torch.randint(0, vocab, (b, seq))), batch


def write_csv(path, cols, rows):
    """rows (dicts) as CSV with these columns, empty where a row has none."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in cols})


def main():
    torch.set_num_threads(2)
    rows, detail = [], []
    for size in LLAMA_SIZES:
        m, cfg, inp, batch = llama_model(size)
        r, d = measure("llama", "llama", m, inp, batch, cfg)
        rows.append(r)
        detail.append(d)
    for batch in (2, 8):
        torch.manual_seed(0)
        m = torchvision.models.vision_transformer.VisionTransformer(**VIT)
        cfg = {"image_size": VIT["image_size"], "patch": VIT["patch_size"], "hidden": VIT["hidden_dim"],
               "layers": VIT["num_layers"], "heads": VIT["num_heads"], "mlp_dim": VIT["mlp_dim"],
               "num_classes": VIT["num_classes"]}
        tokens = (VIT["image_size"] // VIT["patch_size"]) ** 2 + 1
        r, d = measure("vit", "vit", m, lambda b: torch.randn(b, 3, VIT["image_size"], VIT["image_size"]),
                       batch, cfg, vit_attention_macs(tokens, VIT["hidden_dim"], VIT["num_layers"]))
        rows.append(r)
        detail.append(d)
    # a frozen embedding (dnnsat's --freeze embedding): the first RMSNorm's input needs no
    # gradient, so of its ops only weight * h, for the weight's gradient, keeps anything (h)
    m, cfg, inp, batch = llama_model(LORA_BASE)
    m.embed_tokens.weight.requires_grad_(False)
    r, d = measure("llama", "llama", m, inp, batch, dict(cfg, frozen="embedding"))
    rows.append(r)
    detail.append(d)
    qv = (("q_proj", "v_proj"), "attention.q+attention.v")
    lora_runs = [(qv, 4, 0.0), (qv, 16, 0.0), ((None, "linear"), 4, 0.0), ((None, "linear"), 16, 0.0),
                 (qv, 16, 0.05), ((None, "linear"), 4, 0.1)]
    lora_runs = [run + (False,) for run in lora_runs] + [
        (qv, 4, 0.0, True), ((None, "linear"), 16, 0.0, True), (qv, 16, 0.05, True),
        ((None, "linear"), 4, 0.1, True),
        # LoRA on the token embedding (peft's lora.Embedding), alone and beside q and v
        ((("embed_tokens",), "embed_tokens"), 8, 0.0, False),
        ((("embed_tokens", "q_proj", "v_proj"), "embed_tokens+attention.q+attention.v"), 4, 0.0, False),
        # DoRA on the token embedding (peft's DoraEmbeddingLayer), alone and beside q and v
        ((("embed_tokens",), "embed_tokens"), 8, 0.0, True),
        ((("embed_tokens", "q_proj", "v_proj"), "embed_tokens+attention.q+attention.v"), 4, 0.0, True)]
    for (targets, label), rank, dropout, dora in lora_runs:
        m, cfg, inp, batch = llama_model(LORA_BASE)
        apply_lora(m, rank, targets, dropout, dora)
        cfg = dict(cfg, lora_r=rank, lora_targets=label, lora_dropout=dropout, use_dora=int(dora))
        r, d = measure("llama-lora", "lora", m, inp, batch, cfg, closed_form_macs(m, cfg["seq_len"]))
        rows.append(r)
        detail.append(d)
    # LoRA and DoRA on convolutions: torchvision's resnet18 (10 classes) at 64 x 64, every Conv2d
    # adapted
    for rank, dropout, dora in [(4, 0.0, False), (8, 0.1, False), (4, 0.0, True), (8, 0.1, True)]:
        torch.manual_seed(0)
        r, d = conv_lora_row("resnet18-lora", torchvision.models.resnet18(num_classes=10), 64, rank, dropout, dora)
        rows.append(r)
        detail.append(d)
    # DoRA on convolutions with a bias (base_result = result - bias; with a dropout the second
    # convolution has none): torchvision's alexnet (10 classes) at 224 x 224, every Conv2d adapted,
    # its classifier's nn.Dropout as CUDA runs it (native_dropout)
    for rank, dropout in [(4, 0.0), (4, 0.1)]:
        torch.manual_seed(0)
        m = torchvision.models.alexnet(num_classes=10)
        for parent in list(m.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Dropout):
                    setattr(parent, name, ref.NativeDropout(child.p))
        r, d = conv_lora_row("alexnet-lora", m, 224, rank, dropout, True)
        rows.append(r)
        detail.append(d)
    write_csv(os.path.join(HERE, "torch_reference_llm.csv"), CSV_COLS, rows)
    json.dump({"generator": GENERATOR, "torch": torch.__version__, "torchvision": torchvision.__version__,
               "macs_ops": ref.MACS_OPS, "models": detail}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
