// master_buffer: fp32 masters as views of one flat buffer; a cast a unit forward, each unit's
// gradient cast to fp32 backward.
#include "linear_ard/train/master_buffer.h"

#include <algorithm>
#include <map>

#include "linear_ard/model/weights_pack.h"  // defines: weights_groups

namespace linear_ard::train {
namespace {

using Layout = MasterBuffer::Layout;
using Unit = MasterBuffer::Unit;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// For each of `names`, the members (indices into names, in group order) of the weights group it
// belongs to when every member of that group (one part, weight or bias) is in `names`; else empty.
std::vector<std::vector<size_t>> groups_of(const std::vector<std::string>& names, int64_t num_layers) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < names.size(); ++i) index[names[i]] = i;
  std::vector<std::vector<size_t>> out(names.size());
  for (int64_t layer = 0; layer < num_layers; ++layer)
    for (const auto& modules : model::weights_groups(layer))
      for (const char* part : {".weight", ".bias"}) {
        std::vector<size_t> members;
        for (const auto& m : modules)
          if (const auto it = index.find(m + part); it != index.end()) members.push_back(it->second);
        if (members.size() != modules.size()) continue;
        for (size_t i : members) out[i] = members;
      }
  return out;
}

// Units in the order of their first member in `names`, packed back to back.
c10::intrusive_ptr<Layout> layout_build(const std::vector<std::string>& names, const io::TensorMap& checkpoint,
                                        int64_t num_layers) {
  auto layout = c10::make_intrusive<Layout>();
  const size_t n = names.size();
  layout->unit_of.assign(n, 0);
  layout->offset_of.assign(n, 0);
  layout->sizes_of.resize(n);
  const std::vector<std::vector<size_t>> groups = groups_of(names, num_layers);
  std::vector<bool> placed(n, false);
  int64_t offset = 0;
  for (size_t first = 0; first < n; ++first) {
    if (placed[first]) continue;
    Unit unit;
    unit.members = groups[first].empty() ? std::vector<size_t>{first} : groups[first];
    unit.offset = offset;
    for (size_t i : unit.members) {
      const torch::Tensor& t = checkpoint.at(names[i]);
      placed[i] = true;
      layout->unit_of[i] = layout->units.size();
      layout->offset_of[i] = offset;
      layout->sizes_of[i] = t.sizes().vec();
      offset += t.numel();
    }
    unit.numel = offset - unit.offset;
    unit.sizes = layout->sizes_of[unit.members.front()];
    if (unit.members.size() > 1)
      unit.sizes[0] = unit.numel / c10::multiply_integers(unit.sizes.begin() + 1, unit.sizes.end());
    layout->units.push_back(std::move(unit));
  }
  return layout;
}

const Layout& layout_of(const c10::IValue& capsule) {
  return *static_cast<const Layout*>(capsule.toCapsule().get());
}

// One unit of the buffer cast to `dtype` (a tensor of its own, so that it is freed once the layers
// that read it are done with it); backward casts the unit's gradient to fp32 once and hands each of
// its masters its view. A node a unit, so that each unit's compute-dtype gradient is let go as soon
// as it arrives instead of every unit's waiting for the last. `masters` (the unit's members) are
// inputs only so that autograd reaches their leaves.
struct UnitCast : torch::autograd::Function<UnitCast> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& flat, at::TensorList masters,
                               int64_t dtype, int64_t unit, c10::IValue layout) {
    ctx->saved_data["layout"] = layout;
    ctx->saved_data["unit"] = unit;
    ctx->set_materialize_grads(false);  // a unit nothing read keeps its masters without a gradient
    const Unit& u = layout_of(layout).units[static_cast<size_t>(unit)];
    return flat.narrow(0, u.offset, u.numel)
        .to(static_cast<torch::ScalarType>(dtype), /*non_blocking=*/false, /*copy=*/true)
        .view(u.sizes);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Layout& layout = layout_of(ctx->saved_data["layout"]);
    const Unit& u = layout.units[static_cast<size_t>(ctx->saved_data["unit"].toInt())];
    variable_list result(u.members.size() + 4);  // flat, the unit's masters, dtype, unit, layout
    if (!grads[0].defined()) return result;
    // A buffer of its own even in fp32 (copy): the masters' gradients never alias the one autograd
    // handed in.
    const torch::Tensor g = grads[0].reshape(-1).to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
    grads[0].reset();
    int64_t offset = 0;
    for (size_t k = 0; k < u.members.size(); ++k) {
      const std::vector<int64_t>& sizes = layout.sizes_of[u.members[k]];
      const int64_t numel = c10::multiply_integers(sizes);
      result[1 + k] = g.narrow(0, offset, numel).view(sizes);
      offset += numel;
    }
    return result;
  }
};

}  // namespace

MasterBuffer::MasterBuffer(const std::vector<std::string>& names, const io::TensorMap& checkpoint,
                           int64_t num_layers, const torch::Device& device)
    : names_(names), layout_(layout_build(names, checkpoint, num_layers)) {
  torch::NoGradGuard no_grad;
  int64_t numel = 0;
  for (const Unit& u : layout_->units) numel += u.numel;
  flat_ = torch::empty({numel}, torch::TensorOptions(torch::kFloat).device(device));
  for (size_t i = 0; i < names_.size(); ++i) {
    const std::vector<int64_t>& sizes = layout_->sizes_of[i];
    torch::Tensor master = flat_.narrow(0, layout_->offset_of[i], c10::multiply_integers(sizes)).view(sizes);
    master.copy_(checkpoint.at(names_[i]));
    parameters_.push_back(master.set_requires_grad(true));
  }
  for (const Unit& u : layout_->units) {
    unit_masters_.emplace_back();
    for (size_t i : u.members) unit_masters_.back().push_back(parameters_[i]);
  }
}

model::Overrides MasterBuffer::overrides(torch::ScalarType dtype, const c10::intrusive_ptr<HeldGradients>& held,
                                        const std::function<bool(const std::string&)>& which,
                                        int64_t recast_bytes) const {
  const c10::IValue layout = c10::IValue::make_capsule(layout_);
  model::Overrides o;
  for (size_t u = 0; u < layout_->units.size(); ++u) {
    const Unit& span = layout_->units[u];
    const std::vector<size_t>& members = span.members;
    if (which && !which(names_[members.front()])) continue;
    const auto index = static_cast<int64_t>(u);
    const torch::Tensor source = flat_.narrow(0, span.offset, span.numel).view(span.sizes);
    const torch::Tensor unit =
        held ? held_cast(source, unit_masters_[u], dtype, held, index)
             : UnitCast::apply(flat_, at::TensorList(unit_masters_[u]), static_cast<int64_t>(dtype), index, layout);
    const bool recast = span.numel * static_cast<int64_t>(c10::elementSize(dtype)) >= recast_bytes;
    if (members.size() > 1) o.stacked[names_[members.front()]] = unit;
    if (members.size() > 1 && recast) o.stacked_sources[names_[members.front()]] = source;
    int64_t row = 0;
    for (size_t i : members) {
      const int64_t rows = members.size() > 1 ? layout_->sizes_of[i][0] : 0;
      o.replace[names_[i]] = members.size() > 1 ? unit.narrow(0, row, rows) : unit;
      if (recast) o.sources[names_[i]] = members.size() > 1 ? source.narrow(0, row, rows) : source;
      row += rows;
    }
  }
  return o;
}

}  // namespace linear_ard::train
