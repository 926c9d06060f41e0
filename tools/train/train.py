#!/usr/bin/env python3
"""Trains the shipped test models (gufo-tiny, gufo-tiny-moe, gufo-tiny-draft) and their
tokenizer from the corpus of build_corpus.py, and writes transformers' reference logits.

On the GPU machine (PyTorch, transformers 5, tokenizers, safetensors, numpy), from the
repository root (tools/train/README.md has the whole procedure):

    PYTHONUNBUFFERED=1 python3 tools/train/train.py --corpus CORPUS_DIR --out OUT_DIR

Stages, each logged with its time: a byte-level BPE tokenizer (Qwen2 pre-tokenizer, ChatML
specials, the Qwen3 chat template); the token stream (documents and conversations separated
by <|endoftext|>, held-out documents and conversations apart); the three models trained from
a fixed seed on random 2048-token windows (bf16 autocast, AdamW, cosine schedule); each saved
as a Hugging Face folder with bf16 weights; then, with each folder reloaded as a user would:
held-out perplexity, reference logits (float64 forward, eager attention) for a held-out text,
the tool-call rate over sampled tries, and the draft's greedy agreement with gufo-tiny.
"""

import argparse
import copy
import json
import lzma
import math
import os
import random
import re
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tools" / "hf_reference"))

SPECIALS = [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
            ("<think>", False), ("</think>", False), ("<tool_call>", False), ("</tool_call>", False),
            ("<tool_response>", False), ("</tool_response>", False)]
N_VOCAB = 8192
N_CTX = 2048
REFERENCE_TOKENS = 160  # NOTE(train): [160, 8192] float32 is 5.2 MB a model, committed in models/

# name: (architecture, seed, shape, fraction of the training time)
MODELS = {
    "gufo-tiny": ("Qwen3ForCausalLM", 51, dict(
        hidden_size=512, num_hidden_layers=4, intermediate_size=1024, num_attention_heads=8,
        num_key_value_heads=2, head_dim=64), 0.42),
    "gufo-tiny-moe": ("Qwen3MoeForCausalLM", 52, dict(
        hidden_size=256, num_hidden_layers=4, intermediate_size=768, moe_intermediate_size=256,
        num_experts=8, num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1,
        mlp_only_layers=[], output_router_logits=True, router_aux_loss_coef=0.01,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64), 0.40),
    "gufo-tiny-draft": ("Qwen3ForCausalLM", 53, dict(
        hidden_size=256, num_hidden_layers=2, intermediate_size=512, num_attention_heads=4,
        num_key_value_heads=2, head_dim=64), 0.18),
}
COMMON = dict(vocab_size=N_VOCAB, hidden_act="silu", max_position_embeddings=N_CTX, rms_norm_eps=1e-6,
              tie_word_embeddings=True, attention_bias=False, initializer_range=0.02, use_cache=True)
ROPE_THETA = 1e6

TEMPLATE_DIR = REPO_ROOT / "tests" / "data" / "models" / "tiny-qwen3"
TOOL_PROMPT = Path(__file__).resolve().parent / "tool_call_prompt.json"
LOG = None


def log(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    if LOG:
        LOG.write(line + "\n")
        LOG.flush()


def read_jsonl_xz(path):
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def write_json(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- tokenizer

def train_tokenizer(texts, n_vocab):
    """A byte-level BPE with the Qwen2 pre-tokenizer, as tokenizer.json text, and the special ids."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers, normalizers, decoders, Regex
    template = json.loads((TEMPLATE_DIR / "tokenizer.json").read_text())
    pattern = template["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=n_vocab - len(SPECIALS), min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    special_re = re.compile("|".join(re.escape(s) for s, _ in SPECIALS))
    tok.train_from_iterator((special_re.sub("\n", t) for t in texts), trainer, length=len(texts))
    trained = json.loads(tok.to_str())
    out = copy.deepcopy(template)  # the real Qwen3 file's normalizer, pre-tokenizer, decoder
    out["model"]["vocab"] = trained["model"]["vocab"]
    out["model"]["merges"] = trained["model"]["merges"]
    n_regular = len(out["model"]["vocab"])
    out["added_tokens"] = [{"id": n_regular + i, "content": s, "single_word": False, "lstrip": False,
                            "rstrip": False, "normalized": False, "special": special}
                           for i, (s, special) in enumerate(SPECIALS)]
    ids = {s: n_regular + i for i, (s, _) in enumerate(SPECIALS)}
    return out, ids


def tokenizer_config(ids):
    config = json.loads((TEMPLATE_DIR / "tokenizer_config.json").read_text())
    config["added_tokens_decoder"] = {str(ids[s]): {"content": s, "lstrip": False, "normalized": False,
                                                    "rstrip": False, "single_word": False, "special": special}
                                      for s, special in SPECIALS}
    config["model_max_length"] = N_CTX
    return config


# --------------------------------------------------------------------------- data

def token_streams(tok, docs, chats, eot, smoke):
    """(train ids, held-out document ids, held-out conversation ids) as int32 numpy arrays."""
    import numpy as np
    rng = random.Random(7)
    train_texts = [d["text"] for d in docs if not d["heldout"]]
    heldout_docs = [d["text"] for d in docs if d["heldout"]]
    n_chat_heldout = max(20, len(chats) // 100)
    heldout_chats = [c["text"] for c in chats[-n_chat_heldout:]]
    train_texts += [c["text"] for c in chats[:-n_chat_heldout]]
    rng.shuffle(train_texts)

    def stream(texts):
        ids = []
        encode = getattr(tok, "encode_batch_fast", tok.encode_batch)  # no offsets needed
        for enc in encode(texts, add_special_tokens=False):
            ids.extend(enc.ids)
            ids.append(eot)
        return np.asarray(ids, dtype=np.int32)
    return stream(train_texts), stream(heldout_docs), stream(heldout_chats)


def pick_reference_text(tok, docs):
    """A passage of a held-out document (prose from a manual) of exactly REFERENCE_TOKENS tokens."""
    for doc in sorted((d for d in docs if d["heldout"]), key=lambda d: (d["kind"] != "info", d["id"])):
        paragraphs = [p for p in doc["text"].split("\n\n") if len(p) > 200 and p.count(" ") > 30]
        text = "\n\n".join(paragraphs[1:])  # skip the title block
        ids = tok.encode(text, add_special_tokens=False).ids
        if len(ids) < REFERENCE_TOKENS + 20:
            continue
        for cut in range(REFERENCE_TOKENS, REFERENCE_TOKENS - 20, -1):
            candidate = tok.decode(ids[:cut])
            again = tok.encode(candidate, add_special_tokens=False).ids
            if len(again) == cut and again == ids[:cut] and "\ufffd" not in candidate:
                return doc["id"], candidate, again
    raise RuntimeError("no held-out document gives a reference text")


# --------------------------------------------------------------------------- models

def make_config(transformers, arch, shape, ids):
    cls = getattr(transformers, arch.replace("ForCausalLM", "Config"))
    return cls(**COMMON, **shape, rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA},
               bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])


def train_model(torch, transformers, name, arch, seed, shape, ids, train_ids, seconds, args):
    """Trains one model for about `seconds` (the step count is fixed after a timed warm-up)."""
    import numpy as np
    torch.manual_seed(seed)
    config = make_config(transformers, arch, shape, ids)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").cuda()
    if "Moe" in arch:
        # NOTE(train): the default fused-experts path (torch grouped_mm) is not covered by
        # autocast; the per-expert loop is plain matmuls, fast enough at this size.
        set_experts_eager(model)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"[{name}] {arch} {n_params / 1e6:.2f} M parameters, shape {shape}")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    data = torch.from_numpy(train_ids.astype(np.int64)).cuda()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    batch, seq = args.batch, N_CTX

    def get_batch():
        starts = torch.randint(0, len(data) - seq - 1, (batch,), device="cuda", generator=gen)
        idx = starts[:, None] + torch.arange(seq + 1, device="cuda")[None, :]
        chunk = data[idx]
        return chunk[:, :-1], chunk[:, 1:]

    def step_fn(lr):
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=x)
            logits = out.logits.float()
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.reshape(-1))
        total = loss
        if getattr(out, "aux_loss", None) is not None:
            total = loss + config.router_aux_loss_coef * out.aux_loss
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    model.train()
    warmup = args.warmup_steps
    # Timed warm-up: these steps are the first of the schedule (linear warm-up of the LR).
    n_timing = min(warmup, 30)
    for step in range(n_timing):
        if step == 5:  # the first steps include CUDA and cuBLAS start-up
            torch.cuda.synchronize()
            t0 = time.time()
        loss = step_fn(args.lr * (step + 1) / warmup)
    torch.cuda.synchronize()
    per_step = (time.time() - t0) / (n_timing - 5)
    steps = args.steps.get(name) or max(warmup + 10, int(seconds / per_step))
    log(f"[{name}] {per_step * 1000:.1f} ms/step ({batch * seq / per_step / 1e6:.2f} M tokens/s): {steps} steps "
        f"of {batch} x {seq} tokens = {steps * batch * seq / 1e6:.0f} M tokens "
        f"({steps * batch * seq / len(train_ids):.1f} passes over {len(train_ids) / 1e6:.1f} M)")
    t0 = time.time()
    for step in range(n_timing, steps):
        if step < warmup:
            lr = args.lr * (step + 1) / warmup
        else:
            progress = (step - warmup) / max(1, steps - warmup)
            lr = args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
        loss = step_fn(lr)
        if step % 200 == 0 or step == steps - 1:
            log(f"[{name}] step {step}/{steps} loss {loss.item():.4f} lr {lr:.2e} {time.time() - t0:.0f}s")
    model.eval()
    return model, config, n_params, steps, per_step


def save_folder(torch, model, config, name, out_dir, tok_json, tok_config):
    """The Hugging Face folder: bf16 safetensors (the shipped weights), config, tokenizer files."""
    from make_tiny_models import moe_to_per_expert_layout
    import safetensors.torch as safetensors_torch
    folder = out_dir / name
    model = model.to(torch.bfloat16)
    model.config.use_cache = True
    model.save_pretrained(folder)
    if "moe" in name:
        moe_to_per_expert_layout(torch, safetensors_torch, folder / "model.safetensors", config.num_experts)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.setdefault("rope_theta", ROPE_THETA)  # the key Hub checkpoints have (tools/hf_reference/README.md)
    if "num_local_experts" in cfg:
        cfg.setdefault("num_experts", cfg["num_local_experts"])
        cfg["output_router_logits"] = False  # the router loss is for training only
    write_json(folder / "config.json", cfg)
    write_json(folder / "tokenizer.json", tok_json)
    write_json(folder / "tokenizer_config.json", tok_config)
    return folder


def set_experts_eager(model):
    if hasattr(model, "set_experts_implementation"):
        model.set_experts_implementation("eager")
    else:
        model.config._experts_implementation = "eager"


def load_folder(torch, transformers, folder, dtype, attn):
    # grouped_mm has no float32/float64 kernels; the eager per-expert loop computes the same.
    extra = {"experts_implementation": "eager"} if "moe" in folder.name else {}
    return transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation=attn,
                                                             **extra).cuda().eval()


# --------------------------------------------------------------------------- evaluation

def perplexity(torch, model, ids, max_windows):
    n_windows = min(max_windows, (len(ids) - 1) // N_CTX)
    total, count = 0.0, 0
    with torch.no_grad():
        for w in range(max(1, n_windows)):
            chunk = torch.from_numpy(ids[w * N_CTX: (w + 1) * N_CTX + 1].astype("int64")).cuda()[None]
            logits = model(input_ids=chunk[:, :-1]).logits.float()
            nll = torch.nn.functional.cross_entropy(logits[0], chunk[0, 1:], reduction="sum")
            total += nll.item()
            count += chunk.shape[1] - 1
    return math.exp(total / count), count


def reference_logits(torch, np, model, folder, doc_id, text, ids):
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids], device="cuda")).logits[0]
    ref = folder / "reference"
    ref.mkdir(parents=True, exist_ok=True)
    np.save(ref / "logits.npy", logits.float().cpu().numpy().astype(np.float32))
    write_json(ref / "logits.tokens.json", {
        "text": text, "tokens": ids,
        "note": f"held-out passage of {doc_id}; logits from transformers (float64 forward of the bf16 "
                "weights, eager attention) cast to float32; gufo quality --reference logits.npy"})
    (ref / "heldout.txt").write_text(text, encoding="utf-8")


def tool_call_rate(torch, transformers, folder, tries):
    spec = json.loads(TOOL_PROMPT.read_text())
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    prompt = tokenizer.apply_chat_template(spec["messages"], tools=spec["tools"], add_generation_prompt=True,
                                           tokenize=False)
    model = load_folder(torch, transformers, folder, torch.float32, "sdpa")
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).input_ids.cuda()
    names = {t["function"]["name"] for t in spec["tools"]}
    ok, samples = 0, []
    for i in range(tries):
        torch.manual_seed(1000 + i)
        out = model.generate(ids, max_new_tokens=160, do_sample=True, temperature=spec["temperature"],
                             top_k=40, top_p=0.95, eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"))
        text = tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=False)
        samples.append(text)
        ok += well_formed_tool_call(text, names)
    return ok, tries, samples, prompt


def well_formed_tool_call(text, names):
    m = re.search(r"<tool_call>\n(.*?)\n</tool_call>", text, re.DOTALL)
    if not m:
        return False
    try:
        call = json.loads(m.group(1))
    except ValueError:
        return False
    return isinstance(call, dict) and call.get("name") in names and isinstance(call.get("arguments"), dict)


def draft_agreement(torch, target, draft, heldout_ids, prompts, tok):
    """Top-1 agreement of draft with target: teacher-forced on held-out text, and on target's
    own greedy continuations of the prompts."""
    with torch.no_grad():
        x = torch.from_numpy(heldout_ids[:N_CTX].astype("int64")).cuda()[None]
        a = target(input_ids=x).logits.argmax(-1)
        b = draft(input_ids=x).logits.argmax(-1)
        teacher = (a == b).float().mean().item()
        agree, total = 0, 0
        for p in prompts:
            ids = torch.tensor([tok.encode(p, add_special_tokens=False).ids], device="cuda")
            out = target.generate(ids, max_new_tokens=64, do_sample=False)
            gen = out[:, ids.shape[1]:]
            d = draft(input_ids=out[:, :-1]).logits.argmax(-1)[:, ids.shape[1] - 1:]
            agree += (d == gen).sum().item()
            total += gen.numel()
    return teacher, agree / total


GREEDY_PROMPTS = ["The GNU Project", "NAME\n       grep - print lines that match patterns\n\nDESCRIPTION\n",
                  "To install a package, run", "<|im_start|>user\nWhat does ls do?<|im_end|>\n<|im_start|>assistant\n",
                  "This manual documents", "Options:\n  -h, --help", "The file system", "#!/bin/sh\n"]


# --------------------------------------------------------------------------- main

def main():
    global LOG
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--train-seconds", type=float, default=330.0, help="all three models together")
    parser.add_argument("--steps", default="", help="fixed step counts, e.g. gufo-tiny=2000,gufo-tiny-moe=1500")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup-steps", type=int, default=100)
    parser.add_argument("--tool-tries", type=int, default=20)
    parser.add_argument("--max-conversations", type=int, default=24000,
                        help="conversations used (about 1 token of conversation for 2 of documentation)")
    parser.add_argument("--smoke", action="store_true", help="a few steps on 3%% of the data, to test the pipeline")
    args = parser.parse_args()
    args.steps = {k: int(v) for k, v in (kv.split("=") for kv in args.steps.split(",") if kv)}
    if args.smoke:
        args.steps = {name: 12 for name in MODELS}
        args.warmup_steps = 10
        args.batch = 4
        args.tool_tries = 2
    args.out.mkdir(parents=True, exist_ok=True)
    LOG = open(args.out / "train_log.txt", "w", encoding="utf-8")

    import numpy as np
    import torch
    import transformers
    import tokenizers
    from tokenizers import Tokenizer
    t_start = time.time()
    env = {"torch": torch.__version__, "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
           "numpy": np.__version__, "device": torch.cuda.get_device_name(0), "python": sys.version.split()[0],
           "command": " ".join(sys.argv)}
    log(json.dumps(env))
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    docs = read_jsonl_xz(args.corpus / "docs.jsonl.xz")
    chats = read_jsonl_xz(args.corpus / "chat.jsonl.xz")[: args.max_conversations]
    if args.smoke:
        docs = docs[::30]
        chats = chats[::30]
    log(f"corpus: {len(docs)} documents, {len(chats)} conversations ({time.time() - t_start:.0f}s)")

    texts = [d["text"] for d in docs if not d["heldout"]] + [c["text"] for c in chats[: len(chats) // 2]]
    tok_json, ids = train_tokenizer(texts, N_VOCAB)
    tok = Tokenizer.from_str(json.dumps(tok_json))
    tok_config = tokenizer_config(ids)
    n_vocab = len(tok_json["model"]["vocab"]) + len(SPECIALS)
    COMMON["vocab_size"] = n_vocab
    log(f"tokenizer: {n_vocab} tokens, {len(tok_json['model']['merges'])} merges, specials {ids} "
        f"({time.time() - t_start:.0f}s)")
    check = tok.encode("<|im_start|>user\nHi<|im_end|>\n<tool_call>", add_special_tokens=False).ids
    log(f"tokenizer check: {check}")
    assert check[0] == ids["<|im_start|>"] and ids["<|im_end|>"] in check and check[-1] == ids["<tool_call>"]

    train_ids, heldout_doc_ids, heldout_chat_ids = token_streams(tok, docs, chats, ids["<|endoftext|>"], args.smoke)
    n_doc_chars = sum(len(d["text"]) for d in docs if d["heldout"])
    log(f"tokens: train {len(train_ids) / 1e6:.2f} M, held-out documents {len(heldout_doc_ids)} "
        f"({n_doc_chars / max(1, len(heldout_doc_ids)):.2f} chars/token), held-out conversations "
        f"{len(heldout_chat_ids)} ({time.time() - t_start:.0f}s)")
    doc_id, ref_text, ref_ids = pick_reference_text(tok, docs)
    log(f"reference text: {doc_id}, {len(ref_ids)} tokens")

    metrics = {"environment": env, "n_vocab": n_vocab, "train_tokens": int(len(train_ids)),
               "heldout_document_tokens": int(len(heldout_doc_ids)),
               "heldout_conversation_tokens": int(len(heldout_chat_ids)), "reference_text_source": doc_id,
               "models": {}}
    folders = {}
    for name, (arch, seed, shape, share) in MODELS.items():
        t0 = time.time()
        model, config, n_params, steps, per_step = train_model(
            torch, transformers, name, arch, seed, shape, ids, train_ids, args.train_seconds * share, args)
        folders[name] = save_folder(torch, model, config, name, args.out, tok_json, tok_config)
        del model
        torch.cuda.empty_cache()
        metrics["models"][name] = {"architecture": arch, "seed": seed, "shape": shape, "parameters": n_params,
                                   "steps": steps, "batch": args.batch, "seq": N_CTX, "lr": args.lr,
                                   "ms_per_step": round(per_step * 1000, 1),
                                   "train_seconds": round(time.time() - t0, 1)}
        write_json(args.out / "metrics.json", metrics)

    for name, folder in folders.items():
        m = metrics["models"][name]
        try:
            model = load_folder(torch, transformers, folder, torch.float32, "sdpa")
            windows = 2 if args.smoke else 64
            m["heldout_document_perplexity"], m["heldout_document_tokens_scored"] = perplexity(
                torch, model, heldout_doc_ids, windows)
            m["heldout_conversation_perplexity"], _ = perplexity(torch, model, heldout_chat_ids, windows)
            greedy = {}
            with torch.no_grad():
                for p in GREEDY_PROMPTS[:4]:
                    x = torch.tensor([tok.encode(p, add_special_tokens=False).ids], device="cuda")
                    out = model.generate(x, max_new_tokens=48, do_sample=False)
                    greedy[p] = tok.decode(out[0, x.shape[1]:].tolist(), skip_special_tokens=False)
            m["greedy_samples"] = greedy
            del model
            model64 = load_folder(torch, transformers, folder, torch.float64, "eager")
            reference_logits(torch, np, model64, folder, doc_id, ref_text, ref_ids)
            del model64
            log(f"[{name}] held-out perplexity: documents {m['heldout_document_perplexity']:.3f}, "
                f"conversations {m['heldout_conversation_perplexity']:.3f} (uniform {n_vocab})")
        except Exception as e:  # noqa: BLE001  (keep the trained models whatever fails here)
            log(f"[{name}] evaluation failed: {type(e).__name__}: {e}")
        write_json(args.out / "metrics.json", metrics)

    try:
        ok, tries, samples, prompt = tool_call_rate(torch, transformers, folders["gufo-tiny"], args.tool_tries)
        metrics["tool_call"] = {"well_formed": ok, "tries": tries, "prompt": prompt, "samples": samples}
        log(f"[gufo-tiny] tool calls well-formed: {ok}/{tries}")
    except Exception as e:  # noqa: BLE001
        log(f"tool-call rate failed: {type(e).__name__}: {e}")
    try:
        target = load_folder(torch, transformers, folders["gufo-tiny"], torch.float32, "sdpa")
        draft = load_folder(torch, transformers, folders["gufo-tiny-draft"], torch.float32, "sdpa")
        teacher, greedy = draft_agreement(torch, target, draft, heldout_doc_ids, GREEDY_PROMPTS, tok)
        metrics["draft_agreement"] = {"heldout_top1": teacher, "greedy_continuations_top1": greedy}
        log(f"draft top-1 agreement with gufo-tiny: held-out {teacher:.3f}, greedy continuations {greedy:.3f}")
    except Exception as e:  # noqa: BLE001
        log(f"draft agreement failed: {type(e).__name__}: {e}")
    metrics["total_seconds"] = round(time.time() - t_start, 1)
    write_json(args.out / "metrics.json", metrics)
    log(f"done in {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
