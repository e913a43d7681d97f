// run_model: the model a run trains, built on the plan's placed weights.
#include "run_model.h"

#include "run_batches.h"  // defines: ids_tensor

namespace linear_ard::train {

RunModel::RunModel(RunPlan& plan)
    : weights([&] {
        torch::manual_seed(plan.config.seed);
        return model::llama_weights_from_map(plan.teacher.model_config, std::move(plan.model_tensors));
      }()),
      teacher_rope(model::rope_tables_init(plan.teacher.model_config)),
      student_rope(model::rope_tables_init(plan.student_config)) {
  const RestoreConfig& c = plan.config;
  trainables = std::make_unique<TrainableSet>(c.trainable, c.lora, plan.teacher.weights, weights,
                                              plan.last_trainable_layer, plan.device);
  if (plan.dist) gradients.emplace(*plan.dist, trainables->parameters());
  ctx = objective_context_make(c, weights, teacher_rope, student_rope, plan.layers);
  eval_ids = ids_tensor(plan.blocks1->held_out(), plan.device);
}

}  // namespace linear_ard::train
