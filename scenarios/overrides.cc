// `--set dotted.path=value`: assigning any scalar field of a scenario by path, through
// protobuf reflection, with errors that name the path and what would be valid.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "scenarios/internal.h"
#include "scenarios/scenario.h"

namespace trainsim::scenarios {

namespace gp = google::protobuf;

namespace {

std::string TypeName(const gp::FieldDescriptor& f) {
  switch (f.cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_INT32:
    case gp::FieldDescriptor::CPPTYPE_INT64:
      return "an integer";
    case gp::FieldDescriptor::CPPTYPE_UINT32:
    case gp::FieldDescriptor::CPPTYPE_UINT64:
      return "a non-negative integer";
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
    case gp::FieldDescriptor::CPPTYPE_FLOAT:
      return "a number";
    case gp::FieldDescriptor::CPPTYPE_BOOL:
      return "true or false";
    case gp::FieldDescriptor::CPPTYPE_ENUM:
      return "one of " + detail::JoinNames(detail::EnumNames(*f.enum_type()));
    case gp::FieldDescriptor::CPPTYPE_STRING:
      return "a string";
    case gp::FieldDescriptor::CPPTYPE_MESSAGE:
      return "a section";
  }
  return "a value";
}

// "\"text\"", built by appending: GCC 12 gives a false -Wrestrict for "literal" +
// std::string&& (GCC bug 105329).
std::string Q(std::string_view text) {
  std::string out = "\"";
  out.append(text);
  out += '"';
  return out;
}

bool ParseInt(std::string_view text, int64_t lo, int64_t hi, int64_t* out) {
  std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool ParseUint(std::string_view text, uint64_t* out) {
  std::string s(text);
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

Status SetScalar(gp::Message* msg, const gp::FieldDescriptor& f, std::string_view value,
                 const std::string& path, const std::string& where) {
  const gp::Reflection* r = msg->GetReflection();
  auto bad = [&](const std::string& why) { return Status::InvalidArgument(where + ": " + why); };
  switch (f.cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_INT32: {
      int64_t v;
      if (!ParseInt(value, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
                    &v)) {
        return bad(Q(value) + " is not a 32-bit integer; " + path + " takes " + TypeName(f));
      }
      r->SetInt32(msg, &f, static_cast<int32_t>(v));
      return Status::Ok();
    }
    case gp::FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!ParseInt(value, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                    &v)) {
        return bad(Q(value) + " is not a 64-bit integer; " + path + " takes " + TypeName(f));
      }
      r->SetInt64(msg, &f, v);
      return Status::Ok();
    }
    case gp::FieldDescriptor::CPPTYPE_UINT32:
    case gp::FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v;
      if (!ParseUint(value, &v) || (f.cpp_type() == gp::FieldDescriptor::CPPTYPE_UINT32 &&
                                    v > std::numeric_limits<uint32_t>::max())) {
        return bad(Q(value) + " is not a non-negative integer; " + path + " takes " + TypeName(f));
      }
      if (f.cpp_type() == gp::FieldDescriptor::CPPTYPE_UINT32) {
        r->SetUInt32(msg, &f, static_cast<uint32_t>(v));
      } else {
        r->SetUInt64(msg, &f, v);
      }
      return Status::Ok();
    }
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
    case gp::FieldDescriptor::CPPTYPE_FLOAT: {
      std::string s(value);
      errno = 0;
      char* end = nullptr;
      double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);
      const bool range_error = errno == ERANGE;
      if (s.empty() || std::isspace(static_cast<unsigned char>(s.front())) ||
          end != s.c_str() + s.size()) {
        return bad(Q(s) + " is not a number; " + path + " takes a number");
      }
      // strtod reports ERANGE for overflow (±HUGE_VAL) and for underflow; a denormal such as
      // 1e-310 is a finite number, so only the overflow is refused (the field's own range is
      // checked by validation).
      if (range_error && std::fabs(v) > 1) {
        return bad(Q(s) + " is beyond the range of a number (about ±1.8e308); " + path +
                   " takes a number");
      }
      if (!std::isfinite(v)) {
        return bad(Q(s) + " is not a finite number; " + path + " takes a number");
      }
      if (f.cpp_type() == gp::FieldDescriptor::CPPTYPE_DOUBLE) {
        r->SetDouble(msg, &f, v);
      } else {
        r->SetFloat(msg, &f, static_cast<float>(v));
      }
      return Status::Ok();
    }
    case gp::FieldDescriptor::CPPTYPE_BOOL: {
      if (value == "true" || value == "1") {
        r->SetBool(msg, &f, true);
      } else if (value == "false" || value == "0") {
        r->SetBool(msg, &f, false);
      } else {
        return bad(Q(value) + " is not a boolean; " + path + " takes true or false");
      }
      return Status::Ok();
    }
    case gp::FieldDescriptor::CPPTYPE_ENUM: {
      std::string upper(value);
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      const gp::EnumValueDescriptor* v = f.enum_type()->FindValueByName(upper);
      if (v == nullptr) {
        std::vector<std::string> names = detail::EnumNames(*f.enum_type());
        std::string msg = "unknown value " + Q(value) + " for " + path;
        std::string closest = detail::ClosestName(value, names);
        if (!closest.empty()) msg += "; did you mean " + closest + "?";
        return bad(msg + " (valid: " + detail::JoinNames(names) + ")");
      }
      r->SetEnum(msg, &f, v);
      return Status::Ok();
    }
    case gp::FieldDescriptor::CPPTYPE_STRING:
      r->SetString(msg, &f, std::string(value));
      return Status::Ok();
    case gp::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return bad("cannot assign a value to " + f.name());
}

}  // namespace

Status ApplyOverride(pb::Scenario* scenario, std::string_view assignment) {
  const std::string where = "--set " + std::string(assignment);
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status::InvalidArgument(where +
                                   ": expected PATH=VALUE, e.g. --set parallelism.tp=4 or "
                                   "--set parallelism.recompute=FULL");
  }
  std::string_view path = assignment.substr(0, eq);
  std::string_view value = assignment.substr(eq + 1);

  gp::Message* msg = scenario;
  std::string walked;  // the path so far, for messages
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string segment(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    bool last = dot == std::string_view::npos;
    const gp::Descriptor* d = msg->GetDescriptor();
    const std::string section = walked.empty() ? "the scenario" : walked;
    const gp::FieldDescriptor* f = d->FindFieldByName(segment);
    if (f == nullptr) {
      std::vector<std::string> names = detail::FieldNames(*d);
      std::string m = "unknown field " + Q(segment) + " in " + section;
      std::string closest = detail::ClosestName(segment, names);
      if (!closest.empty()) m += "; did you mean " + Q(closest) + "?";
      return Status::InvalidArgument(where + ": " + m + " (valid: " + detail::JoinNames(names) +
                                     ")");
    }
    walked += (walked.empty() ? "" : ".") + segment;
    const gp::Reflection* r = msg->GetReflection();
    if (f->is_repeated() && last && f->type() == gp::FieldDescriptor::TYPE_STRING) {
      // A list of names, comma-separated, replaces the list:
      // --set parallelism.recompute_modules=moe,layernorm (empty: no entries).
      r->ClearField(msg, f);
      size_t from = 0;
      while (from < value.size()) {
        size_t comma = value.find(',', from);
        if (comma == std::string_view::npos) comma = value.size();
        r->AddString(msg, f, std::string(value.substr(from, comma - from)));
        from = comma + 1;
      }
      return Status::Ok();
    }
    if (f->is_repeated()) {
      // The next segment is an index: faults.0.at; index == size appends a new entry.
      if (f->type() == gp::FieldDescriptor::TYPE_STRING) {
        // "recompute_modules.0=mlp": a list of names is set whole, comma-separated.
        return Status::InvalidArgument(where + ": " + walked + " is a list of names, set whole: " +
                                       walked + "=NAME,NAME,... (empty for none)");
      }
      if (last || f->message_type() == nullptr) {
        return Status::InvalidArgument(where + ": " + walked +
                                       " is a list; name an entry and a field, e.g. " + walked +
                                       ".0.<field>");
      }
      size_t dot2 = path.find('.', dot + 1);
      std::string index_text(
          path.substr(dot + 1, dot2 == std::string_view::npos ? dot2 : dot2 - dot - 1));
      int64_t index;
      int size = r->FieldSize(*msg, f);
      if (!ParseInt(index_text, 0, size, &index)) {
        return Status::InvalidArgument(where + ": " + Q(index_text) + " is not an index of " +
                                       walked + " (it has " + std::to_string(size) +
                                       " entries; use 0.." + std::to_string(size) + ", where " +
                                       std::to_string(size) + " adds one)");
      }
      if (dot2 == std::string_view::npos) {
        return Status::InvalidArgument(
            where + ": name a field of " + walked + "." + index_text +
            " (valid: " + detail::JoinNames(detail::FieldNames(*f->message_type())) + ")");
      }
      msg = index == size ? r->AddMessage(msg, f) : r->MutableRepeatedMessage(msg, f, index);
      walked += "." + index_text;
      start = dot2 + 1;
      continue;
    }
    if (f->message_type() != nullptr) {
      if (last) {
        return Status::InvalidArgument(
            where + ": " + walked + " is a section; set one of its fields (" +
            detail::JoinNames(detail::FieldNames(*f->message_type())) + ")");
      }
      msg = r->MutableMessage(msg, f);
      start = dot + 1;
      continue;
    }
    if (!last) {
      return Status::InvalidArgument(where + ": " + walked + " is " + TypeName(*f) +
                                     " field, not a section");
    }
    return SetScalar(msg, *f, value, walked, where);
  }
}

}  // namespace trainsim::scenarios
