// passkey_sample_make: a passkey-retrieval training sample (the prompt `linear-ard eval passkey`
// asks, then its answer), the SampleMaker that `linear-ard pretrain` mixes into training blocks.
#pragma once

#include <cstdint>

#include "linear_ard/io/tokenizer.h"
#include "linear_ard/train/block_mix.h"

namespace linear_ard::eval {

// The prompt of passkey_prompt_make at a random depth, followed by its answer " <key>." and EOS, of
// at most `max_tokens` ids, deterministic for `seed`. The answer is encoded with the prompt, so its
// tokens are the ones the model sees in running text; answer_begin is the first id where that
// encoding leaves the prompt's own (BOS + prompt), so the answer is " <key>." + EOS. No ids when even
// a prompt without filler exceeds max_tokens.
train::MixSample passkey_sample_make(const io::Tokenizer& tokenizer, int64_t max_tokens, uint64_t seed);

}  // namespace linear_ard::eval
