"""Byte-level BPE tokenizer for the tiny demo model (HF `tokenizers`).

Pre-tokenization is ByteLevel with the GPT-2 regex (use_regex=True), which is exactly llama.cpp's
`tokenizer.ggml.pre = gpt2` split, so our runtime (src/tokenizer, PreType::kGpt2) reproduces the ids.
4090 learned tokens (256 byte tokens + merges), then the six LLaDA-style control tokens at the end of
the vocabulary, in LLaDA's order (EOS first, as in ../shared/reference/tiny-llada-q4km.gguf):
  4090 <|endoftext|>  EOS / padding     4093 <|start_header_id|>
  4091 <|startoftext|> BOS              4094 <|end_header_id|>
  4092 <|mdm_mask|>    mask id          4095 <|eot_id|>

Usage: python tok.py --train data/train.txt --out data/tokenizer.json
"""

import argparse

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

N_LEARNED = 4090
SPECIALS = ["<|endoftext|>", "<|startoftext|>", "<|mdm_mask|>", "<|start_header_id|>", "<|end_header_id|>",
            "<|eot_id|>"]
EOS_ID, BOS_ID, MASK_ID, EOT_ID = 4090, 4091, 4092, 4095
VOCAB = N_LEARNED + len(SPECIALS)


def train_tokenizer(train_path: str) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=N_LEARNED, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train([train_path], trainer)
    assert tok.get_vocab_size() == N_LEARNED, tok.get_vocab_size()
    tok.add_special_tokens(SPECIALS)
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == N_LEARNED + i
    return tok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    tok = train_tokenizer(a.train)
    tok.save(a.out)
    print("vocab", tok.get_vocab_size(), "->", a.out)


if __name__ == "__main__":
    main()
