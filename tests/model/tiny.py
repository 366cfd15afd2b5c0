"""Tiny BERT and GPT-2 models built from a config and saved to a folder: the real
loaders and passes run on them, and tests never touch the network."""

from pathlib import Path

import torch

TEXT = "the cat sat on the mat because it was warm"
WORDS = [*TEXT.split(), "a", "dog", "ran", "home", "and", "slept", ".", ","]


def _bert_tokenizer(folder):
    from transformers import BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(WORDS)]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return BertTokenizerFast(vocab_file=str(folder / "vocab.txt")), len(vocab)


def _gpt2_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([TEXT, " ".join(WORDS)] * 4, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")
    return fast, tok.get_vocab_size()


def save_bert(folder: Path) -> Path:
    from transformers import BertConfig, BertModel

    tok, vocab = _bert_tokenizer(folder)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=80,
    )  # fmt: skip
    BertModel(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def save_gpt2(folder: Path) -> Path:
    from transformers import GPT2Config, GPT2Model

    tok, vocab = _gpt2_tokenizer()
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4, n_positions=80)
    GPT2Model(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
