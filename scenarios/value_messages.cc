// ExplainBadValue (scenarios/internal.h): protobuf's text-format parser says what token it
// expected, not which field it was reading or what that field takes.
#include <google/protobuf/descriptor.h>

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/internal.h"

namespace trainsim::scenarios::detail {

namespace gp = google::protobuf;

namespace {

bool IdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Byte offset of 0-based (line, column), or npos.
size_t OffsetOf(std::string_view text, int line, int column) {
  size_t at = 0;
  for (int l = 0; l < line; ++l) {
    at = text.find('\n', at);
    if (at == std::string_view::npos) return at;
    ++at;
  }
  at += size_t(std::max(column, 0));
  return at <= text.size() ? at : std::string_view::npos;
}

// The sections open at `end` ("cluster", "topology") and the field whose value starts at `end`
// (the identifier before the last ':'), scanning past comments and quoted strings. A section
// opened after "name: [" (a repeated message) is named by that field.
bool FieldAt(std::string_view text, size_t end, std::vector<std::string>* sections,
             std::string* field) {
  std::string last;          // the identifier just before, if nothing else came since
  bool after_colon = false;  // only spaces and comments since the last ':'
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
      sections->push_back(last.empty() ? *field : last);
    } else if ((c == '}' || c == '>') && !sections->empty()) {
      sections->pop_back();
    }
    if (c != ':' && !std::isspace(static_cast<unsigned char>(c))) last.clear();
    ++i;
  }
  // The value must start right after "field:" (else the mistake is elsewhere: a missing '}').
  return after_colon && !field->empty();
}

std::string Takes(const gp::FieldDescriptor& f) {
  using T = gp::FieldDescriptor;
  switch (f.cpp_type()) {
    case T::CPPTYPE_INT32:
    case T::CPPTYPE_INT64:
      return "an integer";
    case T::CPPTYPE_UINT32:
    case T::CPPTYPE_UINT64:
      return "a non-negative integer";
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

std::string ExplainBadValue(std::string_view text, int line, int column,
                            const std::string& protobuf_message, const gp::Descriptor& root) {
  static const char* const kAbout[] = {"Expected integer",       "Expected double",
                                       "Expected identifier",    "Expected string",
                                       "Integer out of range",   "Invalid value for boolean",
                                       "Couldn't parse integer", "Value out of range"};
  bool about_value = false;
  for (const char* a : kAbout) about_value |= protobuf_message.rfind(a, 0) == 0;
  if (!about_value) return "";
  const size_t at = OffsetOf(text, line, column);
  if (at == std::string_view::npos) return "";
  std::vector<std::string> sections;
  std::string field;
  if (!FieldAt(text, at, &sections, &field)) return "";
  const gp::Descriptor* d = &root;
  std::string path;
  for (const std::string& s : sections) {
    const gp::FieldDescriptor* f = d->FindFieldByName(s);
    if (f == nullptr || f->message_type() == nullptr) return "";
    d = f->message_type();
    path += s + ".";
  }
  const gp::FieldDescriptor* f = d->FindFieldByName(field);
  if (f == nullptr) return "";
  // The value as written: from the reported token to the next space, brace or comment.
  size_t end = at;
  if (end < text.size() && (text[end] == '"' || text[end] == '\'')) {
    end = text.find(text[at], at + 1);
    end = end == std::string_view::npos ? text.size() : end + 1;
  } else {
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])) &&
           text[end] != '}' && text[end] != '#' && text[end] != ';' && text[end] != ',') {
      ++end;
    }
  }
  std::string value(text.substr(at, end - at));
  if (value.size() > 40)
    value = value.substr(0, 20) + "...(" + std::to_string(value.size()) + " characters)";
  return path + field + ": " + (value.empty() ? std::string("no value") : value) +
         " is not valid here: " + field + " takes " + Takes(*f);
}

}  // namespace trainsim::scenarios::detail
