// Parsing scenarios from text format or JSON, with positions in every error, and the
// LoadScenario / ParseScenarioText entry points.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "scenarios/internal.h"
#include "scenarios/scenario.h"
#include "sim/json_reason.h"
#include "sim/read_at_most.h"

namespace trainsim::scenarios {

namespace gp = google::protobuf;

namespace detail {

std::string At(const std::string& name, std::pair<int, int> lc) {
  return name + ":" + std::to_string(lc.first) + ":" + std::to_string(lc.second);
}

int EditDistance(std::string_view a, std::string_view b) {
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string ClosestName(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = 1 << 30;
  for (const std::string& c : candidates) {
    int d = EditDistance(name, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  if (best.empty()) return "";
  size_t longer = std::max(name.size(), best.size());
  if (best_distance <= std::max<int>(2, static_cast<int>(longer) / 3)) return best;
  // A prefix either way ("H100-SXM" for "H100-SXM-80GB", "seq" for "seq_len").
  for (const std::string& c : candidates) {
    size_t n = std::min(c.size(), name.size());
    if (n >= 3 && EditDistance(c.substr(0, n), name.substr(0, n)) == 0) return c;
  }
  return "";
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

std::vector<std::string> FieldNames(const gp::Descriptor& descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor.field_count(); ++i) names.push_back(descriptor.field(i)->name());
  return names;
}

std::vector<std::string> EnumNames(const gp::EnumDescriptor& descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor.value_count(); ++i) {
    // A "*_UNSPECIFIED" value is proto3's "not set" (faults.kind's is refused): never offered.
    const std::string& name = descriptor.value(i)->name();
    if (!name.ends_with("_UNSPECIFIED")) names.push_back(name);
  }
  return names;
}

bool LooksLikeJson(std::string_view text) {
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    return c == '{';
  }
  return false;
}

namespace {

std::string Quote(std::string_view s) {
  // Built by appending: GCC 12 gives a false -Wrestrict for "literal" + std::string&&
  // (GCC bug 105329).
  std::string out = "\"";
  out.append(s);
  out += '"';
  return out;
}

// "unknown field "tpp" in parallelism; did you mean "tp"? (valid: ...)".
std::string UnknownFieldMessage(std::string_view field, const gp::Descriptor& in,
                                std::string_view where) {
  std::vector<std::string> names = FieldNames(in);
  std::string msg = "unknown field " + Quote(field) + " in " + std::string(where);
  std::string closest = ClosestName(field, names);
  if (!closest.empty()) msg += "; did you mean " + Quote(closest) + "?";
  msg += " (valid: " + JoinNames(names) + ")";
  return msg;
}

std::string UnknownEnumMessage(std::string_view value, const gp::EnumDescriptor& e,
                               std::string_view field) {
  std::vector<std::string> names = EnumNames(e);
  std::string msg = "unknown value " + Quote(value) + " for " + std::string(field);
  std::string closest = ClosestName(value, names);
  if (!closest.empty()) msg += "; did you mean " + closest + "?";
  msg += " (valid: " + JoinNames(names) + ")";
  return msg;
}

// All enum types of fields named `field` reachable from `root` (deduplicated, in order).
void CollectEnumFields(const gp::Descriptor& d, std::string_view field,
                       std::set<const gp::Descriptor*>* seen,
                       std::vector<const gp::EnumDescriptor*>* out) {
  if (!seen->insert(&d).second) return;
  for (int i = 0; i < d.field_count(); ++i) {
    const gp::FieldDescriptor* f = d.field(i);
    if (f->enum_type() != nullptr && f->name() == field &&
        std::find(out->begin(), out->end(), f->enum_type()) == out->end()) {
      out->push_back(f->enum_type());
    }
    if (f->message_type() != nullptr) CollectEnumFields(*f->message_type(), field, seen, out);
  }
}

// The dotted path of the first section of type `target` under `d` ("cluster.topology"), or "".
std::string SectionPath(const gp::Descriptor& d, const gp::Descriptor& target,
                        const std::string& prefix, int depth = 0) {
  if (depth > 4) return "";
  for (int i = 0; i < d.field_count(); ++i) {
    const gp::FieldDescriptor* f = d.field(i);
    if (f->message_type() == nullptr) continue;
    std::string path = prefix.empty() ? f->name() : prefix + "." + f->name();
    if (f->message_type() == &target) return path;
    std::string nested = SectionPath(*f->message_type(), target, path, depth + 1);
    if (!nested.empty()) return nested;
  }
  return "";
}

// Turns protobuf's text-format messages into ones that say what would be valid.
std::string ImproveTextFormatMessage(const std::string& msg, const gp::Descriptor& root) {
  static const std::string kNoField = "\" has no field named \"";
  if (msg.rfind("Message type \"", 0) == 0) {
    size_t type_end = msg.find(kNoField);
    if (type_end != std::string::npos) {
      std::string type = msg.substr(14, type_end - 14);
      size_t name_start = type_end + kNoField.size();
      size_t name_end = msg.find('"', name_start);
      std::string name = msg.substr(name_start, name_end - name_start);
      const gp::Descriptor* d = gp::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
      if (d != nullptr) {
        std::string where = d == &root ? "the scenario" : SectionPath(root, *d, "");
        return UnknownFieldMessage(name, *d, where.empty() ? d->name() : where);
      }
    }
  }
  if (const std::string value = detail::UnknownEnumValue(msg); !value.empty()) {
    size_t field_start = msg.find("for field \"");
    if (field_start != std::string::npos) {
      field_start += 11;
      std::string field = msg.substr(field_start, msg.find('"', field_start) - field_start);
      std::set<const gp::Descriptor*> seen;
      std::vector<const gp::EnumDescriptor*> enums;
      CollectEnumFields(root, field, &seen, &enums);
      if (enums.size() == 1) return UnknownEnumMessage(value, *enums[0], field);
      if (!enums.empty()) {
        std::string valid;
        for (const gp::EnumDescriptor* e : enums) {
          if (!valid.empty()) valid += "; ";
          valid += JoinNames(EnumNames(*e));
        }
        return "unknown value " + Quote(value) + " for " + field + " (valid: " + valid + ")";
      }
    }
  }
  // A field given twice, where ParseMessage cannot find its path (a section given twice).
  static const std::string kTwice = "Non-repeated field \"";
  if (msg.rfind(kTwice, 0) == 0) {
    const size_t end = msg.find('"', kTwice.size());
    if (end != std::string::npos) {
      return msg.substr(kTwice.size(), end - kTwice.size()) +
             " is given twice (it is not a list: give it once)";
    }
  }
  // A byte outside ASCII where a name or a number was expected ("nödes").
  if (msg.rfind("Interpreting non ascii codepoint", 0) == 0) {
    return "a character outside ASCII where a field name or value was expected: names are ASCII "
           "letters, digits and '_' (is a name mistyped, or a string missing its quotes?)";
  }
  // At the end of the input the tokenizer reports "Expected identifier, got: " (nothing).
  if (msg.size() >= 7 && msg.compare(msg.size() - 7, 7, ", got: ") == 0) {
    return "unexpected end of file: " + msg.substr(0, msg.size() - 7) +
           " (is a closing '}' missing?)";
  }
  // Protobuf's messages end with '.', ours do not.
  if (!msg.empty() && msg.back() == '.') return msg.substr(0, msg.size() - 1);
  return msg;
}

class FirstErrorCollector : public gp::io::ErrorCollector {
 public:
  void AddError(int line, gp::io::ColumnNumber column, const std::string& message) override {
    if (has_error_) return;
    has_error_ = true;
    line_ = line;
    column_ = column;
    message_ = message;
  }
  bool has_error_ = false;
  int line_ = 0;
  int column_ = 0;
  std::string message_;
};

// 1-based (line, column) of byte `offset` in `text`.
std::pair<int, int> LineColumn(std::string_view text, size_t offset) {
  int line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

// ---- A minimal scanner over well-formed JSON (nlohmann has validated it) for positions. ----
size_t SkipWs(std::string_view s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}
size_t SkipString(std::string_view s, size_t i) {  // s[i] == '"'; returns index after closing
  ++i;
  while (i < s.size() && s[i] != '"') i += (s[i] == '\\') ? 2 : 1;
  return std::min(i + 1, s.size());
}
size_t SkipValue(std::string_view s, size_t i) {
  i = SkipWs(s, i);
  if (i >= s.size()) return i;
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      char c = s[i];
      if (c == '"') {
        i = SkipString(s, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        --depth;
        if (depth == 0) return i + 1;
      }
      ++i;
    }
    return i;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' &&
         !std::isspace(static_cast<unsigned char>(s[i]))) {
    ++i;
  }
  return i;
}
// In the object starting at `obj` ('{'), the offset of the key matching one of `names`; npos if
// absent. *value_at receives the offset of its value.
size_t FindKey(std::string_view s, size_t obj, const std::vector<std::string>& names,
               size_t* value_at) {
  size_t i = SkipWs(s, obj);
  if (i >= s.size() || s[i] != '{') return std::string_view::npos;
  i = SkipWs(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    size_t key_end = SkipString(s, i);
    std::string_view key = s.substr(i + 1, key_end - i - 2);
    size_t colon = SkipWs(s, key_end);
    size_t value = SkipWs(s, colon + 1);
    if (std::find(names.begin(), names.end(), key) != names.end()) {
      *value_at = value;
      return i;
    }
    i = SkipWs(s, SkipValue(s, value));
    if (i < s.size() && s[i] == ',') i = SkipWs(s, i + 1);
  }
  return std::string_view::npos;
}
size_t FindElement(std::string_view s, size_t arr, int index) {
  size_t i = SkipWs(s, arr);
  if (i >= s.size() || s[i] != '[') return std::string_view::npos;
  i = SkipWs(s, i + 1);
  for (int k = 0; k < index; ++k) {
    if (i >= s.size() || s[i] == ']') return std::string_view::npos;
    i = SkipWs(s, SkipValue(s, i));
    if (i < s.size() && s[i] == ',') i = SkipWs(s, i + 1);
  }
  if (i >= s.size() || s[i] == ']') return std::string_view::npos;
  return i;
}

// Path segments: "faults[2].id" -> {("faults", 2), ("id", -1)}.
std::vector<std::pair<std::string, int>> SplitPath(std::string_view path) {
  std::vector<std::pair<std::string, int>> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string_view seg = path.substr(start, dot == std::string_view::npos ? dot : dot - start);
    int index = -1;
    size_t bracket = seg.find('[');
    if (bracket != std::string_view::npos) {
      index = std::atoi(std::string(seg.substr(bracket + 1)).c_str());
      seg = seg.substr(0, bracket);
    }
    out.emplace_back(std::string(seg), index);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

// Rejects unknown keys and enum names in a JSON document before protobuf converts it, so the
// messages can name the closest valid field and the position.
std::optional<std::pair<std::string, std::string>> CheckJson(const nlohmann::json& j,
                                                             const gp::Descriptor& d,
                                                             const std::string& path) {
  if (!j.is_object()) {
    return std::make_pair(
        path, "expected an object for " + (path.empty() ? std::string("the scenario") : path));
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const gp::FieldDescriptor* f = d.FindFieldByName(key);
    for (int i = 0; f == nullptr && i < d.field_count(); ++i) {
      if (d.field(i)->json_name() == key) f = d.field(i);
    }
    std::string sub = path.empty() ? key : path + "." + key;
    if (f == nullptr) {
      return std::make_pair(sub, UnknownFieldMessage(key, d, path.empty() ? "the scenario" : path));
    }
    const nlohmann::json& v = it.value();
    // Protobuf reads null as "unset"; written in a scenario it is more likely a mistake (the
    // default then applies without a word), so it is refused.
    if (v.is_null()) {
      return std::make_pair(sub, sub +
                                     " is null: give a value, or leave the key out for the "
                                     "default");
    }
    auto check_one =
        [&](const nlohmann::json& e,
            const std::string& p) -> std::optional<std::pair<std::string, std::string>> {
      if (f->message_type() != nullptr) return CheckJson(e, *f->message_type(), p);
      // Protobuf's JSON parser reads any string as a bool ("yes" -> true); be strict.
      if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_BOOL && !e.is_boolean()) {
        return std::make_pair(p, p + " takes true or false, not " + e.dump());
      }
      if (f->enum_type() != nullptr && e.is_string() &&
          f->enum_type()->FindValueByName(e.get<std::string>()) == nullptr) {
        return std::make_pair(p, UnknownEnumMessage(e.get<std::string>(), *f->enum_type(), p));
      }
      return std::nullopt;
    };
    if (f->is_repeated()) {
      if (!v.is_array()) return std::make_pair(sub, sub + " must be a list [ ... ]");
      for (size_t k = 0; k < v.size(); ++k) {
        const std::string element = sub + "[" + std::to_string(k) + "]";
        if (v[k].is_null())
          return std::make_pair(element, element + " is null: drop it from the list");
        auto err = check_one(v[k], element);
        if (err) return err;
      }
    } else {
      auto err = check_one(v, sub);
      if (err) return err;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::pair<int, int>> SourceMap::Find(const gp::Descriptor& root,
                                                   std::string_view path) const {
  std::optional<std::pair<int, int>> found;
  const gp::Descriptor* d = &root;
  if (!is_json) {
    const gp::TextFormat::ParseInfoTree* t = tree.get();
    for (const auto& [name, index] : SplitPath(path)) {
      if (t == nullptr || d == nullptr) break;
      const gp::FieldDescriptor* f = d->FindFieldByName(name);
      if (f == nullptr) break;
      int idx = f->is_repeated() ? std::max(index, 0) : -1;
      gp::TextFormat::ParseLocation loc = t->GetLocation(f, idx);
      if (loc.line < 0) break;
      found = std::make_pair(loc.line + 1, loc.column + 1);
      t = f->message_type() != nullptr ? t->GetTreeForNested(f, idx) : nullptr;
      d = f->message_type();
      if (f->is_repeated() && index < 0) break;
    }
    return found;
  }
  size_t obj = 0;
  for (const auto& [name, index] : SplitPath(path)) {
    std::vector<std::string> names = {name};
    const gp::FieldDescriptor* f = d != nullptr ? d->FindFieldByName(name) : nullptr;
    if (f != nullptr) names.push_back(f->json_name());
    size_t value_at = 0;
    size_t key_at = FindKey(json, obj, names, &value_at);
    if (key_at == std::string_view::npos) break;
    found = LineColumn(json, key_at);
    obj = value_at;
    if (index >= 0) {
      size_t element = FindElement(json, value_at, index);
      if (element == std::string_view::npos) break;
      found = LineColumn(json, element);
      obj = element;
    }
    d = f != nullptr ? f->message_type() : nullptr;
  }
  return found;
}

// The offset of 0-based line `line` in `text` (npos past the end).
size_t LineStart(std::string_view text, int line) {
  size_t at = 0;
  for (int l = 0; l < line && at != std::string_view::npos; ++l) {
    at = text.find('\n', at);
    if (at != std::string_view::npos) ++at;
  }
  return at;
}

// Protobuf reports some errors at the token after the mistake: move the position to it.
// `msg` is the improved message (ImproveTextFormatMessage), errors->message_ protobuf's own.
void PointAtTheMistake(std::string_view text, const std::string& msg, FirstErrorCollector* e) {
  FirstErrorCollector& errors = *e;
  // Protobuf reports an unknown field at the token after its name; point at the name.
  static const std::string kUnknown = "unknown field \"";
  if (msg.rfind(kUnknown, 0) == 0) {
    std::string name =
        msg.substr(kUnknown.size(), msg.find('"', kUnknown.size()) - kUnknown.size());
    const size_t line_start = LineStart(text, errors.line_);
    if (line_start != std::string_view::npos) {
      std::string_view line = text.substr(line_start, text.find('\n', line_start) - line_start);
      size_t at = line.rfind(name, static_cast<size_t>(std::max(errors.column_, 0)));
      if (at != std::string_view::npos) errors.column_ = static_cast<int>(at);
    }
  }
  // And an unknown enum value or a bad boolean at the token after the value (often on the next
  // line): point at the value, the last whole-word occurrence before the reported position.
  std::string value = detail::UnknownEnumValue(errors.message_);
  if (value.empty()) value = detail::BadBoolValue(errors.message_);
  if (!value.empty()) {
    size_t offset = LineStart(text, errors.line_);
    if (offset != std::string_view::npos && !value.empty()) {
      offset = std::min(text.size(), offset + size_t(std::max(errors.column_, 0)));
      auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
      for (size_t at = text.substr(0, offset).rfind(value); at != std::string_view::npos;
           at = at == 0 ? std::string_view::npos : text.substr(0, at).rfind(value)) {
        const size_t end = at + value.size();
        if ((at == 0 || !word(text[at - 1])) && (end >= text.size() || !word(text[end]))) {
          const std::pair<int, int> lc = LineColumn(text, at);
          errors.line_ = lc.first - 1;
          errors.column_ = lc.second - 1;
          break;
        }
      }
    }
  }
}

// After PointAtTheMistake: the field at the value, for the messages protobuf words by the
// field's name alone. `msg` when none applies.
std::string ExplainAtTheValue(std::string_view text, const gp::Descriptor& root,
                              const FirstErrorCollector& errors, std::string msg) {
  // An enum value: the enum of the field at the value (now pointed at), not every field of
  // that name (checkpoint.policy and recovery.policy are different enums). A boolean: the
  // field's path and what it takes.
  const std::string bad_enum = detail::UnknownEnumValue(errors.message_);
  const std::string bad_bool = detail::BadBoolValue(errors.message_);
  if (!bad_enum.empty() || !bad_bool.empty()) {
    std::string path;
    const size_t line_start = LineStart(text, errors.line_);
    const gp::FieldDescriptor* f =
        line_start == std::string_view::npos
            ? nullptr
            : detail::FieldAtOffset(text, line_start + size_t(std::max(errors.column_, 0)), root,
                                    &path);
    if (f != nullptr && f->enum_type() != nullptr && !bad_enum.empty()) {
      msg = UnknownEnumMessage(bad_enum, *f->enum_type(), path);
    } else if (f != nullptr && f->type() == gp::FieldDescriptor::TYPE_BOOL && !bad_bool.empty()) {
      msg = path + ": " + bad_bool + " is not valid here: " + f->name() + " takes true or false";
    }
  }
  // A field given twice: its path, as the JSON reader says it.
  if (errors.message_.rfind("Non-repeated field \"", 0) == 0) {
    std::string path;
    // Protobuf points at the ':' after the second name (or a space before it): the value
    // starts past both.
    size_t at = LineStart(text, errors.line_);
    if (at != std::string_view::npos) {
      at = std::min(text.size(), at + size_t(std::max(errors.column_, 0)));
      while (at < text.size() && (text[at] == ':' || text[at] == ' ' || text[at] == '\t')) {
        ++at;
      }
      if (detail::FieldAtOffset(text, at, root, &path) != nullptr) {
        msg = path + " is given twice (it is not a list: give it once)";
      }
    }
  }
  return msg;
}

Status ParseMessage(std::string_view text, const std::string& name_for_errors, bool json,
                    gp::Message* message, SourceMap* map) {
  const gp::Descriptor& root = *message->GetDescriptor();
  if (!json) {
    gp::TextFormat::Parser parser;
    FirstErrorCollector errors;
    parser.RecordErrorsTo(&errors);
    auto tree = std::make_unique<gp::TextFormat::ParseInfoTree>();
    parser.WriteLocationsTo(tree.get());
    bool ok = parser.ParseFromString(std::string(text), message);
    if (!ok || errors.has_error_) {
      std::string msg =
          errors.has_error_ ? ImproveTextFormatMessage(errors.message_, root) : "could not parse";
      if (errors.has_error_) {
        const std::string value =
            detail::ExplainBadValue(text, errors.line_, errors.column_, errors.message_, root);
        if (!value.empty()) msg = value;
        // Protobuf counts a tab to the next multiple of 8 columns; the message counts bytes.
        errors.column_ = detail::ByteColumn(text, errors.line_, errors.column_);
      }
      PointAtTheMistake(text, msg, &errors);
      msg = ExplainAtTheValue(text, root, errors, msg);
      return Status::InvalidArgument(At(name_for_errors, {errors.line_ + 1, errors.column_ + 1}) +
                                     ": " + msg);
    }
    if (map != nullptr) {
      map->is_json = false;
      map->tree = std::move(tree);
    }
    return Status::Ok();
  }
  nlohmann::json doc;
  // JSON leaves duplicate keys undefined (RFC 8259 §4); protobuf's reader keeps the last value,
  // or fails with its oneof wording for optional fields. Refuse them with the key's path. Keys
  // are compared as protobuf matches them: "micro_batch" and "microBatch" are the same field.
  std::vector<std::set<std::string>> seen_keys;
  std::vector<std::string> key_path;  // the key of the value being parsed, per object level
  std::string duplicate;              // dotted path of the first duplicate key
  auto same_field = [](std::string k) {
    std::string out;
    for (char ch : k) {
      if (ch != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return out;
  };
  auto on_event = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) {
      seen_keys.emplace_back();
      key_path.emplace_back();
    } else if (event == E::object_end && !seen_keys.empty()) {
      seen_keys.pop_back();
      key_path.pop_back();
    } else if (event == E::key && !seen_keys.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!seen_keys.back().insert(same_field(key)).second && duplicate.empty()) {
        for (size_t i = 0; i + 1 < key_path.size(); ++i) duplicate += key_path[i] + ".";
        duplicate += key;
      }
      key_path.back() = key;
    }
    return true;
  };
  try {
    doc = nlohmann::json::parse(text.begin(), text.end(), on_event);
  } catch (const nlohmann::json::parse_error& e) {
    // The part of nlohmann's message after its own position (JsonReason).
    size_t byte = e.byte > 0 ? e.byte - 1 : 0;
    return Status::InvalidArgument(At(name_for_errors, LineColumn(text, byte)) + ": " +
                                   JsonReason(e.what()));
  } catch (const nlohmann::json::exception& e) {
    // Anything else the JSON reader throws (e.g. out_of_range.406 for a number such as 1e400
    // that overflows a double) is still the user's input: report it, never let it escape.
    return Status::InvalidArgument(name_for_errors + ": " + JsonReason(e.what()));
  }
  SourceMap local;
  local.is_json = true;
  local.json = std::string(text);
  if (!duplicate.empty()) {
    std::string prefix = name_for_errors;
    if (auto lc = local.Find(root, duplicate)) prefix = At(name_for_errors, *lc);
    return Status::InvalidArgument(prefix + ": " + duplicate +
                                   " is given twice (each field once per object)");
  }
  if (auto err = CheckJson(doc, root, "")) {
    std::string prefix = name_for_errors;
    if (auto lc = local.Find(root, err->first)) prefix = At(name_for_errors, *lc);
    return Status::InvalidArgument(prefix + ": " + err->second);
  }
  gp::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto st = gp::util::JsonStringToMessage(std::string(text), message, options);
  if (!st.ok()) {
    // Protobuf's converter says "(model.layers): invalid value "many" for type TYPE_INT32":
    // locate the path and say what the field takes.
    std::string msg(st.message());
    std::string prefix = name_for_errors;
    if (msg.size() > 2 && msg[0] == '(' && msg.find("): ") != std::string::npos) {
      size_t close = msg.find("): ");
      std::string path = msg.substr(1, close - 1);
      if (auto lc = local.Find(root, path)) prefix = At(name_for_errors, *lc);
      msg = path + ": " + msg.substr(close + 3);
      static const std::pair<const char*, const char*> kTypes[] = {
          {"for type TYPE_INT32", "(expected an integer)"},
          {"for type TYPE_INT64", "(expected an integer)"},
          {"for type TYPE_UINT64", "(expected a non-negative integer)"},
          {"for type TYPE_DOUBLE", "(expected a number)"},
          {"for type TYPE_BOOL", "(expected true or false)"},
          {"for type TYPE_STRING", "(expected a string)"},
      };
      for (const auto& [from, to] : kTypes) {
        size_t at = msg.find(from);
        if (at != std::string::npos) msg.replace(at, std::strlen(from), to);
      }
    }
    return Status::InvalidArgument(prefix + ": " + msg);
  }
  if (map != nullptr) *map = std::move(local);
  return Status::Ok();
}

}  // namespace detail

namespace {

// A UTF-8 byte-order mark (EF BB BF) at the start, which some Windows editors write, is skipped:
// it says nothing but "this is UTF-8". Columns on the first line count from after it.
std::string_view SkipBom(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return text;
}

Result<pb::Scenario> ParseAndCheck(std::string_view text, const std::string& name,
                                   const std::vector<std::string>& set_overrides,
                                   const std::filesystem::path& base_dir, bool json,
                                   bool check_files) {
  text = SkipBom(text);
  pb::Scenario scenario;
  detail::SourceMap map;
  TRAINSIM_RETURN_IF_ERROR(detail::ParseMessage(text, name, json, &scenario, &map));
  std::vector<std::string> overridden;
  for (const std::string& assignment : set_overrides) {
    TRAINSIM_RETURN_IF_ERROR(ApplyOverride(&scenario, assignment));
    overridden.push_back(detail::OverridePath(assignment));
  }
  // Before defaults, so no later message echoes bytes that are not text.
  if (auto err = detail::CheckUtf8(scenario, "")) {
    return detail::ToStatus(*err, name, &map, overridden);
  }
  const std::string& calibration = scenario.cluster().calibration();
  if (!base_dir.empty() && !calibration.empty() &&
      std::filesystem::path(calibration).is_relative()) {
    scenario.mutable_cluster()->set_calibration(
        (base_dir / calibration).lexically_normal().string());
  }
  if (auto err = detail::FillDefaultsDetailed(&scenario)) {
    return detail::ToStatus(*err, name, &map, overridden);
  }
  if (auto err = detail::ValidateDetailed(scenario)) {
    return detail::ToStatus(*err, name, &map, overridden);
  }
  // A file named by the scenario must exist, so `check` does not pass what `run` would reject.
  std::error_code ec;
  if (check_files && !scenario.cluster().calibration().empty() &&
      !std::filesystem::is_regular_file(scenario.cluster().calibration(), ec)) {
    return detail::ToStatus(
        detail::FieldError{"cluster.calibration",
                           "calibration file \"" + scenario.cluster().calibration() +
                               "\" does not exist (relative paths are taken from the scenario "
                               "file's directory; `trainsim calibrate` writes one)"},
        name, &map, overridden);
  }
  return scenario;
}

}  // namespace

Result<pb::Scenario> ParseScenarioSyntax(std::string_view text,
                                         const std::string& name_for_errors) {
  text = SkipBom(text);
  pb::Scenario scenario;
  TRAINSIM_RETURN_IF_ERROR(
      detail::ParseMessage(text, name_for_errors, detail::LooksLikeJson(text), &scenario));
  return scenario;
}

Result<pb::Scenario> ParseScenarioText(std::string_view text, const std::string& name_for_errors,
                                       const std::vector<std::string>& set_overrides) {
  return ParseAndCheck(text, name_for_errors, set_overrides, {},
                       detail::LooksLikeJson(SkipBom(text)),
                       /*check_files=*/false);
}

// Scenario files are a few KiB; 16 MiB leaves room for generated ones with thousands of faults.
constexpr size_t kMaxScenarioBytes = size_t{16} << 20;

Result<pb::Scenario> LoadScenario(const std::string& path,
                                  const std::vector<std::string>& set_overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument(path + ": is a directory, not a scenario file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open the scenario file (does it exist?)");
  const BoundedRead read = ReadAtMost(in, kMaxScenarioBytes);
  if (read.failed) return Status::InvalidArgument(path + ": read error");
  const std::string& body = read.body;
  if (read.too_large) {
    return Status::InvalidArgument(path + ": larger than " +
                                   std::to_string(kMaxScenarioBytes >> 20) +
                                   " MiB; a scenario is a few KiB of text");
  }
  bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  return ParseAndCheck(body, path, set_overrides, std::filesystem::path(path).parent_path(),
                       json || detail::LooksLikeJson(SkipBom(body)), /*check_files=*/true);
}

}  // namespace trainsim::scenarios
