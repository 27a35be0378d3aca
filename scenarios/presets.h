// scenarios/presets.h — published model architectures by name (`model.preset`), and the model
// block of a Hugging Face config.json (`trainsim import hf`).
//
// Contract: every preset's values come from the model's published config (Hugging Face
// config.json or paper), cited next to it in presets.cc; ApplyModelPreset fills only the fields
// the scenario left unset (explicit fields win, field by field, also inside moe {} and mla {});
// the preset table is built once and immutable. ModelFromHfConfig never throws or exits: a
// config that is not JSON, or lacks a field the model needs, is a non-OK Status naming the
// file, the position or the field.
#ifndef TRAINSIM_SCENARIOS_PRESETS_H_
#define TRAINSIM_SCENARIOS_PRESETS_H_

#include <string>
#include <string_view>
#include <vector>

#include "scenarios/scenario.pb.h"
#include "sim/status.h"

namespace trainsim::scenarios {

struct ModelPreset {
  std::string name;    // "llama3-70b"
  std::string source;  // where the values come from (URL + file, or paper and table)
  // Published parameter counts in billions, as printed by the source ("70.6", "37"); the
  // number of decimals is the published precision. Active equals total for dense models.
  std::string published_total_b;
  std::string published_active_b;
  // The published active count leaves the input embedding (a lookup) out (DeepSeek-V3's
  // README_WEIGHTS.md, GPT-OSS's model card); ActiveParameterCount counts it.
  bool published_active_excludes_input_embedding = false;
  pb::Model model;  // the architecture (no precision, flash attention or MoE balance settings)
};

// All presets, in the order `trainsim check --presets` lists them.
const std::vector<ModelPreset>& ModelPresets();
// nullptr when no preset has this name (case-insensitive).
const ModelPreset* FindModelPreset(std::string_view name);
std::vector<std::string> ModelPresetNames();

// When model->preset() is set: every field of the preset that `model` does not set is copied
// into it. Error: an unknown preset name (the message lists the presets).
Status ApplyModelPreset(pb::Model* model);

// The model of a Hugging Face config.json: dense Llama/Mistral/Qwen2/Qwen3, Mixtral and
// Qwen-MoE, GPT-OSS, DeepSeek-V3 (MLA). `notes` receives what the mapping could not express
// (one line each). Errors: "NAME:LINE:COLUMN: ..." when the text is not JSON, "NAME: missing
// \"field\" ..." when a required field is absent or not a positive integer.
Result<pb::Model> ModelFromHfConfig(std::string_view json_text, const std::string& name_for_errors,
                                    std::vector<std::string>* notes = nullptr);

// "model {\n  name: ...\n}\n": the model as a scenario's text-format block.
std::string FormatModelBlock(const pb::Model& model);

}  // namespace trainsim::scenarios

#endif  // TRAINSIM_SCENARIOS_PRESETS_H_
