"""Models built from torch.nn, with random weights and small default sizes, that the
torch.compile backend's tests (test_torch_backend.py, test_torch_models.py) and the
benchmarks (bench/python/torch_blocks.py, bench/torch/run.py) compile."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GPT2Block(nn.Module):
    """GPT-2's block: pre-LN causal self-attention and a tanh-GELU MLP."""

    def __init__(self, d=64, heads=4, context=16):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads
        self.register_buffer("bias", torch.tril(torch.ones(context, context)).view(1, 1, context, context))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class BertLayer(nn.Module):
    """BERT's encoder layer: post-LN attention with a padding mask, erf-GELU FFN."""

    def __init__(self, d=64, heads=4, ffn=256):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln_attn, self.ln_out = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.up, self.down = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.heads = heads

    def forward(self, x, mask):
        B, T, C = x.shape

        def heads(t):
            return t.view(B, T, self.heads, C // self.heads).permute(0, 2, 1, 3)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(C // self.heads)
        scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
        ctx = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(B, T, C)
        x = self.ln_attn(x + self.o(ctx))
        return self.ln_out(x + self.down(F.gelu(self.up(x))))


class LlamaBlock(nn.Module):
    """A Llama-style decoder block: pre-RMSNorm, rotary position embedding on the
    queries and keys (the halves of each head rotated), grouped-query causal attention
    (fewer key/value heads than query heads, each shared by a group), and a SwiGLU MLP
    (silu of one projection times another); no biases."""

    def __init__(self, d=64, heads=4, kv_heads=2, hidden=172, context=16):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.attn_norm, self.mlp_norm = nn.RMSNorm(d, eps=1e-6), nn.RMSNorm(d, eps=1e-6)
        self.wq = nn.Linear(d, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, d, bias=False)
        self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)
        frequencies = 10000.0 ** (-torch.arange(0, self.head_dim, 2).float() / self.head_dim)
        angles = torch.outer(torch.arange(context).float(), frequencies)  # [context, head_dim / 2]
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())
        self.register_buffer("causal", torch.tril(torch.ones(context, context, dtype=torch.bool)))

    def rotate(self, t):
        """t: [B, H, T, head_dim]; each position's two halves rotated by its angles."""
        half = self.head_dim // 2
        a, b = t[..., :half], t[..., half:]
        cos, sin = self.cos[: t.shape[2]], self.sin[: t.shape[2]]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)

    def forward(self, x):
        B, T, C = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = self.rotate(q), self.rotate(k)
        group = self.heads // self.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        att = att.masked_fill(~self.causal[:T, :T], float("-inf")).softmax(-1)
        x = x + self.wo((att @ v).transpose(1, 2).reshape(B, T, C))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class T5LayerNorm(nn.Module):
    """T5's layer norm: scaled by the root mean square, no mean subtracted, no bias; the
    mean square taken in f32 whatever the activations' dtype, as T5 does."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x.float() * torch.rsqrt(variance + self.eps)).to(self.weight.dtype)


class T5Block(nn.Module):
    """T5 v1.1's encoder block: T5 layer norms, self-attention with no 1/sqrt(d) scaling
    and an additive relative position bias, a gated-GELU FFN (tanh GELU of one
    projection times another); no biases. T5 computes the position bias from bucketed
    relative positions in its first layer and shares it; here it is a parameter of that
    shape, [1, heads, context, context]."""

    def __init__(self, d=64, heads=4, ffn=128, context=16):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.attn_norm, self.ffn_norm = T5LayerNorm(d), T5LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.position_bias = nn.Parameter(torch.zeros(1, heads, context, context))
        self.wi_0, self.wi_1 = nn.Linear(d, ffn, bias=False), nn.Linear(d, ffn, bias=False)
        self.wo = nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        B, T, C = x.shape

        def heads(t):
            return t.view(B, T, self.heads, self.head_dim).transpose(1, 2)

        h = self.attn_norm(x)
        q, k, v = heads(self.q(h)), heads(self.k(h)), heads(self.v(h))
        scores = q @ k.transpose(-1, -2) + self.position_bias[:, :, :T, :T]
        att = scores.float().softmax(-1).type_as(scores)
        x = x + self.o((att @ v).transpose(1, 2).reshape(B, T, C))
        h = self.ffn_norm(x)
        return x + self.wo(F.gelu(self.wi_0(h), approximate="tanh") * self.wi_1(h))


class ViTBlock(nn.Module):
    """The Vision Transformer's encoder block: pre-LN self-attention over all patches
    (no mask) and an erf-GELU MLP, with biases."""

    def __init__(self, d=64, heads=4, mlp=256):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, mlp), nn.Linear(mlp, d)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(self.norm1(x)).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        att = (q @ k.transpose(-2, -1) * (C // self.heads) ** -0.5).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class MixerBlock(nn.Module):
    """MLP-Mixer's block: a token-mixing MLP applied across the patches (the token axis
    transposed to last) and a channel-mixing MLP across the channels, each after a
    LayerNorm and with a residual; GELU."""

    def __init__(self, tokens=16, d=64, tokens_hidden=32, channels_hidden=256):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, tokens_hidden), nn.GELU(), nn.Linear(tokens_hidden, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(d, channels_hidden), nn.GELU(), nn.Linear(channels_hidden, d))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class LMHead(nn.Module):
    """A language model's head and loss: the final LayerNorm, the projection to the
    vocabulary (no bias) and the mean cross-entropy against the next tokens, the logits
    made f32 first as Hugging Face's causal models do; returns the scalar loss."""

    def __init__(self, d=64, vocab=512):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, x, targets):
        logits = self.lm_head(self.norm(x)).float()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


class BertModel(nn.Module):
    """BERT's encoder: `layers` BertLayers (BERT-base has 12), each with the padding mask."""

    def __init__(self, layers=2, d=64, heads=4, ffn=256):
        super().__init__()
        self.layers = nn.ModuleList(BertLayer(d, heads, ffn) for _ in range(layers))

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return x


class LlamaDecoder(nn.Module):
    """A Llama-style decoder: `layers` LlamaBlocks and the final RMSNorm."""

    def __init__(self, layers=2, d=64, heads=4, kv_heads=2, hidden=172, context=16):
        super().__init__()
        self.layers = nn.ModuleList(LlamaBlock(d, heads, kv_heads, hidden, context) for _ in range(layers))
        self.norm = nn.RMSNorm(d, eps=1e-6)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class BasicBlock(nn.Module):
    """ResNet's two 3 x 3 convolutions with batch norm and the shortcut (a 1 x 1
    convolution where the stride or the width changes)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class ResNet18(nn.Module):
    """ResNet-18 (He et al. 2016): a 7 x 7 stem with max pooling, four stages of two
    basic blocks, global average pooling and a classifier; `width` the first stage's."""

    def __init__(self, width=64, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], width
        for stage, cout in enumerate((width, 2 * width, 4 * width, 8 * width)):
            for i in range(2):
                blocks.append(BasicBlock(cin, cout, 2 if stage > 0 and i == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        y = self.blocks(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: a 1 x 1 expansion, a 3 x 3 depthwise convolution and a
    1 x 1 projection, ReLU6 between, the input added back where the shape allows."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
                   nn.ReLU6(), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al. 2018), its 17 inverted residual blocks at width
    multiplier `alpha` (channels rounded to multiples of 8)."""

    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1))

    def __init__(self, alpha=1.0, classes=1000):
        super().__init__()

        def width(c):
            return max(8, int(c * alpha + 4) // 8 * 8)

        cin = width(32)
        layers = [nn.Conv2d(3, cin, 3, 2, 1, bias=False), nn.BatchNorm2d(cin), nn.ReLU6()]
        for expand, c, repeat, stride in self.SETTINGS:
            for i in range(repeat):
                layers.append(InvertedResidual(cin, width(c), stride if i == 0 else 1, expand))
                cin = width(c)
        last = max(1280, width(1280))
        layers += [nn.Conv2d(cin, last, 1, bias=False), nn.BatchNorm2d(last), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(last, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class SegmentationHead(nn.Module):
    """A feature-pyramid decoder of the kind segmentation networks (FPN, DeepLabv3+,
    U-Net) put on a backbone: two strided stages, the deeper one upsampled by nearest
    neighbour and added to a 1 x 1 lateral of the shallower, then per-pixel class logits
    resized bilinearly to the input's size (F.interpolate, ONNX's Resize)."""

    def __init__(self, width=64, classes=21):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Conv2d(3, width, 3, 2, 1), nn.BatchNorm2d(width), nn.ReLU())
        self.stage2 = nn.Sequential(nn.Conv2d(width, 2 * width, 3, 2, 1), nn.BatchNorm2d(2 * width), nn.ReLU())
        self.lateral = nn.Conv2d(width, 2 * width, 1)
        self.head = nn.Sequential(nn.Conv2d(2 * width, width, 3, 1, 1), nn.ReLU(), nn.Conv2d(width, classes, 1))

    def forward(self, x):
        c1 = self.stage1(x)
        c2 = self.stage2(c1)
        p = F.interpolate(c2, scale_factor=2, mode="nearest") + self.lateral(c1)
        return F.interpolate(self.head(p), size=x.shape[-2:], mode="bilinear", align_corners=False)


# The model set at the benchmarks' sizes or small, with its inputs: bench/torch/run.py
# (torch.compile) and bench/onnx/export.py (ONNX exports) run the same models.

def randomise(module):
    """Weights drawn at random, small (0.05) around 0, norms' scales around 1."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.05 + (1.0 if p.dim() == 1 else 0.0))
    return module


def hidden(b, t, d):
    return lambda: (torch.randn(b, t, d),)


def masked(b, t, d):
    """Hidden states and a padding mask over the last quarter of every sequence."""
    def make():
        mask = torch.ones(b, t)
        mask[:, t * 3 // 4:] = 0
        return torch.randn(b, t, d), mask
    return make


def with_targets(b, t, d, vocab):
    return lambda: (torch.randn(b, t, d), torch.randint(0, vocab, (b, t)))


def models(small):
    """name -> (sizes in words, model factory, input factory)."""
    if small:
        b, t, d, heads, ffn = 2, 16, 64, 4, 256
        llama = dict(d=64, heads=4, kv_heads=2, hidden=172, context=t)
        llama_b, vit_t, mixer = 2, 17, (16, 64, 32, 256)
        t5_ffn, vocab, bert_layers = 128, 512, 2
    else:
        b, t, d, heads, ffn = 8, 128, 768, 12, 3072
        # bench/python/torch_blocks.py's Llama-style sizes: SwiGLU over [4, 128, 688].
        llama = dict(d=256, heads=8, kv_heads=4, hidden=688, context=t)
        # ViT-B/16 on 224 x 224 (196 patches and the class token); Mixer-B/16.
        llama_b, vit_t, mixer = 4, 197, (196, 768, 384, 3072)
        t5_ffn, vocab, bert_layers = 2048, 32000, 12
    ld = llama["d"]
    llama_size = (f"[{llama_b}, {t}, {ld}], {llama['heads']} heads, {llama['kv_heads']} KV heads, "
                  f"SwiGLU {llama['hidden']}")
    return {
        "bert_layer": (f"[{b}, {t}, {d}], {heads} heads, FFN {ffn}", lambda: BertLayer(d, heads, ffn), masked(b, t, d)),
        "gpt2_block": (f"[{b}, {t}, {d}], {heads} heads", lambda: GPT2Block(d, heads, t), hidden(b, t, d)),
        "llama_block": (llama_size, lambda: LlamaBlock(**llama), hidden(llama_b, t, ld)),
        "t5_block": (f"[{b}, {t}, {d}], {heads} heads, gated FFN {t5_ffn}", lambda: T5Block(d, heads, t5_ffn, t),
                     hidden(b, t, d)),
        "vit_block": (f"[{b}, {vit_t}, {d}], {heads} heads, MLP {ffn}", lambda: ViTBlock(d, heads, ffn),
                      hidden(b, vit_t, d)),
        "mixer_block": (f"[{b}, {mixer[0]}, {mixer[1]}], token MLP {mixer[2]}, channel MLP {mixer[3]}",
                        lambda: MixerBlock(*mixer), hidden(b, mixer[0], mixer[1])),
        "lm_head": (f"[{b}, {t}, {d}] -> vocabulary {vocab}, cross-entropy", lambda: LMHead(d, vocab),
                    with_targets(b, t, d, vocab)),
        "bert_model": (f"{bert_layers} BERT layers, [{b}, {t}, {d}], {heads} heads, FFN {ffn}",
                       lambda: BertModel(bert_layers, d, heads, ffn), masked(b, t, d)),
        "llama_decoder": (f"2 Llama-style blocks and RMSNorm, {llama_size}", lambda: LlamaDecoder(2, **llama),
                          hidden(llama_b, t, ld)),
    }


def cnn_models(small):
    """The convolutional networks of the ONNX model set (bench/onnx/), as models()."""
    if small:
        b, side, resnet_width, alpha, classes, seg_width, seg_classes = 2, 32, 16, 0.25, 10, 16, 5
    else:
        b, side, resnet_width, alpha, classes, seg_width, seg_classes = 8, 224, 64, 1.0, 1000, 64, 21
    images = (lambda: (torch.randn(b, 3, side, side),))
    return {
        "resnet18": (f"[{b}, 3, {side}, {side}], width {resnet_width}, {classes} classes",
                     lambda: ResNet18(resnet_width, classes), images),
        "mobilenet_v2": (f"[{b}, 3, {side}, {side}], width multiplier {alpha}, {classes} classes",
                         lambda: MobileNetV2(alpha, classes), images),
        "segmentation": (f"[{b}, 3, {side}, {side}], width {seg_width}, {seg_classes} classes",
                         lambda: SegmentationHead(seg_width, seg_classes), images),
    }
