// ExplainBadValue (scenarios/internal.h): protobuf's text-format parser says what token it
// expected, not which field it was reading or what that field takes.
#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scenarios/internal.h"

namespace trainsim::scenarios::detail {

namespace gp = google::protobuf;

namespace {

bool IdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Byte offset of protobuf's 0-based (line, column), or npos. Its tokenizer advances a tab to
// the next multiple of 8 columns (io::Tokenizer), so columns are counted as it does, within
// the line.
size_t OffsetOf(std::string_view text, int line, int column) {
  size_t at = 0;
  for (int l = 0; l < line; ++l) {
    at = text.find('\n', at);
    if (at == std::string_view::npos) return at;
    ++at;
  }
  for (int col = 0; col < column; ++at) {
    if (at >= text.size() || text[at] == '\n') return std::string_view::npos;
    col = text[at] == '\t' ? col + 8 - col % 8 : col + 1;
  }
  return at <= text.size() ? at : std::string_view::npos;
}

// The sections open at `end` ("cluster", "topology"), each with its index among the sections
// of that name in its parent (0 for the first; an entry of a repeated section's list counts as
// one more), and the field whose value starts at `end` (the identifier before the last ':'),
// scanning past comments and quoted strings. An element of a list of sections,
// "name: [ {...}, {...} ]", is named by the list's field.
bool FieldAt(std::string_view text, size_t end, std::vector<std::pair<std::string, int>>* sections,
             std::string* field) {
  std::string last;                // the identifier just before, if nothing else came since
  bool after_colon = false;        // only spaces and comments since the last ':'
  std::vector<std::string> lists;  // the fields of the lists "name: [" open here
  // Per open level (the root first), how many sections of each name it has opened so far.
  std::vector<std::map<std::string, int>> opened(1);
  for (size_t i = 0; i < end;) {
    const char c = text[i];
    if (IdentChar(c)) {
      const size_t start = i;
      while (i < end && IdentChar(text[i])) ++i;
      last = std::string(text.substr(start, i - start));
      after_colon = false;
      continue;
    }
    if (c == '#') {
      while (i < end && text[i] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      for (++i; i < end && text[i] != c; ++i) {
        if (text[i] == '\\') ++i;
      }
      ++i;
      last.clear();
      after_colon = false;
      continue;
    }
    if (c == ':') {
      *field = last;
      after_colon = true;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      after_colon = false;
    }
    if (c == '{' || c == '<') {
      // "name {", or an element of the list "name: [ {...}, {...} ]".
      std::string name = !last.empty() ? last : !lists.empty() ? lists.back() : *field;
      const int index = opened.back()[name]++;
      sections->emplace_back(std::move(name), index);
      opened.emplace_back();
    } else if ((c == '}' || c == '>') && !sections->empty()) {
      sections->pop_back();
      opened.pop_back();
    } else if (c == '[') {
      lists.push_back(*field);
    } else if (c == ']' && !lists.empty()) {
      lists.pop_back();
    }
    if (c != ':' && !std::isspace(static_cast<unsigned char>(c))) last.clear();
    ++i;
  }
  // The value must start right after "field:" (else the mistake is elsewhere: a missing '}').
  return after_colon && !field->empty();
}

// What `f` takes; with `range`, an integer's range (the value was an integer out of it).
std::string Takes(const gp::FieldDescriptor& f, bool range) {
  using T = gp::FieldDescriptor;
  switch (f.cpp_type()) {
    case T::CPPTYPE_INT32:
      return range ? "an integer from -2147483648 to 2147483647" : "an integer";
    case T::CPPTYPE_INT64:
      return range ? "an integer from -9223372036854775808 to 9223372036854775807" : "an integer";
    case T::CPPTYPE_UINT32:
      return range ? "an integer from 0 to 4294967295" : "a non-negative integer";
    case T::CPPTYPE_UINT64:
      return range ? "an integer from 0 to 18446744073709551615" : "a non-negative integer";
    case T::CPPTYPE_DOUBLE:
    case T::CPPTYPE_FLOAT:
      return "a number";
    case T::CPPTYPE_BOOL:
      return "true or false";
    case T::CPPTYPE_ENUM:
      return "one of " + JoinNames(EnumNames(*f.enum_type())) + " (unquoted)";
    case T::CPPTYPE_STRING:
      return "a quoted string";
    case T::CPPTYPE_MESSAGE:
      return "a { ... } section";
  }
  return "";
}

}  // namespace

// The value of protobuf's "Unknown enumeration value of "X" for field ..." message, or "".
std::string UnknownEnumValue(const std::string& msg) {
  static const std::string kEnum = "Unknown enumeration value of \"";
  if (msg.rfind(kEnum, 0) != 0) return "";
  const size_t end = msg.find('"', kEnum.size());
  return end == std::string::npos ? "" : msg.substr(kEnum.size(), end - kEnum.size());
}

// The value of protobuf's "Invalid value for boolean field "F". Value: "X"." message, or "".
std::string BadBoolValue(const std::string& msg) {
  static const std::string kBool = "Invalid value for boolean field \"";
  static const std::string kValue = "Value: \"";
  if (msg.rfind(kBool, 0) != 0) return "";
  const size_t start = msg.find(kValue);
  if (start == std::string::npos) return "";
  const size_t end = msg.find('"', start + kValue.size());
  return end == std::string::npos ? ""
                                  : msg.substr(start + kValue.size(), end - start - kValue.size());
}

int ByteColumn(std::string_view text, int line, int column) {
  const size_t at = OffsetOf(text, line, column);
  if (at == std::string_view::npos) return column;
  const size_t start = text.rfind('\n', at == 0 ? 0 : at - 1);
  return int(at - (start == std::string_view::npos || at == 0 ? 0 : start + 1));
}

const gp::FieldDescriptor* FieldAtOffset(std::string_view text, size_t at,
                                         const gp::Descriptor& root, std::string* path) {
  if (at == std::string_view::npos || at > text.size()) return nullptr;
  std::vector<std::pair<std::string, int>> sections;
  std::string field;
  if (!FieldAt(text, at, &sections, &field)) return nullptr;
  const gp::Descriptor* d = &root;
  path->clear();
  for (const auto& [name, index] : sections) {
    const gp::FieldDescriptor* f = d->FindFieldByName(name);
    if (f == nullptr || f->message_type() == nullptr) return nullptr;
    d = f->message_type();
    // Indexed as the checks after parsing name them ("faults[2].at").
    *path += f->is_repeated() ? name + "[" + std::to_string(index) + "]." : name + ".";
  }
  const gp::FieldDescriptor* f = d->FindFieldByName(field);
  if (f != nullptr) *path += field;
  return f;
}

std::string ExplainBadValue(std::string_view text, int line, int column,
                            const std::string& protobuf_message, const gp::Descriptor& root) {
  static const char* const kAbout[] = {
      "Expected integer",     "Expected double",        "Expected identifier", "Expected string",
      "Integer out of range", "Couldn't parse integer", "Value out of range"};
  bool about_value = false;
  for (const char* a : kAbout) about_value |= protobuf_message.rfind(a, 0) == 0;
  if (!about_value) return "";
  std::string path;
  const size_t at = OffsetOf(text, line, column);
  const gp::FieldDescriptor* f = FieldAtOffset(text, at, root, &path);
  if (f == nullptr) return "";
  const std::string& field = f->name();
  // The value as written: from the reported token to the next space, brace or comment; a
  // quoted one to its closing quote (past escaped ones).
  size_t end = at;
  if (end < text.size() && (text[end] == '"' || text[end] == '\'')) {
    for (++end; end < text.size() && text[end] != text[at]; ++end) {
      if (text[end] == '\\') ++end;
    }
    end = std::min(end + 1, text.size());
  } else {
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])) &&
           text[end] != '}' && text[end] != '#' && text[end] != ';' && text[end] != ',') {
      ++end;
    }
  }
  using T = gp::FieldDescriptor;
  const bool integer = f->cpp_type() == T::CPPTYPE_INT32 || f->cpp_type() == T::CPPTYPE_INT64 ||
                       f->cpp_type() == T::CPPTYPE_UINT32 || f->cpp_type() == T::CPPTYPE_UINT64;
  const bool range = integer && (protobuf_message.rfind("Integer out of range", 0) == 0 ||
                                 protobuf_message.rfind("Value out of range", 0) == 0);
  std::string value(text.substr(at, end - at));
  if (value.size() > 40)
    value = value.substr(0, 20) + "...(" + std::to_string(value.size()) + " characters)";
  return path + ": " + (value.empty() ? std::string("no value") : value) +
         (range ? " is out of range: " : " is not valid here: ") + field + " takes " +
         Takes(*f, range);
}

}  // namespace trainsim::scenarios::detail
