// tiny_config: the small LLaMA config (GQA, odd vocabulary) the model tests build random weights for.
#pragma once

#include "linear_ard/model/model_config.h"

namespace linear_ard::model {

inline ModelConfig tiny_config() {
  ModelConfig c;
  c.vocab_size = 97;
  c.hidden_size = 48;
  c.intermediate_size = 80;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 32;
  c.rope.theta = 10000.0;
  return c;
}

}  // namespace linear_ard::model
