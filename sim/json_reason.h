// JsonReason: nlohmann::json's exception text without its prefix, for messages that give the
// position themselves. "[json.exception.parse_error.101] parse error at line 3, column 5:
// syntax error while parsing value - ..." becomes "syntax error while parsing value - ...";
// other exceptions ("[json.exception.out_of_range.406] number overflow ...") lose the bracket.
#ifndef TRAINSIM_SIM_JSON_REASON_H_
#define TRAINSIM_SIM_JSON_REASON_H_

#include <string>

namespace trainsim {

inline std::string JsonReason(const std::string& what) {
  const size_t parse = what.find("parse error");
  if (parse != std::string::npos) {
    const size_t colon = what.find(": ", parse);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  const size_t bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

}  // namespace trainsim

#endif  // TRAINSIM_SIM_JSON_REASON_H_
